#!/usr/bin/env python3
"""Docs.DockerfileBuildStageBuildsFromAFreshCheckout: the build stage of docs/examples/Dockerfile,
run as Docker would run it, on this machine (which has no Docker engine; CI's is Debian 12, the
stage's own base). Its instructions are read from the file and run in order: WORKDIR, COPY . .
(the checkout's files, as a fresh clone has them), ENV, and each RUN through /bin/sh -c, as root,
with Docker's environment (PATH, HOME and nothing else; HOME an empty directory, as /root is in a
fresh image: no cache of an earlier build). It runs in a mount namespace of its own (unshare -m)
where a tmpfs lies over every path the stage writes (/src, /build, /opt/precision-probe), over
apt's lists and cache and over /tmp (HOME is there); the host is left as it was. Then the final
stage's premises are checked: what it copies from the build stage is there, and the probe it
runs starts from there.

apt-get runs as written, against this machine's packages: `update` fills the tmpfs, `install`
must find every package it names installed already (else the test is skipped: it installs nothing
on the host; `./dev test` installs them), is kept from upgrading them (APT::Get::Upgrade false)
and marks them in a copy of apt's marks; the installed packages and apt's marks are compared
before and after. What the stage's base image
lacks and this machine has is not found here: a package the stage needs and does not name.

Exit 0 when the stage builds and the probe runs; 1 with what failed; 77 (skipped) where not root,
or without unshare, apt-get or one of the packages.

    dockerfile_build_check.py SOURCE_DIR
"""

import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import time

source = pathlib.Path(sys.argv[1]).resolve()
dockerfile = source / "docs" / "examples" / "Dockerfile"
DOCKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What the stage writes, and what apt and a shell write besides: a tmpfs each, in the namespace.
WRITTEN = ["/src", "/build", "/opt/precision-probe"]
SCRATCH = ["/var/lib/apt/lists", "/var/cache/apt", "/tmp"]
# HOME: an empty directory (Docker's is /root, whose copy here may hold a cache of an earlier build,
# and this test's own python3).
HOME = "/tmp/home"


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def instructions(text):
    """The Dockerfile's instructions, in order: (stage index, keyword, arguments), continuation
    lines joined and comments dropped."""
    out, stage, pending = [], -1, ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, args = whole.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append((stage, keyword, args.strip()))
    return out


def installed_packages():
    """What the host has installed, and which of it apt marks as installed automatically."""
    listed = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\n"],
                            capture_output=True, text=True, check=True).stdout
    states = pathlib.Path("/var/lib/apt/extended_states")
    return listed + (states.read_text() if states.exists() else "")


def apt_packages(run_args):
    """The packages an `apt-get install` of a RUN line names."""
    names = []
    for command in re.split(r"&&|;|\|\|", run_args):
        words = shlex.split(command)
        words = [w for w in words if "=" not in w or w.startswith("-")]  # VAR=value prefixes
        if "apt-get" in words and "install" in words:
            after = words[words.index("install") + 1:]
            names += [w for w in after if not w.startswith("-")]
    return names


def outer():
    if os.geteuid() != 0:
        skip("needs root (the stage runs as root, and the namespace's mounts need it)")
    for tool in ("unshare", "apt-get", "dpkg-query"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed")
    steps = instructions(dockerfile.read_text())
    wanted = [p for stage, keyword, args in steps if stage == 0 and keyword == "RUN"
              for p in apt_packages(args)]
    have = installed_packages()
    missing = [p for p in wanted
               if not re.search(rf"^{re.escape(p)} \S+ install ok installed$", have, re.M)]
    if missing:
        skip(f"the stage installs {' '.join(missing)}, which this test does not install on the "
             f"host (apt-get install {' '.join(missing)}; ./dev test does)")
    # The mount points the namespace needs, made where missing and removed afterwards (empty: the
    # tmpfs over each was the namespace's).
    made = []
    for path in WRITTEN + SCRATCH:
        parts = pathlib.PurePosixPath(path).parts
        for i in range(2, len(parts) + 1):
            p = pathlib.Path(*parts[:i])
            if not p.exists():
                p.mkdir()
                made.append(p)
    try:
        started = time.monotonic()
        r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            __file__, str(source), "--inside"])
        print(f"the build stage took {time.monotonic() - started:.0f} s")
    finally:
        for p in reversed(made):
            try:
                p.rmdir()
            except OSError as e:
                print(f"FAIL: {p} could not be removed: {e}")
    if installed_packages() != have:
        print("FAIL: the host's installed packages (or apt's marks of them) changed")
        return 1
    return r.returncode


def run(command, cwd, env):
    print(f"+ {command}", flush=True)
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, env=env).returncode


