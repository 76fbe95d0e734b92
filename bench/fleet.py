#!/usr/bin/env python3
"""A fleet's reports, made up, and `precision-probe summarize` timed over them.

Makes NODES JSON reports of eight GPUs each, with bench and soak sections, from one real report:
the probe run against the fake driver and engine of the test suite (eight H200s, --bench --soak 1),
or --template FILE (a real report; its first GPU is copied where it has fewer than eight). Each
node gets its hostname, report id, start time (within the last hour), GPU UUIDs and figures
(+-3 %); a few nodes get what a summary has to find: a GPU 20 % slow in bf16
(0.5 % of nodes), bf16 failed on one GPU (0.1 %), a report two days old (0.1 %), a file that is not
JSON (0.05 %), a second older report of the same host (0.1 %). Then it runs
`precision-probe summarize --format json --max-age 24h DIR` ROUNDS times (the median is the
figure) and checks that the summary found exactly what was planted. Every file is read once before
each run, so that each run finds the page cache warm (the CI machine's kernel reclaims page cache
that is not used for a while, and the run after a pause would read part of the fleet from disk).
Target (issue 21): 10,000 nodes in under 2 s on the CI machine (2 cores).

With --baseline (another build of the probe, an earlier commit's) the two run alternately, round
after round, and each is checked; each run's wall time, CPU time (user + system) and peak RSS are
measured, and the ratio of the two in each round (its median is the figure least disturbed by other
work on the machine, which the load averages printed say). --keep leaves the fleet (and what was
planted) in DIR; --reuse times it again.

  usage: bench/fleet.py [--probe build/bin/precision-probe] [--baseline PROBE] [--nodes 10000]
                        [--rounds 5] [--dir /tmp/pp-fleet] [--template REPORT.json] [--compact]
                        [--schema 2]
                        [--keep | --reuse]
"""

