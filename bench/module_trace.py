#!/usr/bin/env python3
"""Which kernel modules a command makes the CUDA driver load, and the host memory each costs
(docs/performance.md, "Kernel modules and their host memory").

Builds bench/module_trace.c (a CUDA injection library on CUPTI's callbacks; --cuda-include names
the CUDA toolkit's include directory, default /usr/local/cuda/include) with cc, unless --library
names one already built (the GPU machine has no toolkit: build it here, carry it there); runs the
command after `--` with CUDA_INJECTION64_PATH set, so that every process of it that starts CUDA
logs into one file; then prints, per process, each module loaded (its cubin's size, its kernels,
the first one's name) with the anonymous memory the driver call that loaded it added, the calls
and the stretches outside the driver that added 1 MiB or more, and the totals. --cupti names the
libcupti to load (default: libcupti.so.13, .12, .so from the loader's path; PyTorch's wheels carry
one under site-packages/nvidia/). --smaps also names the mappings that grew. Writes
module-trace.log and module-trace.json to --out. Bench-only, Linux only.

  usage: bench/module_trace.py [--library SO | --cuda-include DIR] [--cupti LIBCUPTI] [--smaps]
                               [--out DIR] -- COMMAND ARGS...

Exit status: the command's, or 1 where the library could not be built or no process of the
command started CUDA under it (one line says why), 2 a bad flag.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "module_trace.c")


def build(directory, include, cc=None):
    """bench/module_trace.c as a shared library in `directory`; its path, or exits saying why."""
    cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("module_trace: no C compiler (cc) to build the library; give --library")
    if not os.path.isfile(os.path.join(include, "cupti_callbacks.h")):
        sys.exit(f"module_trace: no cupti_callbacks.h in {include}: give the CUDA toolkit's include "
                 "directory (--cuda-include) or a built library (--library)")
    library = os.path.join(directory, "libmodule_trace.so")
    done = subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Wextra", "-fPIC", "-shared", "-I", include,
                           "-o", library, SOURCE, "-ldl", "-pthread"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"module_trace: {cc} could not build {SOURCE}: {done.stderr.strip()[-400:]}")
    return library


def parse(lines):
    """The log's lines as processes: {pid: {name, start_kib, modules, calls, outside, grown, errors}}."""
    processes = {}
    for raw in lines:
        fields = raw.rstrip("\n").split("\t")
        if len(fields) < 4:
            continue
        kind, pid, ms, rest = fields[0], fields[1], float(fields[2]), fields[3:]
        p = processes.setdefault(pid, {"name": "?", "start_kib": None, "modules": [], "calls": [],
                                       "outside": [], "grown": [], "errors": []})
        if kind == "P":
            p["name"] = rest[0]
        elif kind == "S":
            p["start_kib"] = int(rest[0])
        elif kind == "M" and len(rest) >= 4:
            p["modules"].append({"ms": ms, "id": int(rest[0]), "cubin_bytes": int(rest[1]),
                                 "kernels": int(rest[2]), "first_kernel": rest[3], "call": None})
        elif kind == "C" and len(rest) >= 4:
            call = {"ms": ms, "function": rest[0], "added_kib": int(rest[1]), "anon_kib": int(rest[2]),
                    "modules": int(rest[3])}
            p["calls"].append(call)
            for m in p["modules"][len(p["modules"]) - call["modules"]:]:
                m["call"] = call  # the modules printed just before their call
        elif kind == "O" and len(rest) >= 3:
            p["outside"].append({"ms": ms, "before": rest[0], "added_kib": int(rest[1]),
                                 "anon_kib": int(rest[2])})
        elif kind == "G" and len(rest) >= 3:
            p["grown"].append({"ms": ms, "when": rest[0], "mapping": rest[1], "added_kib": int(rest[2])})
        elif kind == "E":
            p["errors"].append(rest[0])
    return processes


