#!/usr/bin/env python3
"""Dist.PackagesHoldTheCheckedBinaries/ARCH: what `./dev dist` made for one architecture holds the
binaries that Portable.TheDistBinariesNeedTheCLibraryAloneUpToGlibc2_28 checked (those of the
install tree DIST/ARCH), byte for byte, and says what it is:

- the wheel precision_probe-VERSION-py3-none-manylinux_2_28_ARCH.whl: the probe and the engine
  executable inside the package (precision_probe/bin/, precision_probe/libexec/precision-probe/),
  the launcher's package, WHEEL's tag, the console script, and a RECORD whose every line matches
  its file (sha256 and size) and lists every file; `auditwheel show` (the dist tools' python)
  finds it consistent with manylinux_2_28 or an older policy;
- the tarball precision-probe-VERSION-Linux-ARCH.tar.gz: bin/ and libexec/, the same bytes;
- the .deb precision-probe_VERSION_DEBARCH.deb: Depends libc6 (>= 2.28), Architecture, both files.

Exit 0 when all hold, 1 with each problem. A package that is not there is a failure: these tests
are registered only where PP_DIST_DIR names ./dev dist's output (./dev dist-test).

    dist_packages_check.py DIST ARCH VERSION GLIBC AUDITWHEEL_PYTHON
"""

import base64
import hashlib
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

problems = []
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def check_wheel(wheel, binaries, arch, version, glibc):
    tag = f"py3-none-manylinux_{glibc.replace('.', '_')}_{arch}"
    info = f"precision_probe-{version}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for inside, data in binaries.items():
            name = f"precision_probe/{inside}"
            if not check(name in names, f"{wheel.name}: no {name}"):
                continue
            check(z.read(name) == data, f"{wheel.name}: {name} is not the checked {inside}")
            mode = (z.getinfo(name).external_attr >> 16) & 0o777
            check(mode == 0o755, f"{wheel.name}: {name} has mode {oct(mode)}, not 0o755")
        for name in ("precision_probe/__init__.py", "precision_probe/__main__.py"):
            check(name in names, f"{wheel.name}: no {name}")
        init = z.read("precision_probe/__init__.py").decode()
        check(f'__version__ = "{version}"' in init, f"{wheel.name}: __init__.py's version is not {version}")
        wheel_text = z.read(f"{info}/WHEEL").decode()
        check(f"\nTag: {tag}\n" in wheel_text, f"{wheel.name}: WHEEL's tag is not {tag}: {wheel_text}")
        check("Root-Is-Purelib: false" in wheel_text, f"{wheel.name}: WHEEL is purelib")
        entry = z.read(f"{info}/entry_points.txt").decode()
        check("[console_scripts]\nprecision-probe = precision_probe:main\n" in entry,
              f"{wheel.name}: no precision-probe console script: {entry}")
        metadata = z.read(f"{info}/METADATA").decode()
        check(re.search(r"^Name: precision-probe$", metadata, re.M) and
              re.search(rf"^Version: {re.escape(version)}$", metadata, re.M),
              f"{wheel.name}: METADATA's name or version")
        record = z.read(f"{info}/RECORD").decode().splitlines()
        listed = set()
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            listed.add(name)
            if name == f"{info}/RECORD":
                check(digest == "" and size == "", f"{wheel.name}: RECORD's own line {line}")
                continue
            data = z.read(name) if name in names else b""
            check(digest == record_hash(data) and size == str(len(data)),
                  f"{wheel.name}: RECORD's {name} does not match the file")
        check(listed == names, f"{wheel.name}: RECORD lists {sorted(listed ^ names)} wrongly")


def check_auditwheel(python, wheel, arch, glibc):
    out = subprocess.run([python, "-m", "auditwheel", "show", str(wheel)], capture_output=True,
                         text=True)
    text = out.stdout + out.stderr
    print(text.strip())
    # auditwheel wraps its sentences: matched with the text's whitespace made single spaces.
    m = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_(\w+)"',
                  " ".join(text.split()))
    if not check(out.returncode == 0 and m, f"auditwheel show {wheel.name}: exit {out.returncode}"):
        return
    major, minor, machine = int(m.group(1)), int(m.group(2)), m.group(3)
    floor = tuple(int(p) for p in glibc.split("."))
    check(machine == arch, f"auditwheel: {machine}, not {arch}")
    check((major, minor) <= floor,
          f"auditwheel: manylinux_{major}_{minor} is newer than manylinux_2_28")


def check_tarball(tgz, binaries):
    with tarfile.open(tgz) as t:
        members = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name}
        for inside, data in binaries.items():
            if check(inside in members, f"{tgz.name}: no {inside}"):
                check(t.extractfile(members[inside]).read() == data,
                      f"{tgz.name}: {inside} is not the checked one")


def check_deb(deb, arch, glibc):
    def field(name):
        return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True,
                              text=True).stdout.strip()

    check(field("Depends") == f"libc6 (>= {glibc})",
          f"{deb.name}: Depends '{field('Depends')}', not libc6 (>= {glibc})")
    debarch = DEBIAN_ARCH[arch]
    check(field("Architecture") == debarch, f"{deb.name}: Architecture {field('Architecture')}")
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True).stdout
    for inside in ("./usr/bin/precision-probe", "./usr/libexec/precision-probe/precision-probe-engine"):
        check(re.search(rf" {re.escape(inside)}$", listing, re.M), f"{deb.name}: no {inside}")


def main():
    dist, arch, version, glibc, python = sys.argv[1:6]
    dist = pathlib.Path(dist)
    tree = dist / arch
    binaries = {}
    for inside in ("bin/precision-probe", "libexec/precision-probe/precision-probe-engine"):
        path = tree / inside
        if check(path.is_file(), f"no {path}: run ./dev dist"):
            binaries[inside] = path.read_bytes()
    wheel = dist / f"precision_probe-{version}-py3-none-manylinux_{glibc.replace('.', '_')}_{arch}.whl"
    tgz = dist / f"precision-probe-{version}-Linux-{arch}.tar.gz"
    deb = dist / f"precision-probe_{version}_{DEBIAN_ARCH[arch]}.deb"
    for package, test in ((wheel, lambda: check_wheel(wheel, binaries, arch, version, glibc)),
                          (tgz, lambda: check_tarball(tgz, binaries)),
                          (deb, lambda: check_deb(deb, arch, glibc))):
        if check(package.is_file(), f"no {package}: run ./dev dist"):
            test()
            print(f"{package.name}: checked")
    if wheel.is_file():
        if check(python and pathlib.Path(python).is_file(),
                 f"no python with auditwheel ('{python}'): ./dev dist-test names ./dev dist's tools"):
            check_auditwheel(python, wheel, arch, glibc)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