import argparse
import copy
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def template_report(probe, build):
    driver = os.path.join(build, "tests", "libfake_nvidia_driver.so")
    engine = os.path.join(build, "tests", "fake-engine", "fake_precision_probe_engine")
    for path in (driver, engine):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: build the tests first (./dev build), or give --template")
    # The fake engine runs on the tests' fake CUDA stack, never on what this machine has installed.
    stack = os.path.join(build, "tests", "stacks", "cuda")
    env = dict(os.environ, PRECISION_PROBE_LIBCUDA=driver, PRECISION_PROBE_LIBNVML=driver,
               PRECISION_PROBE_ENGINE=engine, PRECISION_PROBE_TORCH=stack,
               FAKE_NVIDIA_GPUS=";".join(["NVIDIA H200:9.0:132:141"] * 8))
    out = subprocess.run([probe, "--bench", "--soak", "1", "--format", "json"], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"the template run exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def stamp(when):
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def jitter(value, rng, spread=0.03):
    return value * (1.0 + rng.uniform(-spread, spread)) if isinstance(value, (int, float)) else value


def eight_gpus(report):
    """A template with fewer than eight GPUs (a real report of a one-GPU machine) gets copies of its
    first GPU, so that every node has eight as the target says."""
    gpus = [d for d in report["devices"] if d["kind"] == "cuda"]
    if not gpus:
        sys.exit("the template has no GPU")
    others = [d for d in report["devices"] if d["kind"] != "cuda"]
    while len(gpus) < 8:
        copy_ = copy.deepcopy(gpus[0])
        copy_["index"] = len(gpus)
        copy_["gpu"]["pci_bus_id"] = f"00000000:{0x18 + len(gpus):02X}:00.0"
        gpus.append(copy_)
    report["devices"] = gpus + others
    return report


def as_schema_2(report):
    """The report as schema 2 wrote it, for a baseline from before schema 3 (which refuses a newer
    schema): without run.gpus_selected, unavailable_selection and interrupted, and with a failure
    beside failed verdicts only (docs/report.md, schema_version)."""
    if report.get("schema_version") != 3:
        sys.exit(f"--schema 2 converts a schema 3 report; the template is {report.get('schema_version')}")
    report["schema_version"] = 2
    for key in ("gpus_selected", "unavailable_selection", "interrupted"):
        report["run"].pop(key, None)

    def drop_failures(node):
        if isinstance(node, dict):
            if node.get("status") in ("not_tested", "unsupported"):
                node.pop("failure", None)
            for value in node.values():
                drop_failures(value)
        elif isinstance(node, list):
            for value in node:
                drop_failures(value)

    drop_failures(report)
    return report


def make_node(template, i, now, rng, plant):
    r = copy.deepcopy(template)
    host = f"node-{i:05d}"
    r["host"]["hostname"] = host
    r["report_id"] = uuid.UUID(int=rng.getrandbits(128)).hex
    age = timedelta(days=2) if plant == "stale" else timedelta(seconds=rng.uniform(0, 3600))
    r["started_at"] = stamp(now - age)
    for d in r["devices"]:
        if d["kind"] != "cuda":
            continue
        d["gpu"]["uuid"] = "GPU-" + str(uuid.UUID(int=rng.getrandbits(128)))
        for b in d.get("bench", {}).values():
            for key in ("tflops", "sustained_tflops"):
                b[key] = jitter(b.get(key), rng)
        for s in d.get("soak", {}).get("modes", {}).values():
            s["tflops"] = jitter(s.get("tflops"), rng)
    gpu3 = [d for d in r["devices"] if d["kind"] == "cuda"][3]
    if plant == "slow":
        for key in ("tflops", "sustained_tflops"):
            if gpu3["bench"]["bf16"].get(key) is not None:
                gpu3["bench"]["bf16"][key] *= 0.8
    if plant == "failed":
        gpu3["precisions"]["bf16"]["status"] = "failed"
        gpu3["precisions"]["bf16"]["reason"] = "relative error 3.1e-01 exceeds 1.0e-02"
        gpu3["precisions"]["bf16"]["failure"] = "wrong_result"
        r["exit_code"] = 4
        r["exit_reason"] = "bf16 failed on GPU 3"
    return host, r


def make_fleet(template, nodes, directory, compact=False, seed=21):
    rng = random.Random(seed)
    now = datetime.now(timezone.utc)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    plants = {"slow": 0.005, "failed": 0.001, "stale": 0.001, "broken": 0.0005, "twice": 0.001}
    planted = {k: [] for k in plants}
    order = list(range(nodes))
    picks = {}
    for kind, share in plants.items():
        for i in rng.sample(order, max(1, int(nodes * share))):
            picks.setdefault(i, kind)
    for i in order:
        plant = picks.get(i)
        host, r = make_node(template, i, now, rng, plant)
        path = os.path.join(directory, f"{host}.json")
        text = json.dumps(r, separators=(",", ":")) if compact else json.dumps(r, indent=2)
        if plant == "broken":
            text = text[: len(text) // 2]
        with open(path, "w") as f:
            f.write(text)
        if plant == "twice":
            older = copy.deepcopy(r)
            older["started_at"] = stamp(now - timedelta(hours=3))
            with open(os.path.join(directory, f"{host}-old.json"), "w") as f:
                f.write(json.dumps(older, separators=(",", ":")) if compact else json.dumps(older, indent=2))
        if plant:
            planted[plant].append(host)
    return planted


def check(summary, planted, nodes):
    problems = []
    slow = sorted({o["node"] for o in summary["outliers"] if o["mode"] == "bf16" and o["source"] == "bench"})
    if slow != sorted(planted["slow"]):
        problems.append(f"outliers {len(slow)} found, {len(planted['slow'])} planted")
    failed = sorted({f["node"] for f in summary["failed"]})
    if failed != sorted(planted["failed"]):
        problems.append(f"failed {len(failed)} found, {len(planted['failed'])} planted")
    stale = sorted(s["node"] for s in summary["stale"])
    if stale != sorted(planted["stale"]):
        problems.append(f"stale {len(stale)} found, {len(planted['stale'])} planted")
    if len(summary["unreadable"]) != len(planted["broken"]):
        problems.append(f"unreadable {len(summary['unreadable'])}, {len(planted['broken'])} planted")
    if len(summary["superseded"]) != len(planted["twice"]):
        problems.append(f"superseded {len(summary['superseded'])}, {len(planted['twice'])} planted")
    expected_nodes = nodes - len(planted["broken"])
    if summary["nodes"] != expected_nodes or summary["gpus"] != 8 * expected_nodes:
        problems.append(f"{summary['nodes']} nodes and {summary['gpus']} GPUs, {expected_nodes} expected")
    if summary["exit_code"] != 3:
        problems.append(f"exit {summary['exit_code']}, 3 expected (stale and unreadable reports)")
    return problems


def warm(directory, files):
    """Reads every report once, so that the run that follows finds them in the page cache."""
    for name in files:
        with open(os.path.join(directory, name), "rb") as f:
            while f.read(1 << 20):
                pass


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def summarize(probe, directory):
    """One run of `summarize --format json` on the fleet: its summary, the wall time, the CPU time
    (user + system) and the peak RSS (MiB) of the process."""
    start = time.perf_counter()
    proc = subprocess.Popen([probe, "summarize", "--format", "json", "--max-age", "24h", directory],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0
    return json.loads(out), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def report_runs(name, runs, total):
    walls = [r[1] for r in runs]
    cpus = [r[2] for r in runs]
    print(f"{name}: wall {' '.join(f'{t:.2f}' for t in walls)} s, median {statistics.median(walls):.2f} s "
          f"({total / 2**20 / statistics.median(walls):.0f} MiB/s); CPU (user+sys) "
          f"{' '.join(f'{t:.2f}' for t in cpus)} s, median {statistics.median(cpus):.2f} s; peak RSS {max(r[3] for r in runs):.0f} MiB; the probe's own "
          f"figure {runs[-1][0]['duration_ms']:.0f} ms; exit {runs[-1][0]['exit_code']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--probe", default=os.path.join(ROOT, "build", "bin", "precision-probe"))
    p.add_argument("--baseline", help="another build of the probe (an earlier commit's), run for run with --probe")
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--dir", default="/tmp/pp-fleet")
    p.add_argument("--template")
    p.add_argument("--keep", action="store_true", help="keep the reports (default: removed)")
    p.add_argument("--reuse", action="store_true",
                   help="time the fleet a run with --keep left in --dir (what it planted is kept there)")
    p.add_argument("--schema", type=int, choices=[2, 3],
                   help="write the reports as this schema (default: as the probe writes them); 2 for a "
                        "baseline from before schema 3, which refuses newer reports")
    p.add_argument("--compact", action="store_true",
                   help="compact JSON (as a log store keeps reports) instead of the probe's indented form")
    a = p.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.abspath(a.probe)))
    marker = os.path.join(a.dir, ".planted")  # a dot file: summarize reads only *.json, none hidden
    if a.reuse:
        with open(marker) as f:
            saved = json.load(f)
        planted, a.nodes = saved["planted"], saved["nodes"]
    else:
        template = eight_gpus(json.load(open(a.template)) if a.template else template_report(a.probe, build))
        if a.schema == 2:
            template = as_schema_2(template)
        planted = make_fleet(template, a.nodes, a.dir, a.compact)
        with open(marker, "w") as f:
            json.dump({"planted": planted, "nodes": a.nodes}, f)
    files = [f for f in os.listdir(a.dir) if f.endswith(".json")]
    total = sum(os.path.getsize(os.path.join(a.dir, f)) for f in files)
    print(f"{len(files)} reports, {total / len(files) / 1024:.0f} KiB each, {total / 2**20:.0f} MiB in all, "
          f"in {a.dir}; {os.cpu_count()} cores")
    probes = [("probe", a.probe)] + ([("baseline", a.baseline)] if a.baseline else [])
    runs = {name: [] for name, _ in probes}
    loads = [load()]
    for _ in range(a.rounds):
        for name, probe in probes:  # alternating, run for run
            warm(a.dir, files)
            runs[name].append(summarize(probe, a.dir))
        loads.append(load())
    print(f"load average (1 min) before the first round and after each: {' '.join(loads)}")
    problems = []
    for name, probe in probes:
        report_runs(f"{name} ({probe})", runs[name], total)
        problems += [f"{name}: {p}" for p in check(runs[name][-1][0], planted, a.nodes)]
    if a.baseline:
        ratio = statistics.median(r[1] for r in runs["baseline"]) / statistics.median(r[1] for r in runs["probe"])
        cpu = statistics.median(r[2] for r in runs["baseline"]) / statistics.median(r[2] for r in runs["probe"])
        print(f"the probe against the baseline: {ratio:.2f}x faster (median wall), {cpu:.2f}x less CPU")
        walls = [b[1] / r[1] for b, r in zip(runs["baseline"], runs["probe"])]
        cpus = [b[2] / r[2] for b, r in zip(runs["baseline"], runs["probe"])]
        print(f"round by round: wall {' '.join(f'{x:.2f}' for x in walls)}x (median "
              f"{statistics.median(walls):.2f}x), CPU {' '.join(f'{x:.2f}' for x in cpus)}x (median "
              f"{statistics.median(cpus):.2f}x)")
    print("found what was planted" if not problems else "NOT FOUND: " + "; ".join(problems))
    for name, _ in probes:
        if runs[name][-1][0]["nodes"] == 0:
            print(f"{name} read none of the reports (an older build refuses a newer schema: make the "
                  "fleet with --schema 2, or --template of a report it reads); its time compares nothing")
    if not a.keep and not a.reuse:
        shutil.rmtree(a.dir, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