def summary_of(p):
    """One process's totals."""
    return {"name": p["name"], "modules": len(p["modules"]),
            "cubin_kib": sum(m["cubin_bytes"] for m in p["modules"]) // 1024,
            "added_in_calls_kib": sum(c["added_kib"] for c in p["calls"]),
            "added_outside_kib": sum(o["added_kib"] for o in p["outside"]),
            "anon_start_kib": p["start_kib"],
            "anon_last_kib": max([c["anon_kib"] for c in p["calls"]] + [o["anon_kib"] for o in p["outside"]]
                                 + [p["start_kib"] or 0]),
            "errors": p["errors"]}


def report(processes):
    """The printed account: per process, its modules and what grew, then its totals."""
    out = []
    for pid, p in processes.items():
        s = summary_of(p)
        out.append(f"{s['name']} (pid {pid}): {s['modules']} modules, {s['cubin_kib']:,} KiB of cubins; "
                   f"anonymous memory added in driver calls {s['added_in_calls_kib'] / 1024:.1f} MiB, outside "
                   f"them {s['added_outside_kib'] / 1024:.1f} MiB")
        for e in p["errors"]:
            out.append(f"  error: {e}")
        for m in p["modules"]:
            call = m["call"] or {}
            out.append(f"  {m['ms']:9.1f} ms  module {m['id']:4}  {m['cubin_bytes'] // 1024:7,} KiB "
                       f"{m['kernels']:4} kernels  its call {call.get('function', '?')} "
                       f"+{call.get('added_kib', 0) / 1024:.1f} MiB  {m['first_kernel'][:70]}")
        events = [(c["ms"], f"call {c['function']}", c["added_kib"]) for c in p["calls"] if c["modules"] == 0]
        events += [(o["ms"], f"outside the driver, before {o['before']}", o["added_kib"]) for o in p["outside"]]
        for ms, what, kib in sorted(events):
            out.append(f"  {ms:9.1f} ms  {what}: +{kib / 1024:.1f} MiB")
        for g in p["grown"]:
            out.append(f"  {g['ms']:9.1f} ms    grew ({g['when']}): {g['mapping']} +{g['added_kib'] / 1024:.1f} MiB")
    return out


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if "--" not in sys.argv:
        sys.exit("module_trace: give the command after -- (bench/module_trace.py --help: the options)")
    at = sys.argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library")
    parser.add_argument("--cuda-include", default="/usr/local/cuda/include")
    parser.add_argument("--cupti")
    parser.add_argument("--smaps", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(sys.argv[1:at])
    command = sys.argv[at + 1:]
    if not command:
        sys.exit("module_trace: give the command after --")
    if args.library and not os.path.isfile(args.library):
        sys.exit(f"module_trace: --library {args.library}: no such file")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        sys.exit(f"module_trace: --out {args.out}: {e.strerror}")
    log = os.path.join(args.out, "module-trace.log")
    with tempfile.TemporaryDirectory(prefix="module-trace.") as directory:
        library = os.path.abspath(args.library) if args.library else build(directory, args.cuda_include)
        if os.path.exists(log):
            os.unlink(log)
        env = dict(os.environ, CUDA_INJECTION64_PATH=library, PP_MODULE_TRACE_OUT=log)
        if args.cupti:
            env["PP_MODULE_TRACE_CUPTI"] = os.path.abspath(args.cupti)
        if args.smaps:
            env["PP_MODULE_TRACE_SMAPS"] = "1"
        code = subprocess.run(command, env=env).returncode
    if not os.path.exists(log):
        sys.exit(f"module_trace: no process of `{' '.join(command)}` started CUDA under the library (exit {code})")
    with open(log) as f:
        processes = parse(f)
    doc = {pid: dict(summary_of(p), modules_loaded=[
        dict(m, call=m["call"] and {k: m["call"][k] for k in ("function", "added_kib")}) for m in p["modules"]])
        for pid, p in processes.items()}
    try:
        with open(os.path.join(args.out, "module-trace.json"), "w") as f:
            json.dump(doc, f, indent=1)
    except OSError as e:
        sys.exit(f"module_trace: --out {args.out}: {e.strerror}")
    print("\n".join(report(processes)))
    return code


if __name__ == "__main__":
    sys.exit(main())
