#!/usr/bin/env python3
"""Checks the copy-paste examples of docs/examples: YAML parses and has the expected shape, shell
snippets pass `bash -n`, the Dockerfile uses only known instructions, and every example is
referenced from docs/integrations.md. Also that the docs stay inside the repository and list every
environment variable the probe reads. Exit 0 when all hold; prints what failed otherwise."""

import pathlib
import re
import subprocess
import sys

import yaml

root = pathlib.Path(sys.argv[1])
ex = root / "docs" / "examples"
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def bash_ok(script, name):
    r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: bash -n: {r.stderr.strip()}")


gha = yaml.safe_load((ex / "github-actions.yml").read_text())
check(gha["jobs"]["train"]["needs"] == "precision-gate", "github-actions: train must need the gate")
for job in gha["jobs"].values():
    for step in job["steps"]:
        if "run" in step:
            bash_ok(step["run"], "github-actions step")
check("--require bf16" in str(gha), "github-actions: gate on --require bf16")
check("GITHUB_STEP_SUMMARY" in str(gha), "github-actions: Markdown summary")

gl = yaml.safe_load((ex / "gitlab-ci.yml").read_text())
check(gl["train"]["needs"] == ["precision-gate"], "gitlab: train must need the gate")
for name in ("precision-gate", "train"):
    bash_ok("\n".join(gl[name]["script"]), f"gitlab {name}")

