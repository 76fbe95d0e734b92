#!/usr/bin/env python3
"""bench/startup.py and bench/floor.c without a GPU: the /proc tree walk and its sums on a /proc of
files made here and on real processes; the wrapper's wall and CPU time of a tree whose orphans it
adopts, and what it kills when something is left running; the floor against the fake driver and
a fake LibTorch, and each of its failures; a whole dry run (one round, --cpus 1, --copies,
--baseline) against the fake driver, the fake engine and a fake PyTorch, whose JSON must hold
every figure; and bad values refused. Everything is made under TMPDIR and removed; every process
started is reaped.

    bench_startup_test.py PART STARTUP_PY PROBE FAKE_DRIVER FAKE_ENGINE FAKE_STACKS
    PART: proc | wrapper | floor | dryrun | refusals
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pychecks import check, finish, load as load_module  # noqa: E402


def load(path):
    return load_module(path, "startup")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def fake_process(proc, pid, ppid, comm, argv, pss=None, dirty=0, threads=None):
    """A /proc/PID of files: stat (COMM may hold spaces and parentheses), cmdline, comm,
    smaps_rollup (none where `pss` is None: a zombie), and task/TID/children per thread."""
    base = f"{proc}/{pid}"
    write(f"{base}/stat", f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0\n")
    write(f"{base}/comm", comm + "\n")
    write(f"{base}/cmdline", "\0".join(argv) + "\0")
    if pss is not None:
        write(f"{base}/smaps_rollup", f"00400000-7fff0000 ---p 00000000 00:00 0   [rollup]\nRss:  {pss + 100} kB\n"
                                      f"Pss:  {pss} kB\nPss_Anon:  1 kB\nPrivate_Dirty:  {dirty} kB\n")
    for tid, kids in (threads or {pid: []}).items():
        write(f"{base}/task/{tid}/children", "".join(f"{k} " for k in kids))


def part_proc(s, _args):
    """The walk, the reads and the sums, on a /proc made of files, then on real processes."""
    # Which traced runs checked the CPU: its plan's line (sessions) or its worker's (before them).
    check("a trace's CPU plan seen, a GPU's not taken for it", [s.cpu_checked(t) for t in (
        "trace: precision-probe:12          812.0 ms     247 flt  plan 0 (CPU) done\n",
        "trace: precision-probe:12          812.0 ms     247 flt  worker CPU done\n",
        "trace: precision-probe:12          812.0 ms     247 flt  plan 1 (GPU 0) done\n",
        "trace: precision-probe-engine:14   805.4 ms   88283 flt  plan 0 done\n")] == [True, True, False, False])
    with tempfile.TemporaryDirectory() as proc:
        # 100 -> 200 (two threads, each with a child: 300 and 301), 300 -> 400; 999 elsewhere.
        fake_process(proc, 100, 1, "wrapper", ["python3", "startup.py"], pss=9000, threads={100: [200]})
        fake_process(proc, 200, 100, "precision-probe", ["/b/precision-probe", "--format", "json"], pss=3000,
                     dirty=300, threads={200: [300], 201: [301]})
        fake_process(proc, 300, 200, "precision-probe", ["/b/precision-probe-engine", "--worker", "gpu", "--libtorch",
                                                         "/t/lib/libtorch_cuda.so"], pss=900 * 1024, dirty=400 * 1024,
                     threads={300: [400]})
        fake_process(proc, 301, 200, "odd ) (name", ["/b/precision-probe", "--driver-agent", "nvml"], pss=1024)
        fake_process(proc, 400, 300, "precision-probe", ["/b/precision-probe", "--format", "json"], pss=None)
        # 302: the probe's child before its exec (its argv, and with posix_spawn its memory).
        fake_process(proc, 302, 200, "precision-probe", ["/b/precision-probe", "--format", "json"], pss=3000)
        write(f"{proc}/200/task/201/children", "301 302 ")
        fake_process(proc, 999, 1, "other", ["other"], pss=5000)
        by_children = sorted(s.descendants(100, proc, by_children=True))
        by_stat = sorted(s.descendants(100, proc, by_children=False))
        check("the children files give the tree below the root, every thread's",
              by_children == [200, 300, 301, 302, 400], by_children)
        check("/proc/PID/stat gives the same (a COMM with ') (' in it read right)", by_stat == by_children, by_stat)
        check("smaps_rollup read in kB", s.read_rollup(300, proc) == {"Rss": 921700, "Pss": 921600,
                                                                      "Private_Dirty": 409600}, s.read_rollup(300, proc))
        check("a zombie (no smaps_rollup) has no figures", s.read_rollup(400, proc) is None)
        check("a gone process has no figures", s.read_rollup(12345, proc) is None)
        check("roles: the engine", s.role_of(s.read_argv(300, proc), "", None)
              == ("engine", "precision-probe-engine --worker gpu"), s.role_of(s.read_argv(300, proc), "", None))
        check("roles: an agent", s.role_of(s.read_argv(301, proc), "", None)
              == ("agent", "precision-probe --driver-agent nvml"))
        command = s.read_argv(200, proc)
        check("roles: a child", s.role_of(["/bin/sleep", "5"], "", None, command) == ("child", "sleep"))
        check("roles: the command, named as it was run", s.role_of(["python3", "startup.py"], "", "probe", command)
              == ("probe", "precision-probe"))

        sampler = s.TreeSampler(100, 0.01, "probe", command, proc=proc)
        sampler.command = 200
        sampler.sample_once()
        fake_process(proc, 301, 200, "odd ) (name", ["/b/precision-probe", "--driver-agent", "nvml"], pss=50 * 1024,
                     dirty=7 * 1024)
        fake_process(proc, 300, 200, "precision-probe", ["/b/precision-probe-engine", "--worker", "gpu"],
                     pss=100 * 1024, threads={300: [400]})
        sampler.sample_once()
        r = sampler.result()
        named = {p["name"]: p for p in r["processes"]}
        check("two samples", r["samples"] == 2, r["samples"])
        check("the tree's summed Pss peak is the largest sum of one sample, the wrapper not in it",
              abs(r["peak_tree_pss_mib"] - (3000 + 900 * 1024 + 1024) / 1024) < 1e-9, r["peak_tree_pss_mib"])
        check("each process's peak is its own largest sample",
              named["precision-probe-engine --worker gpu"]["peak_pss_mib"] == 900
              and named["precision-probe --driver-agent nvml"]["peak_pss_mib"] == 50
              and named["precision-probe --driver-agent nvml"]["peak_private_dirty_mib"] == 7, named)
        check("per process, its Pss in the sample of the tree's peak",
              named["precision-probe --driver-agent nvml"]["pss_at_tree_peak_mib"] == 1, named)
        check("the zombie, the child before its exec and the process outside the tree are not counted",
              sorted(p["pid"] for p in r["processes"]) == [200, 300, 301], r["processes"])
        check("the child before its exec said", r["pre_exec_skipped"] == 2, r["pre_exec_skipped"])

    # Real processes: a shell with two children, found both ways, with Pss.
    child = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(s.descendants(os.getpid())) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        found = s.descendants(os.getpid())
        check("a real tree: the shell and its two sleeps", len(found) == 3 and found[0] == child.pid, found)
        check("a real tree read from /proc/PID/stat too", sorted(s.descendants(os.getpid(), by_children=False))
              == sorted(found))
        rollup = s.read_rollup(child.pid)
        check("a real process has Pss", rollup is not None and rollup["Pss"] > 0, rollup)
        check("a real process has a VmHWM", s.read_hwm(child.pid) > 0)
    finally:
        for pid in s.descendants(child.pid):
            os.kill(pid, 9)
        child.kill()
        child.wait()


def measure(startup, argv, **extra):
    spec = dict({"name": "t", "argv": argv, "role": "command", "env": {}, "cpus": None, "sample_ms": 10}, **extra)
    done = subprocess.run([sys.executable, startup, "--measure", json.dumps(spec)], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout.splitlines()[-1])


def part_wrapper(_s, args):
    """The wrapper: wall time of the command, CPU time of its whole tree, orphans included."""
    burn = f"{sys.executable} -c 'import time; t = time.process_time()\nwhile time.process_time() - t < 0.4: pass'"
    # The shell exits at once; its child, orphaned, burns 0.4 s of CPU: adopted and reaped by the
    # wrapper, it counts in the tree's CPU time, not in the wall time.
    r = measure(args.startup, ["sh", "-c", f"({burn}) & exit 0"])
    check("the wrapper becomes a subreaper", r["subreaper"] is True, r)
    check("an orphan's CPU time counts in the tree's", r["cpu_s"] >= 0.35, r["cpu_s"])
    check("the wall time is the command's own, not its orphan's", r["wall_s"] < 0.3, r["wall_s"])
    check("nothing left running", r["leftovers"] == [], r["leftovers"])
    names = [p["name"] for p in r["memory"]["processes"] if p["role"] != "command"]
    check("the orphan was sampled", any(n.startswith("python") for n in names), r["memory"]["processes"])
    # What is still running two seconds after the command ended is killed, by pid, and named.
    marker = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench-startup-left.{os.getpid()}")
    r = measure(args.startup, ["sh", "-c", f"sleep 60 & echo $! > {marker}"], sample_ms=0)
    with open(marker) as f:
        left = int(f.read())
    os.unlink(marker)
    check("a process left running is named", r["leftovers"] == [f"{left} sleep"], r["leftovers"])
    check("and is gone", not os.path.exists(f"/proc/{left}"))
    # On one CPU: the command is pinned there (and so are its children).
    r = measure(args.startup, ["sh", "-c", f"grep Cpus_allowed_list: /proc/self/status > {marker}"], cpus=[0])
    with open(marker) as f:
        allowed = f.read().split()
    os.unlink(marker)
    check("--cpus: the command runs on the CPUs given", r["cpus"] == [0] and allowed[-1] == "0", (r["cpus"], allowed))
    # --cgroup: the command moves itself into the cgroup before it starts (its pid in cgroup.procs,
    # here a plain file standing for one) and is the same process after the move.
    with tempfile.TemporaryDirectory() as cgroup:
        write(os.path.join(cgroup, "cgroup.procs"), "")
        r = measure(args.startup, ["sh", "-c", f"echo $$ > {marker}"], cgroup=cgroup)
        with open(marker) as f:
            ran_as = f.read().split()
        os.unlink(marker)
        with open(os.path.join(cgroup, "cgroup.procs")) as f:
            moved = f.read().split()
    check("--cgroup: the command's own pid is moved, then it runs", r["exit_code"] == 0 and moved == ran_as
          and len(moved) == 1, (r, moved, ran_as))
    # A move that fails, or a command that is not there, is no run: the wrapper says which.
    with tempfile.TemporaryDirectory() as cgroup:
        os.mkdir(os.path.join(cgroup, "cgroup.procs"))  # a directory: the shell cannot write it
        r = measure(args.startup, ["true"], cgroup=cgroup)
        check("--cgroup: a move that fails is an error naming the cgroup", "cannot move" in r.get("error", "")
              and cgroup in r["error"], r)
        write(os.path.join(cgroup, "ok", "cgroup.procs"), "")
        r = measure(args.startup, ["/nonexistent/command"], cgroup=os.path.join(cgroup, "ok"))
        check("--cgroup: a command that is not there is an error naming it",
              "/nonexistent/command" in r.get("error", ""), r)
    r = measure(args.startup, ["/nonexistent/command"])
    check("a command that cannot start says so", "error" in r and "/nonexistent/command" in r["error"], r)


def fake_env(args):
    return dict(os.environ, PRECISION_PROBE_LIBCUDA=args.driver, PRECISION_PROBE_LIBNVML=args.driver,
                PRECISION_PROBE_ENGINE=args.engine, PRECISION_PROBE_TORCH=os.path.join(args.stacks, "cuda"),
                FAKE_NVIDIA_GPUS="NVIDIA H200:9.0:132:141")


def part_floor(s, args):
    """The floor compiles without a warning, runs to its end against the fakes, and says why not."""
    with tempfile.TemporaryDirectory() as build:
        strict = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-pthread", "-o",
                                 os.path.join(build, "strict"), s.FLOOR_SOURCE, "-ldl"], capture_output=True, text=True)
        check("floor.c compiles with -Wall -Wextra -Wpedantic -Werror", strict.returncode == 0, strict.stderr)
        floor = s.compile_floor(build)
        cuda_lib = os.path.join(args.stacks, "cuda", "torch", "lib")
        env = fake_env(args)

        def run(argv, **more):
            done = subprocess.run([floor, *argv], capture_output=True, text=True, env=dict(env, **more), timeout=60)
            return done.returncode, done.stderr

        code, err = run(["--times", os.path.join(cuda_lib, "libtorch_cuda.so")])
        check("the floor: LibTorch beside cuInit and the context, exit 0", code == 0, err)
        check("--times says each phase", all(w in err for w in ("LibTorch's dlopen", "cuInit", "primary context")),
              err)
        code, err = run(["--order", "init-first", os.path.join(cuda_lib, "libtorch_cuda.so")])
        check("--order init-first, exit 0, nothing said", code == 0 and err == "", (code, err))
        code, err = run([os.path.join(cuda_lib, "libtorch_cuda.so")])
        check("silent without --times", code == 0 and err == "", (code, err))
        code, err = run([os.path.join(cuda_lib, "libtorch_cuda.so")], FAKE_CUINIT_RESULT="100")
        check("no GPU: exit 5, cuInit's error named", code == 5 and "CUDA_ERROR_NO_DEVICE" in err, (code, err))
        code, err = run([os.path.join(cuda_lib, "libtorch_cuda.so")], FAKE_NVIDIA_GPUS="")
        check("no GPU visible: exit 5", code == 5, (code, err))
        code, err = run([os.path.join(args.stacks, "cpu", "torch", "lib", "libtorch_cuda.so")])
        check("a CPU-only torch: exit 3, the library named", code == 3 and "libtorch_cuda.so" in err, (code, err))
        code, err = run([os.path.join(cuda_lib, "libtorch_cuda.so")], PRECISION_PROBE_LIBCUDA="libcuda-missing.so.1")
        check("no libcuda: exit 4, named", code == 4 and "libcuda-missing.so.1" in err, (code, err))
        code, err = run([os.path.join(cuda_lib, "libtorch_cuda.so")], PRECISION_PROBE_LIBCUDA=os.path.join(
            cuda_lib, "libtorch_cpu.so"))
        check("a libcuda without cuInit: exit 4", code == 4 and "lacks cuInit" in err, (code, err))
        code, err = run(["--no-driver", os.path.join(args.stacks, "cpu", "torch", "lib", "libtorch_cpu.so")],
                        PRECISION_PROBE_LIBCUDA="libcuda-missing.so.1")
        check("--no-driver: libtorch_cpu.so alone, no driver asked", code == 0, (code, err))
        for argv in ([], ["--order", "sideways", "x.so"], ["--bogus", "x.so"], ["a.so", "b.so"]):
            code, err = run(argv)
            check(f"usage {argv}: exit 2, one line why", code == 2 and err.startswith("floor: "), (code, err))
        # --gemms: one GEMM per dtype through the cuBLAS LibTorch's handle reaches (the fake stack's
        # stand-ins say each call), in the probe's order; a failed GEMM and a LibTorch without cuBLAS
        # are said, exit 8 and 7.
        torch = os.path.join(cuda_lib, "libtorch_cuda.so")
        code, err = run(["--gemms", torch])
        calls = [line[len("fake cublas: "):] for line in err.splitlines() if line.startswith("fake cublas: ")]
        check("--gemms: fp32, tf32, fp16, bf16 and int8, each once, exit 0", code == 0 and calls == [
            "cublasSgemm_v2", "cublasGemmEx type 0 out 0 compute 77 transa 0",
            "cublasGemmEx type 2 out 2 compute 68 transa 0", "cublasGemmEx type 14 out 14 compute 68 transa 0",
            "cublasGemmEx type 3 out 10 compute 72 transa 1"], (code, err))
        code, err = run(["--times", "--gemms", torch])
        check("--gemms --times: each GEMM's end", code == 0 and all(
            f"{d} GEMM" in err for d in ("fp32", "tf32", "fp16", "bf16", "int8")), err)
        code, err = run(["--gemms", torch], FAKE_CUBLAS_STATUS="13")
        check("a GEMM that fails: exit 8, its dtype and status", code == 8
              and "the fp32 GEMM failed (status 13)" in err and "fp32 GEMM" not in err.replace("the fp32 GEMM", ""),
              (code, err))
        code, err = run(["--times", "--gemms", torch], FAKE_CUDA_MALLOC_STATUS="2")
        check("its memory refused: exit 8, cudaMalloc named, no GEMM run or timed", code == 8
              and "cudaMalloc failed (status 2)" in err and "fake cublas" not in err and " GEMM " not in err,
              (code, err))
        code, err = run(["--gemms", args.driver])
        check("a LibTorch without cuBLAS: exit 7", code == 7 and "lack" in err and "cublasGemmEx" in err, (code, err))
        code, err = run(["--gemms", "--no-driver", torch])
        check("--gemms needs the driver: exit 2", code == 2 and "--gemms" in err, (code, err))


def part_dryrun(s, args):
    """One round of everything against the fakes; the JSON holds every figure."""
    with tempfile.TemporaryDirectory() as out:
        python = os.path.join(out, "fake-python3")
        write(python, "#!/bin/sh\nsleep 0.3\n")
        os.chmod(python, 0o755)
        env = dict(fake_env(args), FAKE_ENGINE_HOLD_MS="400")
        done = subprocess.run([sys.executable, args.startup, "--probe", args.probe, "--baseline", args.probe,
                               "--runs", "1", "--memory-runs", "1", "--cpus", "1", "--copies", "1,2", "--floor-gemms",
                               "--variant", "mask:PRECISION_PROBE_ENGINE_CPUS=mask",
                               "--python", python, "--out", out], capture_output=True, text=True, env=env,
                              timeout=600)
        check("the dry run exits 0", done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:])
        if done.returncode != 0:
            return
        lines = done.stdout.rstrip().splitlines()
        header = max(i for i, line in enumerate(lines) if line.startswith("command "))
        with open(os.path.join(out, "bench-startup.json")) as f:
            doc = json.load(f)
        check("the table is printed last, a line per command", len(lines) - header - 1 == len(doc["rows"])
              and lines[-1].startswith("precision-probe --no-amp"), lines[header:])
        check("the finished document is not marked partial", "partial" not in doc and "summary" in doc,
              sorted(doc))
        rounds = [line for line in lines[:header] if line.startswith(("round 1/1: ", "memory round 1/1: "))]
        check("a line per round as it ends, each command's wall time; traced and sampled figures said",
              any("precision-probe (full) " in line and " s" in line for line in rounds)
              and any("GPU done at " in line for line in rounds)
              and any("tree Pss " in line for line in rounds), rounds[:4])
        rows = {r["name"]: r for r in doc["rows"]}
        full = rows.get("precision-probe (full)", {})
        check("every group ran", {"precision-probe --quick", "baseline --quick", "python3 torch fp16/bf16 check",
                                  "floor (LibTorch + context)", "precision-probe (full)", "baseline (full)",
                                  "traced: precision-probe (full)", "traced: without the CPU's checks",
                                  "copies 1", "copies 2", "baseline (copies)", "precision-probe --no-amp",
                                  "floor + one GEMM per dtype", "default (variants)", "variant mask",
                                  "traced: variant mask"}
              <= set(rows), sorted(rows))
        check("on the first CPU", doc["setup"]["cpus"] == [0] and full.get("cpus") == [0], doc["setup"])
        check("every command exited 0", all(r["exit_codes"] == [0] for r in doc["rows"]),
              {n: r["exit_codes"] for n, r in rows.items()})
        check("the floor ran against the fakes' libtorch_cuda.so", doc["setup"]["floor"][-1].endswith(
            "/stacks/cuda/torch/lib/libtorch_cuda.so"), doc["setup"]["floor"])
        roles = {p["role"]: p for p in full.get("processes", {}).values()}
        check("the probe and its engine workers sampled, with Pss", roles.get("probe", {}).get("peak_pss_mib", 0) > 0
              and roles.get("engine", {}).get("peak_pss_mib", 0) > 0, full.get("processes"))
        engines = [n for n, p in full.get("processes", {}).items() if p["role"] == "engine"]
        # Where GPU device nodes exist the CPU's plan joins the GPUs' session (started ahead).
        gpu_nodes = any(n.startswith("nvidia") and n[6:].isdigit() for n in os.listdir("/dev"))
        check("the CPU's session and the GPU's named apart", (gpu_nodes or any("--worker cpu" in n for n in engines))
              and any("--worker gpu" in n for n in engines), engines)
        check("the tree's summed Pss at least its largest process's", full.get("tree_pss_mib", 0)
              >= max(p["peak_pss_mib"] for p in full["processes"].values()) > 0, full.get("tree_pss_mib"))
        check("the tree's CPU time counted (workers included)", full.get("cpu_s", 0) > 0, full.get("cpu_s"))
        check("the fake python's child (sleep) sampled too", "sleep" in rows["python3 torch fp16/bf16 check"].get(
            "processes", {}), rows["python3 torch fp16/bf16 check"].get("processes"))
        check("nothing left running", all(not r["leftovers"] for r in doc["rows"]))
        summary = doc["summary"]
        check("the GPU's checks' end read from the trace, both ways", all(
            isinstance(summary.get("gpu_done_ms", {}).get(k), float) for k in ("full", "without_cpu")),
            summary.get("gpu_done_ms"))
        variant = summary.get("variants_gpu_done", {}).get("variant mask", {})
        check("a variant traced too: its GPU's checks' end and its change against the full probe's",
              isinstance(variant.get("gpu_done_ms"), float) and isinstance(variant.get("change"), float)
              and isinstance(summary.get("variants", {}).get("variant mask"), float), summary.get("variants_gpu_done"))
        check("the variant's line says when its GPU's checks were done",
              any(line.startswith("variant mask: ") and "the GPU's checks done at" in line for line in lines), lines)
        # The probe's switch leaves the CPU's plan out: the traces say which way checked it.
        check("the CPU checked in the full traced run, not in the other",
              all(rows["traced: precision-probe (full)"]["cpu_checked"])
              and not any(rows["traced: without the CPU's checks"]["cpu_checked"])
              and summary.get("skip_cpu_ignored") is False,
              (rows["traced: precision-probe (full)"].get("cpu_checked"),
               rows["traced: without the CPU's checks"].get("cpu_checked")))
        for key in ("speedup_vs_python", "full_vs_floor", "full_change", "quick_change", "full_tree_pss_mib",
                    "full_vs_floor_gemms"):
            check(f"summary.{key} measured", isinstance(summary.get(key), float) and summary[key] > 0, summary.get(key))
        # (the fakes' floors end before a 10 ms sample: their Pss may be 0, never missing)
        check("both floors' tree Pss reported", all(isinstance(summary.get(k), float) for k in (
            "floor_tree_pss_mib", "floor_gemms_tree_pss_mib")), summary)
        copies = summary.get("copies", {})
        honoured = len({tuple(c["cuda_devices"]) for c in copies.get("by_count", {}).values()}) == 2
        check("copies: per N and per added device", set(copies.get("by_count", {})) == {"1", "2"}
              and set(copies.get("per_added_device", {})) == {"2"}, copies)
        check("copies: honoured only where the report's GPUs follow N", copies.get("honoured") is honoured, copies)
        targets = summary["targets"]
        check("one CPU: its targets judged", all(isinstance(targets[k], bool) for k in (
            "one_cpu_full_at_most_2x_floor", "one_cpu_full_2_5x_faster_than_python",
            "one_cpu_gpu_checks_no_later_than_without_cpu", "tree_pss_at_most_924_mib_for_one_gpu")), targets)
        check("all CPUs' target not judged on one", targets["all_cpus_full_no_slower_than_baseline"] is None, targets)
        check("the added devices' target judged only where honoured",
              (targets["each_added_device_at_most_200_mib_and_0_2_cpu_s"] is None) != honoured, targets)


def part_partial(_s, args):
    """A bench stopped part way (`timeout`'s SIGTERM to its process group) leaves the groups it finished
    in its JSON, marked partial, has said each finished round on its output as it ended, and
    leaves no temporary file (the floor's directory: the test's temporary directory is checked)."""
    with tempfile.TemporaryDirectory() as out:
        python = os.path.join(out, "fake-python3")
        write(python, "#!/bin/sh\nexec sleep 300\n")  # the full group never ends
        os.chmod(python, 0o755)
        path = os.path.join(out, "bench-startup.json")
        with open(os.path.join(out, "stdout"), "w+") as said, open(os.path.join(out, "stderr"), "w+") as err:
            bench = subprocess.Popen([sys.executable, args.startup, "--probe", args.probe, "--runs", "1",
                                      "--memory-runs", "0", "--python", python, "--out", out],
                                     stdout=said, stderr=err, env=fake_env(args), start_new_session=True)
            deadline = time.monotonic() + 120
            while not os.path.exists(path) and bench.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)  # into the next group, its Python check sleeping
            os.killpg(bench.pid, signal.SIGTERM)
            try:
                bench.wait(timeout=30)
            finally:
                try:
                    os.killpg(bench.pid, signal.SIGKILL)  # whatever did not end on SIGTERM
                except ProcessLookupError:
                    pass
                bench.wait()
            said.seek(0)
            lines = said.read().splitlines()
            err.seek(0)
            stderr = err.read()
        check("the bench was stopped while it ran, and said so in one line",
              bench.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in stderr
              and len(stderr.strip().splitlines()) == 1, (bench.returncode, stderr))
        check("a finished group's round said as it ended", any(line.startswith("round 1/1: ") for line in lines),
              lines)
        doc = json.load(open(path)) if os.path.exists(path) else {}
        names = [r["name"] for r in doc.get("rows", [])]
        # Before the full group: the quick group, and nvidia-smi's where the machine has one.
        check("the JSON holds the finished groups, marked partial, and no summary",
              doc.get("partial") is True and "summary" not in doc and names
              and set(names) <= {"nvidia-smi compute_cap", "precision-probe --quick"}, doc)


def part_old_build(_s, args):
    """A build that does not read PRECISION_PROBE_BENCH_SKIP_CPU (a wrapper that unsets it) checks
    the CPU both ways: the GPU's-checks target is left not measured, and said so. With --device all
    the run without the CPU's checks selects the GPUs alone (the switch refuses the CPU)."""
    with tempfile.TemporaryDirectory() as out:
        python, old = os.path.join(out, "fake-python3"), os.path.join(out, "old-probe")
        write(python, "#!/bin/sh\nsleep 0.1\n")
        write(old, f"#!/bin/sh\nunset PRECISION_PROBE_BENCH_SKIP_CPU\nexec {args.probe} \"$@\"\n")
        os.chmod(python, 0o755)
        os.chmod(old, 0o755)
        for probe, device in ((old, "all"), (args.probe, "all")):
            done = subprocess.run([sys.executable, args.startup, "--probe", probe, "--runs", "1", "--memory-runs",
                                   "0", "--cpus", "1", "--no-floor", "--device", device, "--python", python,
                                   "--out", out], capture_output=True, text=True, env=fake_env(args), timeout=300)
            check(f"{os.path.basename(probe)} --device {device}: exit 0", done.returncode == 0, done.stderr[-1000:])
            with open(os.path.join(out, "bench-startup.json")) as f:
                doc = json.load(f)
            rows = {r["name"]: r for r in doc["rows"]}
            without = rows.get("traced: without the CPU's checks", {})
            summary = doc["summary"]
            check("the run without the CPU's checks selects the GPUs alone, and runs",
                  without.get("argv", [])[1:3] == ["--device", "gpu"] and without.get("exit_codes") == [0], without)
            if probe == old:
                check("an old build: not measured, said", summary.get("skip_cpu_ignored") is True
                      and summary.get("gpu_done_change") is None
                      and summary["targets"]["one_cpu_gpu_checks_no_later_than_without_cpu"] is None
                      and "does not read the switch" in done.stdout, (summary.get("skip_cpu_ignored"), done.stdout))
            else:
                check("this build: measured", summary.get("skip_cpu_ignored") is False
                      and isinstance(summary.get("gpu_done_change"), float), summary)


def part_refusals(_s, args):
    """Bad values: one line naming the problem, exit 1 (argparse's own: exit 2)."""
    env = fake_env(args)
    for argv, word in ((["--cpus", "0"], "--cpus 0"), (["--cpus", "100000"], "--cpus 100000"),
                       (["--copies", "1,x"], "--copies"), (["--copies", "2,2"], "--copies"),
                       (["--runs", "0"], "--runs 0"), (["--memory-runs", "-1"], "--memory-runs -1"),
                       (["--sample-ms", "-5"], "--sample-ms -5"), (["--variant", "novalue"], "--variant"),
                       (["--torch-lib", "/nonexistent"], "--torch-lib /nonexistent"),
                       (["--cgroup", "/nonexistent"], "--cgroup /nonexistent"),
                       (["--floor-gemms"], "not with --no-floor")):
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run([sys.executable, args.startup, "--probe", args.probe, "--runs", "1", "--out", out,
                                   "--no-floor", *argv], capture_output=True, text=True, env=env, timeout=300)
            check(f"{' '.join(argv)}: exit 1, one line naming it", done.returncode == 1 and word in done.stderr
                  and len(done.stderr.strip().splitlines()) == 1, (done.returncode, done.stderr[-500:]))
    done = subprocess.run([sys.executable, args.startup, "--probe", args.probe, "--floor-gemms", "--device", "cpu"],
                          capture_output=True, text=True, env=env, timeout=60)
    check("--floor-gemms --device cpu: exit 1, one line", done.returncode == 1 and "not with --device cpu" in
          done.stderr and len(done.stderr.strip().splitlines()) == 1, (done.returncode, done.stderr[-500:]))
    # --cgroup: the cgroup's cpu.max read in whole CPUs, rounded up; no cpu controller or no quota refused.
    with tempfile.TemporaryDirectory() as cgroup:
        write(os.path.join(cgroup, "cgroup.procs"), "")
        write(os.path.join(cgroup, "cgroup.controllers"), "cpu memory\n")
        for cpu_max, cpus in (("100000 100000", 1), ("150000 100000", 2), ("50000 100000", 1), ("400000 100000", 4)):
            write(os.path.join(cgroup, "cpu.max"), cpu_max + "\n")
            check(f"--cgroup: cpu.max {cpu_max!r} is {cpus} CPU(s)", _s.cgroup_quota(cgroup) == cpus)
        for cpu_max, word in ((None, "no cpu.max"), ("max 100000", "sets no CPU quota")):
            if cpu_max is None:
                os.unlink(os.path.join(cgroup, "cpu.max"))
            else:
                write(os.path.join(cgroup, "cpu.max"), cpu_max + "\n")
            done = subprocess.run([sys.executable, args.startup, "--probe", args.probe, "--no-floor", "--cgroup",
                                   cgroup], capture_output=True, text=True, env=env, timeout=60)
            check(f"--cgroup with {word}: exit 1, one line", done.returncode == 1 and word in done.stderr
                  and len(done.stderr.strip().splitlines()) == 1, (done.returncode, done.stderr[-500:]))
    done = subprocess.run([sys.executable, args.startup, "--probe", "/nonexistent/precision-probe"],
                          capture_output=True, text=True, env=env, timeout=60)
    check("a probe that is not there: exit 1, named", done.returncode == 1 and "/nonexistent" in done.stderr,
          done.stderr)


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        return 2
    args = type("Args", (), {})()
    part, args.startup, args.probe, args.driver, args.engine, args.stacks = sys.argv[1:]
    parts = {"proc": part_proc, "wrapper": part_wrapper, "floor": part_floor, "dryrun": part_dryrun,
             "refusals": part_refusals, "oldbuild": part_old_build, "partial": part_partial}
    if part not in parts:
        print(f"unknown part {part!r}: {' '.join(parts)}")
        return 2
    if shutil.which("cc") is None and part in ("floor", "dryrun", "partial"):
        print("no C compiler (cc) for the floor")
        return 77
    parts[part](load(args.startup), args)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
