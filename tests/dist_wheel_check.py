#!/usr/bin/env python3
"""Dist.TheWheelInstalledOfflineRunsTheEngine/RELEASE: what a user installs. The x86_64 wheel of
`./dev dist` is installed with pip into a fresh virtual environment, offline (--no-index, nothing
else fetched); the LibTorch release of the cache (`./dev torch`: torch/, torchgen/, nvidia/, as a
site-packages holds them) is placed in that environment's site-packages, hard-linked where the
file system allows, else copied. Then, with PATH naming no python3 and no PRECISION_PROBE_*
variable, the environment's `precision-probe`:

- is pip's console script (a Python launcher), and `python -m precision_probe` runs the same probe;
- finds that environment's torch through the launcher (found_by `PRECISION_PROBE_PYTHON (...)`)
  and runs the CPU's checks through the bundled engine on that release's libtorch_cpu.so;
- leaves PRECISION_PROBE_TORCH (OTHER, another release) first, and a PRECISION_PROBE_PYTHON the
  user set is the user's (one that names no file: exit 2);
- says in one line, exit 3, where the bundled binary cannot be started (made not executable).

Exit 0 when all hold, 1 with each problem. The wheel or a release that is not there is a failure:
the test is registered only where PP_DIST_DIR names ./dev dist's output (./dev dist-test).

    dist_wheel_check.py WHEEL VERSION RELEASE SITE OTHER_RELEASE OTHER_SITE
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def run(argv, env, timeout=300):
    print("+", " ".join(argv), flush=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def place(site, into):
    """The release's tree into the environment's site-packages: hard links, else a copy."""
    for entry in sorted(pathlib.Path(site).iterdir()):
        if entry.name.startswith("."):
            continue
        target = pathlib.Path(into) / entry.name
        try:
            shutil.copytree(entry, target, copy_function=os.link) if entry.is_dir() \
                else os.link(entry, target)
        except OSError:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(entry, target) if entry.is_dir() else shutil.copy2(entry, target)


def report(result, what):
    try:
        return json.loads(result.stdout)
    except ValueError:
        problems.append(f"{what}: no JSON report (exit {result.returncode}): {result.stderr[-2000:]}")
        return {}


def checks(venv, env, version, release, other_release, other_site):
    python = venv / "bin" / "python"
    command = venv / "bin" / "precision-probe"
    first = command.read_text(errors="replace").splitlines()[0] if command.is_file() else ""
    check(first.startswith("#!") and "python" in first,
          f"{command} is not pip's Python launcher (its first line: {first!r})")
    module = run([str(python), "-m", "precision_probe", "--version"], env)
    check(module.returncode == 0 and module.stdout.startswith(f"precision-probe {version} "),
          f"python -m precision_probe --version: exit {module.returncode}: {module.stdout}{module.stderr}")
    full = run([str(command), "--device", "cpu", "--no-amp", "--format", "json"], env)
    j = report(full, "the full run")
    image, stack = j.get("image_stack") or {}, j.get("stack") or {}
    print(f"exit {full.returncode}; found_by {image.get('found_by')!r}; location "
          f"{stack.get('location')!r}; library {stack.get('library')!r}; abi {stack.get('abi_version')!r}")
    check(str(image.get("found_by", "")).startswith(f"PRECISION_PROBE_PYTHON ({venv}/bin/python"),
          f"the torch was found by {image.get('found_by')!r}, not through the launcher's Python")
    check(str(stack.get("location", "")).startswith(str(venv) + "/"),
          f"the stack is {stack.get('location')!r}, not the environment's")
    check(str(stack.get("libtorch_version", "")).startswith(release),
          f"the release run is {stack.get('libtorch_version')!r}, not {release}")
    check(stack.get("abi_version"), f"the engine loaded no LibTorch: {stack.get('load_error')!r}")
    cpu = next((d for d in j.get("devices", []) if d.get("kind") == "cpu"), {})
    ran = [m for m, p in (cpu.get("precisions") or {}).items()
           if (p.get("smoke") or {}).get("ran")]
    check(ran, f"no check of the CPU ran: {json.dumps(cpu)[:1500]}")
    check(full.returncode == 0, f"the full run's exit code is {full.returncode}: {full.stderr[-2000:]}")
    print(f"the CPU's checks that ran: {' '.join(ran)}")
    # PRECISION_PROBE_TORCH comes first; a PRECISION_PROBE_PYTHON the user set stays theirs.
    named = run([str(command), "--quick", "--format", "json"],
                dict(env, PRECISION_PROBE_TORCH=str(other_site)))
    n = report(named, "--quick with PRECISION_PROBE_TORCH")
    check((n.get("image_stack") or {}).get("found_by") == "PRECISION_PROBE_TORCH" and
          str((n.get("image_stack") or {}).get("libtorch_version", "")).startswith(other_release),
          f"PRECISION_PROBE_TORCH={other_site} did not come first: {n.get('image_stack')}")
    bad = run([str(command), "--quick", "--format", "json"],
              dict(env, PRECISION_PROBE_PYTHON="/nonexistent/python"))
    check(bad.returncode == 2 and "PRECISION_PROBE_PYTHON=/nonexistent/python: no such file" in bad.stderr,
          f"a PRECISION_PROBE_PYTHON the user set: exit {bad.returncode}: {bad.stderr}")
    # A bundled binary that cannot be started: exit 3, one line (the environment's problem).
    bundled = pathlib.Path(run([str(python), "-c", "import precision_probe as p; print(p.probe_path())"],
                               env).stdout.strip())
    bundled.chmod(0o644)
    lost = run([str(command), "--quick"], env)
    check(lost.returncode == 3 and lost.stderr.count("\n") == 1 and
          f"the bundled probe {bundled} cannot be started" in lost.stderr,
          f"a bundled probe that cannot be started: exit {lost.returncode}: {lost.stderr}")


def main():
    wheel, version, release, site, other_release, other_site = sys.argv[1:7]
    for path, what in ((wheel, "the wheel (./dev dist)"), (site, f"LibTorch {release} (./dev torch)"),
                       (other_site, f"LibTorch {other_release} (./dev torch)")):
        if not pathlib.Path(path).exists():
            print(f"FAIL: no {path}: {what}")
            return 1
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pp-wheel-"))
    try:
        venv = tmp / "venv"
        (tmp / "empty").mkdir()
        (tmp / "home").mkdir()
        # No PATH with a python3 (the launcher's own Python must be what finds the torch), no
        # variable of the probe's; pip offline, its cache off.
        env = {"PATH": str(tmp / "empty"), "HOME": str(tmp / "home"), "LANG": "C.UTF-8"}
        made = run([sys.executable, "-m", "venv", str(venv)], dict(env, PATH=os.environ["PATH"]))
        if not check(made.returncode == 0, f"python3 -m venv: {made.stderr}"):
            return 1
        pip = run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps",
                   "--no-cache-dir", "--disable-pip-version-check", wheel], env)
        print(pip.stdout.strip())
        if not check(pip.returncode == 0, f"pip install {wheel}: {pip.stderr}"):
            return 1
        purelib = run([str(venv / "bin" / "python"), "-c",
                       "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env).stdout.strip()
        place(site, purelib)
        checks(venv, env, version, release, other_release, other_site)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
