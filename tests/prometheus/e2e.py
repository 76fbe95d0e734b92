#!/usr/bin/env python3
"""The probe's metrics end to end through the real components, on loopback, started here (not as
system services): Debian's node_exporter serves the probe's file through its textfile collector
(with a file of dcgm-exporter-like series beside it), Debian's Prometheus scrapes it, and the
queries docs/prometheus.md documents are answered by the server's HTTP API; then `promtool test
rules` checks the documented alert rules. Exit 0 when all hold, 77 (skipped) when node_exporter,
Prometheus or promtool is not installed.

  usage: e2e.py PROBE FAKE_DRIVER FAKE_ENGINE SOURCE_DIR FAKE_TORCH (the image's PyTorch: a fake stack)
"""

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

probe, fake_driver, fake_engine, source, fake_torch = sys.argv[1:6]
source = pathlib.Path(source)
tools = {name: shutil.which(name) for name in ("prometheus-node-exporter", "prometheus", "promtool")}
if not tools["prometheus-node-exporter"]:
    tools["prometheus-node-exporter"] = shutil.which("node_exporter")
missing = [name for name, path in tools.items() if not path]
if missing:
    print(f"skipped: {', '.join(missing)} not installed (apt-get install prometheus "
          "prometheus-node-exporter)")
    sys.exit(77)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, promql):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_for(what, check, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"FAIL: {what} within {seconds} s")


work = pathlib.Path(tempfile.mkdtemp(prefix="pp-prom-e2e-"))
textfile = work / "textfile"
textfile.mkdir()
procs = []
try:
    # The probe on two fake GPUs (an H200: bf16 native; a T4: emulated), written as the DaemonSet
    # writes it; its JSON tells the UUIDs.
    env = dict(os.environ, PRECISION_PROBE_LIBCUDA=fake_driver, PRECISION_PROBE_LIBNVML=fake_driver,
               PRECISION_PROBE_ENGINE=fake_engine, PRECISION_PROBE_TORCH=fake_torch,
               FAKE_NVIDIA_GPUS="NVIDIA H200:9.0:132:141;Tesla T4:7.5:40:15")
    run = subprocess.run([probe, "--quiet", "--prom", str(textfile / "precision_probe.prom"),
                          "--json", str(work / "r.json")], env=env, timeout=120)
    assert run.returncode == 0, f"the probe exited {run.returncode}"
    report = json.loads((work / "r.json").read_text())
    gpus = {d["gpu"]["uuid"]: d for d in report["devices"] if d["kind"] == "cuda"}
    assert len(gpus) == 2, gpus.keys()
    h200 = next(u for u, d in gpus.items() if d["name"] == "NVIDIA H200")
    t4 = next(u for u, d in gpus.items() if d["name"] == "Tesla T4")
    # What dcgm-exporter would serve for the same GPUs: another index and device, same UUID.
    dcgm = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for index, (uuid, temp) in enumerate([(t4, 71), (h200, 55)]):
        dcgm.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{index + 4}",UUID="{uuid}",device="nvidia{index + 4}",'
                    f'modelName="{gpus[uuid]["name"]}",Hostname="node1"}} {temp}')
    (textfile / "dcgm.prom").write_text("\n".join(dcgm) + "\n")

    exporter_port, prometheus_port = free_port(), free_port()
    procs.append(subprocess.Popen(
        [tools["prometheus-node-exporter"], f"--web.listen-address=127.0.0.1:{exporter_port}",
         "--collector.disable-defaults", "--collector.textfile",
         f"--collector.textfile.directory={textfile}"],
        stdout=subprocess.DEVNULL, stderr=open(work / "node_exporter.log", "w")))
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs:\n  - job_name: node\n    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n")
    procs.append(subprocess.Popen(
        [tools["prometheus"], f"--config.file={work / 'prometheus.yml'}",
         f"--storage.tsdb.path={work / 'data'}", f"--web.listen-address=127.0.0.1:{prometheus_port}"],
        stdout=subprocess.DEVNULL, stderr=open(work / "prometheus.log", "w")))
    wait_for("Prometheus scrapes node_exporter",
             lambda: [r for r in query(prometheus_port, 'up{job="node"}') if r["value"][1] == "1"])
    wait_for("the probe's series arrive",
             lambda: query(prometheus_port, "precision_probe_exit_code"))

    errors = query(prometheus_port, "node_textfile_scrape_error")
    assert errors and errors[0]["value"][1] == "0", f"node_exporter could not read a file: {errors}"
    verdicts = {r["metric"]["UUID"]: r["value"][1]
                for r in query(prometheus_port, 'precision_probe_native{kind="cuda",mode="bf16"}')}
    assert verdicts == {h200: "1", t4: "0"}, verdicts

    # Every query docs/prometheus.md documents, answered as it says.
    doc = (source / "docs" / "prometheus.md").read_text()
    documented = re.findall(r"```promql\n(.*?)```", doc, re.S)
    assert len(documented) == 2, f"docs/prometheus.md has {len(documented)} promql blocks, not 2"
    joined = {r["metric"]["UUID"]: float(r["value"][1]) for r in query(prometheus_port, documented[0])}
    assert joined == {h200: 55.0, t4: 0.0}, f"the join gave {joined}"
    hot = {r["metric"]["UUID"]: float(r["value"][1]) for r in query(prometheus_port, documented[1])}
    assert hot == {t4: 71.0}, f"the second query gave {hot}"

    rules = subprocess.run([tools["promtool"], "test", "rules",
                            str(source / "tests" / "prometheus" / "alerts_test.yml")],
                           capture_output=True, text=True)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    print(f"ok: node_exporter served the probe's file without a scrape error; Prometheus answered "
          f"the verdicts and the {len(documented)} documented queries; the alert rules pass")
except AssertionError as e:
    for log in ("node_exporter.log", "prometheus.log"):
        if (work / log).exists():
            print(f"--- {log}\n" + (work / log).read_text()[-2000:])
    sys.exit(f"FAIL: {e}")
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(work, ignore_errors=True)
