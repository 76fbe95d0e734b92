#!/usr/bin/env python3
"""Makes the wheel of one architecture from the install tree of the distribution's build
(`./dev dist`): precision_probe-VERSION-py3-none-manylinux_2_28_ARCH.whl.

A wheel is a zip: the package (packaging/python/precision_probe, its version filled in), the
tree's probe and engine inside it (precision_probe/bin/precision-probe and
precision_probe/libexec/precision-probe/precision-probe-engine, executable), and a dist-info:
METADATA, WHEEL (its tag), entry_points.txt (the precision-probe console script: the package's
launcher), the licences, and RECORD (each file's sha256 and size). The entries are sorted and
dated SOURCE_DATE_EPOCH (default 1980-01-01): the same tree makes the same wheel.

    make_wheel.py TREE ARCH VERSION GLIBC OUT_DIR

Prints the wheel's path.
"""

import base64
import hashlib
import os
import pathlib
import sys
import time
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
SUMMARY = ("Which numeric precisions this machine can really train in (FP32, TF32, FP16, BF16, "
           "FP8, FP4): the GPUs' and the CPU's, on the PyTorch this Python imports")


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def files_of(tree, arch, version, glibc):
    """(name in the wheel, bytes, executable) of every file but RECORD."""
    package = HERE / "python" / "precision_probe"
    out = []
    for source in sorted(package.glob("*.py")):
        text = source.read_text().replace("@VERSION@", version)
        out.append((f"precision_probe/{source.name}", text.encode(), False))
    for inside in ("bin/precision-probe", "libexec/precision-probe/precision-probe-engine"):
        binary = tree / inside
        if not binary.is_file():
            sys.exit(f"make_wheel: {binary} is not there: install the build into {tree} first")
        out.append((f"precision_probe/{inside}", binary.read_bytes(), True))
    info = f"precision_probe-{version}.dist-info"
    docs = sorted((tree / "share" / "doc").glob("*/LICENSE*"))
    if not docs:
        sys.exit(f"make_wheel: no LICENSE in {tree}/share/doc")
    readme = next((tree / "share" / "doc").glob("*/README.md"), None)
    metadata = [
        "Metadata-Version: 2.1",
        "Name: precision-probe",
        f"Version: {version}",
        f"Summary: {SUMMARY}",
        "License: see LICENSE",
        "Requires-Python: >=3.8",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Environment :: GPU :: NVIDIA CUDA",
        "Description-Content-Type: text/markdown",
    ]
    metadata += [f"License-File: {d.name}" for d in docs]
    body = readme.read_text() if readme else SUMMARY + "\n"
    out.append((f"{info}/METADATA", ("\n".join(metadata) + "\n\n" + body).encode(), False))
    wheel = ["Wheel-Version: 1.0", "Generator: precision-probe packaging/make_wheel.py",
             "Root-Is-Purelib: false", f"Tag: py3-none-manylinux_{glibc.replace('.', '_')}_{arch}"]
    out.append((f"{info}/WHEEL", ("\n".join(wheel) + "\n").encode(), False))
    entry = "[console_scripts]\nprecision-probe = precision_probe:main\n"
    out.append((f"{info}/entry_points.txt", entry.encode(), False))
    for d in docs:
        out.append((f"{info}/licenses/{d.name}", d.read_bytes(), False))
    return info, out


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[-2])
    tree, arch, version, glibc, out_dir = sys.argv[1:]
    tree = pathlib.Path(tree)
    if arch not in ("x86_64", "aarch64"):
        sys.exit(f"make_wheel: {arch}: x86_64 or aarch64")
    info, files = files_of(tree, arch, version, glibc)
    name = f"precision_probe-{version}-py3-none-manylinux_{glibc.replace('.', '_')}_{arch}.whl"
    path = pathlib.Path(out_dir) / name
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)
    stamp = time.gmtime(epoch)[:6]
    record = [f"{n},{record_hash(data)},{len(data)}" for n, data, _ in files]
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), False))
    partial = path.with_name(path.name + ".partial")
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for n, data, executable in files:
                entry = zipfile.ZipInfo(n, date_time=stamp)
                entry.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(entry, data)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        sys.exit(f"make_wheel: {path}: {error}")
    print(path)


if __name__ == "__main__":
    main()
