#!/usr/bin/env python3
"""bench/module_trace.c and .py without a GPU: the injection library built as the script builds it,
loaded into this process against a stand-in for CUPTI (tests/support/fake_cupti.c), which fires the
driver's calls and a module load as the driver would; the log read back by the script's parser and
report; what keeps the trace from running said in the log; the script's own refusals.

  usage: bench_module_trace_test.py MODULE_TRACE_PY FAKE_CUPTI_C CUDA_INCLUDE_DIR
"""

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    if not ok:
        FAILURES.append(what)


def load(path):
    spec = importlib.util.spec_from_file_location("module_trace", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cc(args):
    done = subprocess.run(["cc", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cc {' '.join(args)}: {done.stderr}")


# In a fresh process: the injection's start against CUPTI as given, the log's lines after it.
START_ONLY = """
import ctypes, sys
print(ctypes.CDLL(sys.argv[1]).InitializeInjection())
"""


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    script, fake_source, include = sys.argv[1:]
    if shutil.which("cc") is None:
        print("no C compiler (cc) to build the library")
        return 77
    mt = load(script)
    with tempfile.TemporaryDirectory() as d:
        strict = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fPIC", "-shared",
                                 "-I", include, "-o", os.path.join(d, "strict.so"), mt.SOURCE, "-ldl", "-pthread"],
                                capture_output=True, text=True)
        check("module_trace.c compiles with -Wall -Wextra -Wpedantic -Werror", strict.returncode == 0, strict.stderr)
        library = mt.build(d, include)
        fake = os.path.join(d, "libfake_cupti.so")
        cc(["-std=c11", "-fPIC", "-shared", "-I", include, "-o", fake, fake_source])
        # A cubin stand-in: an ELF object whose kernels are its .text.NAME sections.
        kernels = os.path.join(d, "kernels.c")
        with open(kernels, "w") as f:
            f.write("int alpha(int x) { return x + 1; }\nint beta(int x) { return x * 3; }\n")
        cc(["-c", "-O1", "-ffunction-sections", "-o", os.path.join(d, "kernels.o"), kernels])
        with open(os.path.join(d, "kernels.o"), "rb") as f:
            cubin = f.read()

        log = os.path.join(d, "trace.log")
        os.environ.update(PP_MODULE_TRACE_OUT=log, PP_MODULE_TRACE_CUPTI=fake)
        cupti = ctypes.CDLL(fake)
        cupti.fake_cupti_call.argtypes = [ctypes.c_char_p, ctypes.c_int]
        cupti.fake_cupti_module.argtypes = [ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
        check("the injection starts against CUPTI", ctypes.CDLL(library).InitializeInjection() == 1)
        cupti.fake_cupti_call(b"cuInit", 0)
        cupti.fake_cupti_call(b"cuInit", 1)
        held = [os.urandom(3 << 20)]  # 3 MiB written outside the driver
        cupti.fake_cupti_call(b"cuLibraryLoadData", 0)
        cupti.fake_cupti_module(7, cubin, len(cubin))
        held.append(os.urandom(2 << 20))  # 2 MiB written in the call that loaded the module
        cupti.fake_cupti_call(b"cuLibraryLoadData", 1)
        cupti.fake_cupti_call(b"cuCtxSynchronize", 0)
        cupti.fake_cupti_call(b"cuCtxSynchronize", 1)
        with open(log) as f:
            text = f.read()
        processes = mt.parse(text.splitlines())
        p = processes.get(str(os.getpid()), {})
        check("the process named, its start's memory", p.get("name") == open("/proc/self/comm").read().strip()
              and (p.get("start_kib") or 0) > 0, text)
        modules = p.get("modules", [])
        check("the module: its id, size, two kernels, the first's name", len(modules) == 1 and modules[0]["id"] == 7
              and modules[0]["cubin_bytes"] == len(cubin) and modules[0]["kernels"] == 2
              and modules[0]["first_kernel"] == "alpha", modules)
        call = modules[0]["call"] if modules else None
        check("the module's call, with what it added", call is not None and call["function"] == "cuLibraryLoadData"
              and call["modules"] == 1 and 1536 <= call["added_kib"] < 4096, call)
        outside = p.get("outside", [])
        check("growth outside the driver, before the call it preceded", len(outside) == 1
              and outside[0]["before"] == "cuLibraryLoadData" and 2560 <= outside[0]["added_kib"] < 6144, outside)
        check("a call that loaded nothing and added nothing is not logged",
              [c["function"] for c in p.get("calls", [])] == ["cuLibraryLoadData"], p.get("calls"))
        printed = "\n".join(mt.report(processes))
        check("the report: the module, its call's growth, the totals", "module    7" in printed
              and "its call cuLibraryLoadData +" in printed and "1 modules" in printed
              and "outside the driver, before cuLibraryLoadData" in printed, printed)
        del held

        # What keeps it from running is said in the log, and the injection declines.
        for env, word in (({"FAKE_CUPTI_RESULT": "1"}, "CUptiResult 1"),
                          ({"PP_MODULE_TRACE_CUPTI": os.path.join(d, "missing.so")}, "no CUPTI")):
            other = os.path.join(d, "other.log")
            done = subprocess.run([sys.executable, "-c", START_ONLY, library], capture_output=True, text=True,
                                  env=dict(os.environ, PP_MODULE_TRACE_OUT=other, **env))
            lines = open(other).read() if os.path.exists(other) else ""
            check(f"{word}: declined (0), said in the log", done.stdout.strip() == "0" and "\nE\t" in "\n" + lines
                  and word in lines, (done.stdout, done.stderr, lines))
            os.unlink(other)

        # The script: a command that starts no CUDA, a library that is not there, no command.
        out = os.path.join(d, "out")
        for argv, word in ((["--library", library, "--out", out, "--", "true"], "started CUDA"),
                           (["--library", os.path.join(d, "none.so"), "--", "true"], "no such file"),
                           (["--library", library], "after --")):
            done = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True)
            check(f"module_trace.py {' '.join(argv[-2:])}: exit 1, said", done.returncode == 1 and word in done.stderr,
                  (done.returncode, done.stderr))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