def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def names_the_node(container, name):
    """PRECISION_PROBE_NODE_NAME from the downward API: the node's name, not the pod's."""
    ref = env_of(container).get("PRECISION_PROBE_NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {})
    check(ref.get("fieldPath") == "spec.nodeName",
          f"{name}: PRECISION_PROBE_NODE_NAME from the downward API's spec.nodeName")


def sees_every_gpu_of_any_node(pod, name):
    """A DaemonSet runs on nodes of any GPU count: it requests no GPU (a count), and sees them all
    through the NVIDIA container runtime."""
    for c in pod["containers"] + pod.get("initContainers", []):
        for kind in ("limits", "requests"):
            asked = c.get("resources", {}).get(kind, {})
            check(not any(k.startswith("nvidia.com/") for k in asked),
                  f"{name}: {c['name']} {kind} {asked}: a GPU count keeps it off nodes with fewer")
    c = pod["containers"][0]
    check(env_of(c).get("NVIDIA_VISIBLE_DEVICES", {}).get("value") == "all",
          f"{name}: NVIDIA_VISIBLE_DEVICES=all")
    check(pod.get("runtimeClassName") == "nvidia", f"{name}: the nvidia runtime class")


job = yaml.safe_load((ex / "k8s-job.yaml").read_text())
check(job["kind"] == "Job", "k8s-job: kind Job")
c = job["spec"]["template"]["spec"]["containers"][0]
check("nvidia.com/gpu" in c["resources"]["limits"], "k8s-job: nvidia.com/gpu limit")
names_the_node(c, "k8s-job")

check(c.get("terminationMessagePolicy") == "FallbackToLogsOnError",
      "k8s-job: the probe's exit reason, else its log, as the termination message")

init = yaml.safe_load((ex / "k8s-init-container.yaml").read_text())
check(init["kind"] == "Job", "k8s-init-container: kind Job")
pod = init["spec"]["template"]["spec"]
gate = pod["initContainers"][0]
check(gate["command"][0] == "precision-probe" and "--require" in gate["command"],
      "k8s-init-container: the init container gates with --require")
check(gate.get("terminationMessagePolicy") == "FallbackToLogsOnError",
      "k8s-init-container: the probe's exit reason, else its log, as the termination message")
check("nvidia.com/gpu" in gate["resources"]["limits"], "k8s-init-container: a GPU for the gate")
names_the_node(gate, "k8s-init-container")
check(pod["containers"][0]["name"] == "train", "k8s-init-container: the trainer after the gate")

ds = yaml.safe_load((ex / "k8s-daemonset.yaml").read_text())
check(ds["kind"] == "DaemonSet", "k8s-daemonset: kind DaemonSet")
c = ds["spec"]["template"]["spec"]["containers"][0]
sees_every_gpu_of_any_node(ds["spec"]["template"]["spec"], "k8s-daemonset")
names_the_node(c, "k8s-daemonset")
check(any("--prom" in a for a in c["args"]), "k8s-daemonset: writes Prometheus metrics")
bash_ok(c["args"][0], "k8s-daemonset script")
check(ds["spec"]["selector"]["matchLabels"] == ds["spec"]["template"]["metadata"]["labels"],
      "k8s-daemonset: selector matches the pod labels")

nfd = yaml.safe_load((ex / "nfd-daemonset.yaml").read_text())
check(nfd["kind"] == "DaemonSet", "nfd-daemonset: kind DaemonSet")
c = nfd["spec"]["template"]["spec"]["containers"][0]
sees_every_gpu_of_any_node(nfd["spec"]["template"]["spec"], "nfd-daemonset")
names_the_node(c, "nfd-daemonset")
bash_ok(c["args"][0], "nfd-daemonset script")
check("--nfd /features.d/" in c["args"][0], "nfd-daemonset: writes the feature file")
mount = next(m for m in c["volumeMounts"] if m["mountPath"] == "/features.d")
volume = next(v for v in nfd["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
check(volume["hostPath"]["path"].rstrip("/") == "/etc/kubernetes/node-feature-discovery/features.d",
      "nfd-daemonset: NFD's features.d host directory")
check(nfd["spec"]["selector"]["matchLabels"] == nfd["spec"]["template"]["metadata"]["labels"],
      "nfd-daemonset: selector matches the pod labels")
job = yaml.safe_load((ex / "nfd-job.yaml").read_text())
selector = job["spec"]["template"]["spec"]["nodeSelector"]
check(selector.get("precision-probe.io/gpu.bf16") == "native", "nfd-job: selects proven bf16")
check(all(k.startswith("precision-probe.io/gpu.") for k in selector), "nfd-job: the probe's labels")

rules = yaml.safe_load((ex / "prometheus-alerts.yml").read_text())
names = [r["alert"] for g in rules["groups"] for r in g["rules"]]
check("GpuSilentDataCorruption" in names, "prometheus-alerts: the corruption alert")

bash_ok((ex / "slurm.sh").read_text(), "slurm.sh")
check("--ntasks-per-node=1" in (ex / "slurm.sh").read_text(), "slurm: one task per node")
health = (ex / "slurm-healthcheck.sh").read_text()
bash_ok(health, "slurm-healthcheck.sh")
check("scontrol update" in health and "state=drain" in health, "slurm-healthcheck: drains the node")
check("precision-probe: " in health, "slurm-healthcheck: a structured reason")

known = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
         "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
lines = (ex / "Dockerfile").read_text().splitlines()
continued = False
for line in lines:
    stripped = line.strip()
    if not continued and stripped and not stripped.startswith("#"):
        word = stripped.split()[0]
        check(word in known, f"Dockerfile: unknown instruction {word}")
        if word == "RUN":
            pass
    continued = stripped.endswith("\\")
runs = re.findall(r"^RUN (.*?)(?<!\\)$", (ex / "Dockerfile").read_text(), re.S | re.M)
for r in re.findall(r"^RUN ((?:.*\\\n)*.*)$", (ex / "Dockerfile").read_text(), re.M):
    bash_ok(r.replace("\\\n", " "), "Dockerfile RUN")
check(sum(1 for l in lines if l.startswith("FROM ")) == 2, "Dockerfile: a multi-stage build")

doc = (root / "docs" / "integrations.md").read_text()
for f in ex.iterdir():
    check(f"examples/{f.name}" in doc, f"docs/integrations.md does not reference examples/{f.name}")

# A clone is self-contained: nothing it ships points at files outside the repository.
for path in [root / "README.md", root / "dev", root / ".ci" / "run", *(root / "docs").glob("*.md")]:
    check("../shared" not in path.read_text(), f"{path.relative_to(root)} points outside the repository (../shared)")

# Every environment variable --help lists is in the README's table.
readme = (root / "README.md").read_text()
cli_header = (root / "src" / "probe" / "cli" / "cli.hpp").read_text()
for name in re.findall(r'\{"([A-Z_]+)", "', cli_header):
    check(f"`{name}" in readme, f"README.md does not list the environment variable {name}")

for p in problems:
    print("FAIL:", p)
print(f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