def context_files():
    """The files COPY . . of a fresh clone takes: the checkout's tracked ones, and untracked ones
    git does not ignore (not its build directories)."""
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True)
    if listed.returncode != 0:
        sys.exit(f"FAIL: git ls-files in {source}: {listed.stderr.decode().strip()}")
    return sorted(set(filter(None, listed.stdout.decode().split("\0"))))


def copy_context(destination, files, root):
    """COPY . .: `files` from `root`, the checkout as it was before the namespace's tmpfs mounts
    (which may lie over it: a clone under /tmp)."""
    for name in files:
        src = root / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        dst = destination / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


def inside():
    # The checkout, read before the tmpfs mounts may hide it (a clone under /tmp, say): its
    # Dockerfile, its files, and a descriptor of its directory, whose /proc/self/fd link reaches
    # it under any mount.
    dockerfile_text = dockerfile.read_text()
    files = context_files()
    root = pathlib.Path(f"/proc/self/fd/{os.open(source, os.O_RDONLY | os.O_DIRECTORY)}")
    for path in WRITTEN + SCRATCH:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "pp-dockerfile", path],
                       check=True)
    os.chmod("/tmp", 0o1777)
    # apt marks a package named on an install line as installed by hand: its copy of the marks,
    # not the host's.
    states = pathlib.Path("/var/lib/apt/extended_states")
    if states.exists():
        shutil.copyfile(states, "/tmp/extended_states")
    pathlib.Path("/tmp/apt.conf").write_text(
        'APT::Get::Upgrade "false";\nDir::State::extended_states "/tmp/extended_states";\n')
    os.mkdir(HOME, 0o700)
    env = {"PATH": DOCKER_PATH, "HOME": HOME, "APT_CONFIG": "/tmp/apt.conf"}
    workdir = "/"
    steps = instructions(dockerfile_text)
    final = [(k, a) for stage, k, a in steps if stage == 1]
    for stage, keyword, args in steps:
        if stage != 0:
            continue
        if keyword == "FROM":
            if not re.match(r"debian:12\b", args):
                print(f"note: the stage is FROM {args}; it runs on this machine's system")
        elif keyword == "WORKDIR":
            workdir = os.path.join(workdir, args)
            os.makedirs(workdir, exist_ok=True)
        elif keyword == "COPY":
            if args.split() != [".", "."]:
                sys.exit(f"FAIL: the test copies only `COPY . .`, not COPY {args}")
            copy_context(pathlib.Path(workdir), files, root)
        elif keyword == "ENV":
            name, _, value = args.partition("=")
            env[name.strip()] = value.strip().strip('"')
        elif keyword == "RUN":
            code = run(args, workdir, env)
            if code != 0:
                print(f"FAIL: RUN exited {code}: {args}")
                return 1
        elif keyword != "ARG":
            sys.exit(f"FAIL: the test does not run {keyword} instructions")

    # The final stage's premises: what it copies from the build stage is there, and its command
    # starts the probe from there, on its PATH.
    problems = []
    for keyword, args in final:
        m = re.match(r"--from=build\s+(\S+)\s+(\S+)", args) if keyword == "COPY" else None
        if m and not pathlib.Path(m.group(1)).is_dir():
            problems.append(f"COPY --from=build {m.group(1)}: the build stage left no such directory")
    cmd = next((json_list(a) for k, a in final if k == "CMD"), None)
    probe = pathlib.Path("/opt/precision-probe/bin/precision-probe")
    engine = pathlib.Path("/opt/precision-probe/libexec/precision-probe/precision-probe-engine")
    for binary in (probe, engine):
        if not os.access(binary, os.X_OK):
            problems.append(f"{binary} is not installed")
    if not problems:
        path = "/opt/precision-probe/bin:" + DOCKER_PATH
        if shutil.which(cmd[0], path=path) != str(probe):
            problems.append(f"CMD {cmd}: {cmd[0]} is not the installed probe on PATH={path}")
        version = subprocess.run([str(probe), "--version"], capture_output=True, text=True)
        quick = subprocess.run([str(probe), "--quick", "--device", "cpu", "--format", "json"],
                               capture_output=True, text=True, env={"PATH": path})
        if version.returncode != 0 or not version.stdout.startswith("precision-probe "):
            problems.append(f"--version: exit {version.returncode}: {version.stdout}{version.stderr}")
        if quick.returncode != 0 or '"exit_code": 0' not in quick.stdout:
            problems.append(f"--quick: exit {quick.returncode}: {quick.stderr}")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("the build stage built, installed and ran the probe: " + version.stdout.strip())
    return 1 if problems else 0


def json_list(text):
    return json.loads(text)


if __name__ == "__main__":
    sys.exit(inside() if "--inside" in sys.argv else outer())
