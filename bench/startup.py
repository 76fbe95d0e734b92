#!/usr/bin/env python3
"""Start-up speed and memory of precision-probe against the floor and the checks people run today.

Times, round after round (so that drift in the machine's state falls on all alike):
  quick      precision-probe --quick                      vs  nvidia-smi --query-gpu=compute_cap
  full       precision-probe (every GPU; the CPU too)     vs  the Python check (import torch,
                                                              fp16 and bf16 3x3 matmuls) and the
                                                              floor (bench/floor.c: LibTorch's
                                                              dlopen beside cuInit and GPU 0's
                                                              primary context, nothing else)
Each run is of a fresh wrapper process (this script, --measure) that gives the command's wall
time, its exit code and the CPU time of its whole tree (user + system, RUSAGE_CHILDREN: the
wrapper adopts the tree's orphans as a subreaper and reaps them; what still runs 2 s after the
command ended is killed and named). After each group's --runs timed rounds, --memory-runs (3)
rounds more, alternating the same way, sample memory: every --sample-ms (10) the wrapper walks
the command's tree (/proc/PID/task/*/children) and reads each process's /proc/PID/smaps_rollup
and VmHWM; per process (named by its executable and verb, with its role: the command itself,
engine workers, the probe's agents) the peak Pss, Private_Dirty and resident set, and the peak of
the tree's summed Pss. The memory rounds are apart because reading smaps_rollup walks a process's
page tables under its mmap lock and slows a process that maps memory; their wall time is kept
(sampled_median_s) but no headline figure rests on it. A process that lives less than the
interval can be missed: the per-process table says in how many runs each was seen.

  --baseline PROBE   another build (the commit before) alternates run for run with this one in
                     every group; the change is the median of the per-round ratios
  --cpus N           every timed command (probe, floor, Python check, baseline) on the first N CPUs
                     of this process's affinity set, as `taskset -c` pins it; the sampler runs on
                     the others. With --cpus, the full probe also runs traced
                     (PRECISION_PROBE_TRACE=1) in rounds of its own, with and without the CPU's
                     checks (PRECISION_PROBE_BENCH_SKIP_CPU=1, the probe's bench switch: the CPU is
                     always checked, --device gpu too): when the GPU's checks were
                     done ("plan N (GPU I) done", "worker GPU N done" before sessions), each way
  --cgroup DIR       every timed command moved into the cgroup v2 directory DIR before it starts
                     (`sh -c 'echo $$ > DIR/cgroup.procs && exec COMMAND'`; the sampler stays
                     out): a pod's CPU limit is a CFS quota (DIR/cpu.max), not an affinity mask, and
                     LibTorch sizes its thread pools from the mask. Make one as root, once:
                       mkdir /sys/fs/cgroup/pp-1cpu && echo "100000 100000" > /sys/fs/cgroup/pp-1cpu/cpu.max
                     (the parent's cgroup.subtree_control must list +cpu: docs/performance.md). A
                     quota of one CPU counts as --cpus 1 for the targets and the traced rounds
  --copies 1,2,4,8   the full probe on GPU 0 (--device 0, or --device's selection) with
                     PRECISION_PROBE_BENCH_GPU_COPIES=N, alternating: the probe's bench-only
                     switch that plans GPU 0 as N devices, each with a context of its own (read by
                     the probe, not by this script). Per N wall, tree CPU time, summed Pss and the
                     GPUs the report shows; what each added device costs against the smallest N
                     (the median over rounds); a build that does not read the variable is said to
  --device SEL       passed to the probe; `cpu` also makes the Python check and the floor CPU-only
                     (the floor loads libtorch_cpu.so, no driver): a dry run without a GPU
  --orders, --variant NAME:VAR=VALUE[,...]  the engine's start-up orders and other settings of its
                     variables, each alternating with the default (docs/engine.md); with --cpus or
                     --cgroup each variant also runs traced beside the traced full probe: when its
                     GPU's checks were done, against the default's
  --floor-gemms      also the floor with one 256^3 GEMM of each dtype the probe's checks run
                     through cuBLAS (fp32, tf32, fp16, bf16, int8: floor.c --gemms), in the same
                     rounds: the probe's time and memory against what the image's stack charges for
                     its GEMMs' first calls, which any PyTorch program pays (informative: the targets
                     stay against the floor)

The floor is compiled with cc into a temporary directory and run once, untimed, before the rounds
(a floor that fails stops the bench, its reason said); it loads the torch the probe finds (the
probe's --quick report, stack.location) unless --torch-lib DIR names one. Prints a line per round
as it ends (each command's wall time; when its GPU's checks were done where traced; its tree's Pss
where sampled), then the per-process memory, the targets and the table last; writes
bench-startup.json (every run's figures, per process; after each group the groups done so far,
marked "partial": true, so that a bench stopped by a time limit leaves what it measured).
Targets (docs/performance.md): on one CPU the full probe at most 2x the floor and at least 2.5x
faster than the Python check, the GPU's checks done no later than without the CPU's; on all CPUs
no slower than the baseline run for run, --quick within 5 %; the tree's summed Pss at most 924
MiB for one GPU, each added device at most 200 MiB and 0.2 s of CPU. Exit status: 0
measured (targets met or not), 1 a bad value or a command that could not be measured (one line
says which), 2 a bad flag.

  usage: bench/startup.py [--probe build-gpu/bin/precision-probe] [--baseline PROBE] [--runs 7]
                          [--cpus N] [--cgroup DIR] [--copies N[,N...]] [--device SEL] [--torch-lib DIR]
                          [--python PYTHON] [--floor-order beside|init-first] [--no-floor] [--floor-gemms]
                          [--memory-runs 3] [--sample-ms 10] [--orders]
                          [--variant NAME:VAR=VALUE[,...]]... [--out DIR]
"""

import argparse
import ctypes
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PYTHON_CHECK = (
    "import torch\n"
    "a = torch.randn(3, 3, device='cuda', dtype=torch.float16)\n"
    "print('FP16 ok', (a @ a).float().sum().item())\n"
    "b = a.bfloat16()\n"
    "print('BF16 ok', (b @ b).float().sum().item(), torch.cuda.is_bf16_supported())\n"
)
# The same on the CPU, for runs without a GPU (--device cpu).
PYTHON_CHECK_CPU = (
    "import torch\n"
    "a = torch.randn(3, 3, dtype=torch.float16)\n"
    "print('FP16 ok', (a @ a).float().sum().item())\n"
    "b = a.bfloat16()\n"
    "print('BF16 ok', (b @ b).float().sum().item())\n"
)
HERE = os.path.dirname(os.path.abspath(__file__))
FLOOR_SOURCE = os.path.join(HERE, "floor.c")
COPIES_VARIABLE = "PRECISION_PROBE_BENCH_GPU_COPIES"
SKIP_CPU_VARIABLE = "PRECISION_PROBE_BENCH_SKIP_CPU"  # the probe's switch: the CPU's checks left out
FLOOR_GEMMS = "floor + one GEMM per dtype"  # --floor-gemms' row
PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_GRACE_S = 2.0

# The targets of issue 39 (docs/performance.md).
ONE_CPU_FLOOR_RATIO = 2.0  # full probe / floor, at most
ONE_CPU_PYTHON_SPEEDUP = 2.5  # Python check / full probe, at least
TREE_PSS_MIB = 924.0  # the tree's summed Pss for one GPU, at most
ADDED_DEVICE_PSS_MIB = 200.0  # per further planned device, at most
ADDED_DEVICE_CPU_S = 0.2
QUICK_BASELINE_RATIO = 1.05


# --- /proc: a process tree, its members and their memory ----------------------------------------


def children_of(pid, proc="/proc"):
    """The children of every thread of `pid` (/proc/PID/task/TID/children), [] where it is gone."""
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return []
    found = []
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/children") as f:
                found.extend(int(word) for word in f.read().split())
        except (OSError, ValueError):
            continue
    return found


def parents(proc="/proc"):
    """{pid: ppid} of every process, from /proc/PID/stat (where no children files are)."""
    table = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so split after the
        # last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 2 and fields[1].isdigit():
            table[int(name)] = int(fields[1])
    return table


def has_children_files(proc="/proc"):
    pid = os.getpid()
    return os.path.exists(f"{proc}/{pid}/task/{pid}/children")


def tree(root, proc="/proc", by_children=True):
    """(pid, parent) of every process below `root` (not `root` itself), parents before children."""
    if by_children:
        below = lambda pid: children_of(pid, proc)  # noqa: E731
    else:
        table = {}
        for pid, ppid in parents(proc).items():
            table.setdefault(ppid, []).append(pid)
        below = lambda pid: sorted(table.get(pid, []))  # noqa: E731
    found, todo = [], [root]
    while todo:
        parent = todo.pop(0)
        kids = below(parent)
        found.extend((kid, parent) for kid in kids)
        todo.extend(kids)
    return found


def descendants(root, proc="/proc", by_children=True):
    """Every process below `root` (not `root` itself), parents before their children."""
    return [pid for pid, _ in tree(root, proc, by_children)]


def read_rollup(pid, proc="/proc"):
    """Rss, Pss and Private_Dirty of `pid` in kB (smaps_rollup), or None: gone, a zombie, or not
    readable."""
    try:
        with open(f"{proc}/{pid}/smaps_rollup") as f:
            text = f.read()
    except OSError:
        return None
    figures = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss", "Private_Dirty"):
            words = value.split()
            if words and words[0].isdigit():
                figures[key] = int(words[0])
    return figures if "Pss" in figures else None


def read_hwm(pid, proc="/proc"):
    """VmHWM of `pid` in kB: the kernel's own peak of its resident set (since its exec), or 0."""
    try:
        with open(f"{proc}/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def read_argv(pid, proc="/proc"):
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [w.decode(errors="replace") for w in raw.split(b"\0")[:-1]] or None


def read_comm(pid, proc="/proc"):
    try:
        with open(f"{proc}/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def role_of(argv, comm, command_role, command_argv=None):
    """(role, name) of a process of the tree: the command itself has `command_role` and is named as
    it was run; below it an executable named *engine* is an engine, one run with a verb of its own
    (`--driver-agent nvml`, `--image-reader`) an agent, anything else a child. The name is the
    executable's and its verb."""
    if command_role is not None:
        return command_role, os.path.basename(command_argv[0]) if command_argv else comm or "?"
    base = os.path.basename(argv[0]) if argv else comm or "?"
    words = [base]
    if len(argv or []) > 1 and argv[1].startswith("--"):
        words.append(argv[1])
        if len(argv) > 2 and not argv[2].startswith("-"):
            words.append(os.path.basename(argv[2]) if "/" in argv[2] else argv[2])
    if "engine" in base:
        return "engine", " ".join(words)
    return ("agent" if len(words) > 1 else "child"), " ".join(words)


class TreeSampler:
    """Samples the memory of every process below `root` every `interval_s`, on a thread of its own
    (on `cpus` where given). `command` is the pid of the measured command (the root's child)."""

    def __init__(self, root, interval_s, command_role, command_argv, proc="/proc", cpus=None):
        self.root, self.interval_s, self.command_role, self.proc = root, interval_s, command_role, proc
        self.command_argv = command_argv
        self.own_argv = read_argv(root, proc)
        self.pre_exec = 0  # samples of a child between its fork and its exec, not counted
        self.cpus = cpus
        self.command = None
        self.by_children = has_children_files(proc) if proc == "/proc" else True
        self.processes = {}  # pid -> figures
        self.samples, self.busy_s, self.peak_tree_kb, self.peak_parts = 0, 0.0, 0, {}
        self.start = time.perf_counter()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def run(self):
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def _loop(self):
        if self.cpus:
            try:
                os.sched_setaffinity(0, self.cpus)  # this thread only
            except OSError:
                pass
        while not self.stopping.is_set():
            began = time.perf_counter()
            self.sample_once()
            spent = time.perf_counter() - began
            self.busy_s += spent
            self.stopping.wait(max(0.0, self.interval_s - spent))

    def sample_once(self):
        now = time.perf_counter() - self.start
        total, parts, argvs = 0, {}, {self.root: self.own_argv}
        for pid, parent in tree(self.root, self.proc, self.by_children):
            argv = argvs[pid] = read_argv(pid, self.proc)
            if argv is None or argv == argvs.get(parent):
                # Between its fork and its exec a child still has its parent's argv, and, spawned
                # with vfork or posix_spawn, its parent's very memory: counting it would count
                # that twice. Not counted (nor is a process without argv: a zombie, a kernel's).
                self.pre_exec += argv is not None
                continue
            rollup = read_rollup(pid, self.proc)
            if rollup is None:
                continue
            p = self.processes.setdefault(pid, {"pid": pid, "first_s": now, "samples": 0, "pss_kb": 0,
                                                 "private_dirty_kb": 0, "rss_kb": 0})
            p["argv"], p["comm"] = argv, read_comm(pid, self.proc) or p.get("comm", "")
            p["last_s"], p["samples"] = now, p["samples"] + 1
            p["pss_kb"] = max(p["pss_kb"], rollup["Pss"])
            p["private_dirty_kb"] = max(p["private_dirty_kb"], rollup.get("Private_Dirty", 0))
            p["rss_kb"] = max(p["rss_kb"], rollup.get("Rss", 0), read_hwm(pid, self.proc))
            total += rollup["Pss"]
            parts[pid] = rollup["Pss"]
        self.samples += 1
        if total > self.peak_tree_kb:
            self.peak_tree_kb, self.peak_parts = total, parts

    def result(self):
        """Per process (its role, name, peaks in MiB, when seen) and the tree's summed Pss peak."""
        listed = sorted(self.processes.values(), key=lambda p: (p["first_s"], p["pid"]))
        processes, names = [], {}
        for p in listed:
            role, name = role_of(p["argv"], p["comm"], self.command_role if p["pid"] == self.command else None,
                                 self.command_argv)
            names[name] = names.get(name, 0) + 1
            if names[name] > 1:
                name = f"{name} #{names[name]}"
            processes.append({"pid": p["pid"], "role": role, "name": name, "comm": p.get("comm", ""),
                              "peak_pss_mib": p["pss_kb"] / 1024.0,
                              "peak_private_dirty_mib": p["private_dirty_kb"] / 1024.0,
                              "peak_rss_mib": p["rss_kb"] / 1024.0, "samples": p["samples"],
                              "first_s": round(p["first_s"], 4), "last_s": round(p["last_s"], 4),
                              "pss_at_tree_peak_mib": self.peak_parts.get(p["pid"], 0) / 1024.0})
        return {"samples": self.samples, "pre_exec_skipped": self.pre_exec,
                "sampler_busy_ms_mean": 1e3 * self.busy_s / self.samples if self.samples else 0.0,
                "peak_tree_pss_mib": self.peak_tree_kb / 1024.0, "processes": processes}


# --- One measured run, in a fresh process of its own (this script, --measure SPEC) ---------------


def become_subreaper():
    """Orphans of the command's tree become this process's children: it reaps them, and their CPU
    time counts in RUSAGE_CHILDREN."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_leftovers(by_children, grace_s=LEFTOVER_GRACE_S):
    """Reaps what the command left (adopted as its orphans' subreaper) until nothing of its tree is
    left, zombies included: their CPU time counts then. What still runs after `grace_s` is killed
    (SIGKILL, by pid: processes of the measured command) and named; after three such graces, what
    remains is left."""
    left = []
    for _ in range(3):
        deadline = time.monotonic() + grace_s
        while True:
            try:
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                pass
            alive = descendants(os.getpid(), by_children=by_children)
            if not alive:
                return left
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        for pid in alive:
            left.append(f"{pid} {read_comm(pid)}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return left


def gpu_done_ms(stderr):
    """When the probe's last GPU plan was done (PRECISION_PROBE_TRACE=1's "plan N (GPU I) done";
    "worker GPU N done" before engine sessions,
    ms from the probe's start), or None where the trace has no such line."""
    done = [float(m.group(1)) for m in
            re.finditer(r"^trace: \S+\s+([\d.]+) ms\s+\d+ flt\s+"
                        r"(?:worker GPU \d+ done|plan \d+ \(GPU \d+\) done)", stderr, re.M)]
    return max(done) if done else None


def cpu_checked(stderr):
    """Whether the traced run checked the CPU (its trace's "plan N (CPU) done", "worker CPU done"
    before engine sessions): a build that does not read PRECISION_PROBE_BENCH_SKIP_CPU does."""
    return re.search(r"^trace: \S+\s+[\d.]+ ms\s+\d+ flt\s+(?:worker CPU done|plan \d+ \(CPU\) done)",
                     stderr, re.M) is not None


def report_summary(text):
    """What a --format json report says of itself: its exit code and the GPUs it reports."""
    try:
        report = json.loads(text)
    except ValueError:
        return None
    if not isinstance(report, dict):
        return None
    devices = report.get("devices") or []
    return {"exit_code": report.get("exit_code"),
            "cuda_devices": sum(1 for d in devices if isinstance(d, dict) and d.get("kind") == "cuda")}


def measure_command(spec):
    """Runs spec["argv"] once (on spec["cpus"]), sampling its tree; returns its figures."""
    sys.setswitchinterval(0.0005)  # the exit is seen within half a millisecond of a sample
    subreaper = become_subreaper()
    allowed = sorted(os.sched_getaffinity(0))
    cpus = spec.get("cpus")
    others = [c for c in allowed if not cpus or c not in cpus] or allowed
    sampler = None
    if spec.get("sample_ms", 0) > 0:
        sampler = TreeSampler(os.getpid(), spec["sample_ms"] / 1e3, spec.get("role"), spec["argv"], cpus=others)
        sampler.run()
    if cpus:
        os.sched_setaffinity(0, cpus)  # this thread; the command inherits it
    env = dict(os.environ, **spec.get("env", {}))
    argv = in_cgroup(spec.get("cgroup"), spec["argv"])
    if spec.get("cgroup") and shutil.which(spec["argv"][0], path=env.get("PATH")) is None:
        return {"error": f"{spec['argv'][0]}: No such file or directory"}  # what exec would say
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        try:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=out if spec.get("report") else subprocess.DEVNULL,
                                     stderr=err, env=env)
        except OSError as e:
            if sampler:
                sampler.stop()
            return {"error": f"{spec['argv'][0]}: {e.strerror}"}
        if sampler:
            sampler.command = child.pid
        code = child.wait()
        wall = time.perf_counter() - start
        os.sched_setaffinity(0, allowed)
        leftovers = reap_leftovers(sampler.by_children if sampler else has_children_files())
        if sampler:
            sampler.stop()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if spec.get("cgroup") and code == CGROUP_MOVE_FAILED:
        return {"error": f"cannot move it into the cgroup {spec['cgroup']}: {stderr.strip()[-300:]}"}
    figures = {"wall_s": wall, "exit_code": code, "cpu_user_s": usage.ru_utime,
               "cpu_sys_s": usage.ru_stime, "cpu_s": usage.ru_utime + usage.ru_stime,
               "max_rss_mib": usage.ru_maxrss / 1024.0, "subreaper": subreaper, "leftovers": leftovers,
               "cpus": cpus, "stderr_tail": stderr[-300:].strip()}
    if spec.get("report"):
        figures["report"] = report_summary(stdout)
    if spec.get("trace"):
        figures["gpu_done_ms"] = gpu_done_ms(stderr)
        figures["cpu_checked"] = cpu_checked(stderr)
    if sampler:
        figures["memory"] = sampler.result()
    return figures


CGROUP_MOVE_FAILED = 125  # the wrapping shell's exit where it could not move itself


def in_cgroup(directory, argv):
    """`argv` started in the cgroup `directory` (None: as it is): a shell moves itself there and
    execs the command, so that the command and its children, and nothing of the wrapper, count
    against the cgroup's quota. The command's pid is the shell's; a move that fails is exit 125."""
    if not directory:
        return argv
    return ["sh", "-c", f'echo $$ > "$1/cgroup.procs" || exit {CGROUP_MOVE_FAILED}; shift; exec "$@"',
            "bench-cgroup", directory, *argv]


# --- The rounds ---------------------------------------------------------------------------------


def run_once(spec):
    """One run of `spec` in a fresh wrapper process (so that RUSAGE_CHILDREN is that run's)."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    try:
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.exit(f"bench: the wrapper of {spec['name']!r} failed (exit {proc.returncode}): "
                 f"{proc.stderr.strip()[-400:]}")
    if "error" in figures:
        sys.exit(f"bench: {spec['name']!r} could not be started: {figures['error']}")
    return figures


def processes_over_runs(runs):
    """Per process name: its role, the median and largest of its per-run peaks, and in how many
    runs it was seen (a short-lived process may be missed between two samples)."""
    seen = {}
    for run in runs:
        for p in (run.get("memory") or {}).get("processes", []):
            seen.setdefault(p["name"], []).append(p)
    return {name: {"role": ps[0]["role"], "comm": ps[0]["comm"], "seen_runs": len(ps),
                   "peak_pss_mib": statistics.median(p["peak_pss_mib"] for p in ps),
                   "peak_pss_max_mib": max(p["peak_pss_mib"] for p in ps),
                   "peak_private_dirty_mib": statistics.median(p["peak_private_dirty_mib"] for p in ps),
                   "peak_private_dirty_max_mib": max(p["peak_private_dirty_mib"] for p in ps)}
            for name, ps in seen.items()}


def summarise(spec, runs, sampled=()):
    """A row: the timed runs' figures (wall, tree CPU time, exit codes), and the memory of the
    sampled runs (`sampled`: the same command, in rounds of their own)."""
    walls = [r["wall_s"] for r in runs]
    row = {"name": spec["name"], "argv": spec["argv"], "env": spec.get("env", {}), "cpus": spec.get("cpus"),
           "runs": len(runs), "cold_s": walls[0], "median_s": statistics.median(walls), "min_s": min(walls),
           "exit_codes": sorted({r["exit_code"] for r in [*runs, *sampled]}),
           "cpu_s": statistics.median(r["cpu_s"] for r in runs),
           "leftovers": sorted({p for r in [*runs, *sampled] for p in r["leftovers"]}),
           "stderr": runs[-1]["stderr_tail"], "per_run": runs}
    memories = [r["memory"] for r in sampled if r.get("memory")]
    if memories:
        row["sampled_runs"] = len(memories)
        row["sampled_median_s"] = statistics.median(r["wall_s"] for r in sampled)
        row["tree_pss_mib"] = statistics.median(m["peak_tree_pss_mib"] for m in memories)
        row["tree_pss_max_mib"] = max(m["peak_tree_pss_mib"] for m in memories)
        row["samples"] = sum(m["samples"] for m in memories)
        row["processes"] = processes_over_runs(sampled)
        row["per_sampled_run"] = list(sampled)
    reports = [r["report"] for r in [*runs, *sampled] if r.get("report")]
    if reports:
        row["cuda_devices"] = sorted({r["cuda_devices"] for r in reports})
    done = [r["gpu_done_ms"] for r in runs if r.get("gpu_done_ms") is not None]
    if "gpu_done_ms" in runs[0]:
        row["gpu_done_ms"] = statistics.median(done) if done else None
        row["cpu_checked"] = [r.get("cpu_checked") for r in runs]
    return row


def round_ratios(raw, name, reference, key="wall_s"):
    """Per round, `name`'s figure over `reference`'s (they alternated): the median, and them all."""
    ratios = [a[key] / b[key] for a, b in zip(raw[name], raw[reference])
              if a.get(key) is not None and b.get(key)]
    return (statistics.median(ratios) if ratios else None), ratios


def per_added_device(raw, names, counts, key):
    """Per N of `counts` past the first: the median over rounds of (figure at N - figure at the
    first N) / (N - first N)."""
    first, out = counts[0], {}
    for n in counts[1:]:
        steps = [(a[key] - b[key]) / (n - first) for a, b in zip(raw[names[n]], raw[names[first]])
                 if a.get(key) is not None and b.get(key) is not None]
        out[n] = statistics.median(steps) if steps else None
    return out


def tree_pss(run):
    return (run.get("memory") or {}).get("peak_tree_pss_mib")


# --- Set-up: CPUs, the floor, the torch it loads ------------------------------------------------


def first_cpus(n):
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= n <= len(allowed):
        sys.exit(f"bench: --cpus {n}: this process may run on {len(allowed)} CPU(s) "
                 f"({','.join(map(str, allowed))}); give 1 to {len(allowed)}")
    return allowed[:n]


def cgroup_quota(directory):
    """The CPU quota of the cgroup v2 `directory` in whole CPUs, rounded up; exits (one line) where
    the directory is not a cgroup whose cgroup.procs this process may write, where its cpu
    controller is not enabled (no cpu.max: its parent's cgroup.subtree_control lacks +cpu) or
    where cpu.max sets no quota ("max")."""
    procs = os.path.join(directory, "cgroup.procs")
    if not (os.path.isfile(procs) and os.access(procs, os.W_OK)
            and os.path.isfile(os.path.join(directory, "cgroup.controllers"))):
        sys.exit(f"bench: --cgroup {directory}: not a cgroup v2 directory whose cgroup.procs this process may "
                 "write (make one as root: docs/performance.md)")
    parent = os.path.dirname(os.path.abspath(directory))
    try:
        with open(os.path.join(directory, "cpu.max")) as f:
            quota, _, period = f.read().strip().partition(" ")
    except OSError:
        sys.exit(f"bench: --cgroup {directory}: no cpu.max: the cpu controller is not enabled there "
                 f"(echo +cpu > {parent}/cgroup.subtree_control)")
    if not quota.isdigit() or not period.isdigit() or int(period) == 0:
        sys.exit(f"bench: --cgroup {directory}: cpu.max sets no CPU quota ({quota} {period}): "
                 f"echo \"100000 100000\" > {directory}/cpu.max for one CPU")
    return max(1, -(-int(quota) // int(period)))


def parse_copies(text):
    try:
        counts = [int(w) for w in text.split(",")]
    except ValueError:
        counts = []
    if not counts or any(n < 1 for n in counts) or len(set(counts)) != len(counts):
        sys.exit(f"bench: --copies {text!r}: expected distinct positive counts, such as 1,2,4,8")
    return sorted(counts)


def compile_floor(directory, cc=None):
    """Compiles bench/floor.c into `directory`; its path."""
    cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("bench: no C compiler (cc) to build the floor; install one or give --no-floor")
    binary = os.path.join(directory, "floor")
    proc = subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-std=c11", "-pthread", "-o", binary, FLOOR_SOURCE,
                           "-ldl"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: {cc} could not build {FLOOR_SOURCE}: {proc.stderr.strip()[-400:]}")
    return binary


def torch_lib_of(probe, env=None):
    """The lib directory of the torch `probe` finds (its --quick report's stack.location)."""
    proc = subprocess.run([probe, "--quick", "--format", "json"], capture_output=True, text=True,
                          env=env, check=False)
    try:
        stack = json.loads(proc.stdout).get("stack") or {}
    except ValueError:
        stack = {}
    if not stack.get("location"):
        sys.exit(f"bench: {probe} --quick found no PyTorch ({stack.get('error') or proc.stderr.strip()[-200:]}); "
                 "give --torch-lib DIR")
    return os.path.join(stack["location"], "lib")


def floor_argv(binary, lib_dir, cpu_only, order):
    if cpu_only:
        return [binary, "--no-driver", os.path.join(lib_dir, "libtorch_cpu.so")]
    return [binary, "--order", order, os.path.join(lib_dir, "libtorch_cuda.so")]


def check_floor(argv, cpus):
    """One untimed run of the floor (on the rounds' CPUs): it must get as far as it exists to."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    if proc.returncode != 0:
        sys.exit(f"bench: the floor ({' '.join(argv)}) failed, exit {proc.returncode}: {proc.stderr.strip()} "
                 "(bench/floor.c lists its exit codes; --no-floor leaves it out)")


# --- Printing -----------------------------------------------------------------------------------


def fmt(value, spec=".3f", none="-"):
    return none if value is None else format(value, spec)


def print_processes(rows, names):
    print("peak memory per process (MiB; median over runs of each run's peak; sampled, so a process "
          "that lived less than the interval can be missed: 'seen' says in how many runs it was)")
    print(f"  {'command':30} {'process':42} {'role':8} {'Pss':>7} {'Priv.dirty':>10} {'seen':>6}")
    for row in rows:
        if row["name"] not in names or "processes" not in row:
            continue
        for name, p in sorted(row["processes"].items(), key=lambda kv: -kv[1]["peak_pss_mib"]):
            print(f"  {row['name'][:30]:30} {name[:42]:42} {p['role']:8} {p['peak_pss_mib']:7.0f} "
                  f"{p['peak_private_dirty_mib']:10.0f} {p['seen_runs']:>3}/{row['sampled_runs']}")


def print_copies(copies):
    print(f"copies of GPU 0 ({COPIES_VARIABLE}): {'N':>3} {'wall s':>8} {'CPU s':>7} {'tree Pss MiB':>13} "
          f"{'GPUs in report':>15}")
    for n, c in copies["by_count"].items():
        print(f"{'':38}{n:>3} {c['median_s']:8.3f} {c['cpu_s']:7.3f} {fmt(c.get('tree_pss_mib'), '.0f'):>13} "
              f"{','.join(map(str, c.get('cuda_devices', []))) or '-':>15}")
    first = copies["reference"]
    for n, inc in copies["per_added_device"].items():
        print(f"  each device added from {first} to {n}: {fmt(inc['pss_mib'], '.0f')} MiB of Pss, "
              f"{fmt(inc['cpu_s'])} s of CPU, {fmt(inc['wall_s'])} s of wall")
    if copies["honoured"] is False:
        print(f"  NOTE: the report showed the same GPUs for every N: this build does not read {COPIES_VARIABLE}")


def largest(row):
    """The process of `row` with the largest Pss peak: 'name MiB'."""
    if not row.get("processes"):
        return "-"
    name, p = max(row["processes"].items(), key=lambda kv: kv[1]["peak_pss_mib"])
    return f"{p['peak_pss_mib']:.0f} {name[:28]}"


def print_table(rows):
    print(f"{'command':38} {'cold s':>7} {'median s':>8} {'CPU s':>7} {'tree Pss MiB':>12}  {'largest Pss MiB':33} "
          f"{'exit':>4}")
    for r in rows:
        print(f"{r['name'][:38]:38} {r['cold_s']:7.3f} {r['median_s']:8.3f} {r['cpu_s']:7.3f} "
              f"{fmt(r.get('tree_pss_mib'), '.0f'):>12}  {largest(r):33} {','.join(map(str, r['exit_codes'])):>4}")


# --- main ---------------------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", help="another build of the probe (the commit before), run for run")
    parser.add_argument("--cpus", type=int, help="every timed command on the first N CPUs of the affinity set")
    parser.add_argument("--cgroup", help="DIR: every timed command in this cgroup v2 directory (a CPU quota)")
    parser.add_argument("--copies", help="N[,N...]: the full probe with PRECISION_PROBE_BENCH_GPU_COPIES=N")
    parser.add_argument("--device", help="passed to the probe (cpu: the Python check and the floor CPU-only too)")
    parser.add_argument("--torch-lib", help="the floor's torch/lib directory (default: the probe's torch)")
    parser.add_argument("--python", default=sys.executable, help="the Python check's interpreter")
    parser.add_argument("--floor-order", choices=("beside", "init-first"), default="beside")
    parser.add_argument("--no-floor", action="store_true", help="leave the floor out")
    parser.add_argument("--floor-gemms", action="store_true",
                        help="also time the floor with one GEMM per dtype (floor.c --gemms), same rounds")
    parser.add_argument("--sample-ms", type=int, default=10, help="memory sampling interval (0: no memory rounds)")
    parser.add_argument("--memory-runs", type=int, default=3, help="rounds sampled for memory, after the timed ones")
    parser.add_argument("--orders", action="store_true", help="also time the engine's start-up orders")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME:VAR=VALUE[,VAR=VALUE...]: also time the full probe so, against the default")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        return args
    if args.runs < 1:
        sys.exit(f"bench: --runs {args.runs}: give 1 or more")
    if args.sample_ms < 0:
        sys.exit(f"bench: --sample-ms {args.sample_ms}: give 0 (no sampling) or more")
    if args.memory_runs < 0:
        sys.exit(f"bench: --memory-runs {args.memory_runs}: give 0 (no memory rounds) or more")
    for name in ("probe", "baseline"):
        path = getattr(args, name)
        if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            sys.exit(f"bench: --{name} {path}: not an executable file (build first: ./dev gpu-test)")
    if args.floor_gemms and args.no_floor:
        sys.exit("bench: --floor-gemms adds GEMMs to the floor: not with --no-floor")
    if args.floor_gemms and args.device == "cpu":
        sys.exit("bench: --floor-gemms runs the floor's GEMMs on GPU 0: not with --device cpu")
    if args.torch_lib and not os.path.isdir(args.torch_lib):
        sys.exit(f"bench: --torch-lib {args.torch_lib}: not a directory")
    args.cpu_list = first_cpus(args.cpus) if args.cpus is not None else None
    args.cgroup_cpus = cgroup_quota(args.cgroup) if args.cgroup is not None else None
    args.copy_counts = parse_copies(args.copies) if args.copies is not None else []
    args.variants = [parse_variant(text) for text in args.variant]
    return args


def parse_variant(text):
    """NAME:VAR=VALUE[,VAR=VALUE...] as (NAME, {VAR: VALUE})."""
    name, _, settings = text.partition(":")
    pairs = [s.partition("=") for s in settings.split(",")]
    if not name or not settings or any(not k or not eq for k, eq, _ in pairs):
        sys.exit(f"bench: --variant {text!r}: expected NAME:VAR=VALUE[,VAR=VALUE...]")
    return name, {k: v for k, _, v in pairs}


class Rounds:
    """The groups of commands, each alternating round after round: `runs` timed rounds (nothing
    sampled: the sampler's reads of smaps_rollup slow a process that maps memory), then
    `memory_runs` rounds sampled every `sample_ms` for the memory figures. Every run kept by name."""

    def __init__(self, runs, memory_runs, sample_ms):
        self.runs, self.memory_runs, self.sample_ms = runs, memory_runs, sample_ms
        self.rows, self.raw, self.sampled = [], {}, {}

    def alternate(self, specs, memory=True):
        timed = {s["name"]: [] for s in specs}
        sampled = {s["name"]: [] for s in specs}
        for i in range(self.runs):
            for s in specs:
                timed[s["name"]].append(run_once(dict(s, sample_ms=0)))
            print_round(f"round {i + 1}/{self.runs}", specs, timed)
        memory_runs = self.memory_runs if memory and self.sample_ms > 0 else 0
        for i in range(memory_runs):
            for s in specs:
                sampled[s["name"]].append(run_once(dict(s, sample_ms=self.sample_ms)))
            print_round(f"memory round {i + 1}/{memory_runs}", specs, sampled)
        self.raw.update(timed)
        self.sampled.update(sampled)
        self.rows.extend(summarise(s, timed[s["name"]], sampled[s["name"]]) for s in specs)


def print_round(label, specs, runs):
    """One line per round as it ends (a bench stopped part way still shows what it measured): each
    command's wall time, with when its GPU's checks were done where traced, and its tree's Pss where
    sampled."""
    def said(run):
        text = f"{run['wall_s']:.3f} s"
        if run.get("gpu_done_ms") is not None:
            text += f", GPU done at {run['gpu_done_ms']:.0f} ms"
        pss = tree_pss(run)
        if pss is not None:
            text += f", tree Pss {pss:.0f} MiB"
        return text
    print(f"{label}: " + "; ".join(f"{s['name']} {said(runs[s['name']][-1])}" for s in specs), flush=True)


def without_cpu(device):
    """--device's selection less the CPU, as probe arguments (the switch that leaves the CPU's checks
    out refuses a selection of it): `all` is `gpu`; None where nothing is left."""
    if not device:
        return []
    kept = ["gpu" if e == "all" else e for e in (e.strip().lower() for e in device.split(",")) if e != "cpu"]
    return ["--device", ",".join(kept)] if kept else None


def plan(args, cpus, floor, floor_gemms=None):
    """The groups to time, in order: lists of specs."""
    def spec(name, argv, role, env=None, report=False, trace=False):
        return {"name": name, "argv": argv, "role": role, "env": env or {}, "cpus": cpus, "report": report,
                "trace": trace, "cgroup": args.cgroup}

    device = ["--device", args.device] if args.device else []
    probe = [args.probe, *device, "--format", "json"]
    base = [args.baseline, *device, "--format", "json"] if args.baseline else None
    groups = []
    if shutil.which("nvidia-smi"):
        groups.append([spec("nvidia-smi compute_cap", ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv"],
                            "nvidia-smi")])
    quick = [spec("precision-probe --quick", [args.probe, "--quick", "--format", "json"], "probe", report=True)]
    if base:
        quick.append(spec("baseline --quick", [args.baseline, "--quick", "--format", "json"], "probe", report=True))
    groups.append(quick)
    cpu_only = args.device == "cpu"
    full = [spec("python3 torch fp16/bf16 check", [args.python, "-c", PYTHON_CHECK_CPU if cpu_only else PYTHON_CHECK],
                 "python")]
    if floor:
        full.append(spec("floor (LibTorch + context)", floor, "floor"))
    if floor_gemms:
        full.append(spec(FLOOR_GEMMS, floor_gemms, "floor"))
    full.append(spec("precision-probe (full)", probe, "probe", report=True))
    if base:
        full.append(spec("baseline (full)", base, "probe", report=True))
    groups.append(full)
    if (cpus or args.cgroup) and not cpu_only and without_cpu(args.device) is not None:
        # Each --variant traced too, in the same rounds: when its GPU's checks were done.
        groups.append([spec("traced: precision-probe (full)", probe, "probe", {"PRECISION_PROBE_TRACE": "1"},
                            trace=True),
                       spec("traced: without the CPU's checks", [args.probe, *without_cpu(args.device), "--format",
                                                                  "json"], "probe",
                            {"PRECISION_PROBE_TRACE": "1", SKIP_CPU_VARIABLE: "1"}, trace=True),
                       *[spec(f"traced: variant {name}", probe, "probe", {**env, "PRECISION_PROBE_TRACE": "1"},
                              trace=True) for name, env in args.variants]])
    if args.orders:
        groups.append([spec(f"engine start {order}", probe, "probe", {"PRECISION_PROBE_ENGINE_START": order})
                       for order in ("overlap", "cuinit-beside", "driver-first", "libtorch-first")])
    variants = [spec(f"variant {name}", probe, "probe", env, report=True) for name, env in args.variants]
    if variants:
        groups.append([spec("default (variants)", probe, "probe", report=True), *variants])
    if args.copy_counts:
        # GPU 0 alone (unless --device says otherwise), planned as N devices.
        only = ["--device", args.device or "0", "--format", "json"]
        copies = [spec(f"copies {n}", [args.probe, *only], "probe", {COPIES_VARIABLE: str(n)}, report=True)
                  for n in args.copy_counts]
        groups.append(copies + ([spec("baseline (copies)", [args.baseline, *only], "probe", report=True)]
                                if base else []))
    groups.append([spec("precision-probe --no-amp", [args.probe, *device, "--no-amp", "--format", "json"], "probe")])
    return groups


def copies_summary(rounds, counts):
    names = {n: f"copies {n}" for n in counts}
    by_name = {r["name"]: r for r in rounds.rows}
    # Pss from the sampled rounds, CPU and wall time from the timed ones; each per round.
    sampled = {name: [{"tree_pss_mib": tree_pss(run)} for run in rounds.sampled[name]] for name in names.values()}
    pss = per_added_device(sampled, names, counts, "tree_pss_mib")
    cpu = per_added_device(rounds.raw, names, counts, "cpu_s")
    wall = per_added_device(rounds.raw, names, counts, "wall_s")
    seen = {n: tuple(by_name[names[n]].get("cuda_devices", [])) for n in counts}
    honoured = len(set(seen.values())) == len(counts) if len(counts) > 1 else None
    return {"reference": counts[0], "honoured": honoured,
            "by_count": {n: {k: by_name[names[n]].get(k) for k in ("median_s", "cpu_s", "tree_pss_mib", "cuda_devices")}
                         for n in counts},
            "per_added_device": {n: {"pss_mib": pss[n], "cpu_s": cpu[n], "wall_s": wall[n]} for n in counts[1:]}}


def summarise_all(args, rounds, cpus, all_cpus):
    """The headline figures and the targets (None: not measured in this run)."""
    by_name = {r["name"]: r for r in rounds.rows}
    raw = rounds.raw
    full, python, floor = "precision-probe (full)", "python3 torch fp16/bf16 check", "floor (LibTorch + context)"
    s = {"cpus": len(cpus) if cpus else None, "all_cpus": all_cpus, "cgroup": args.cgroup,
         "cgroup_cpus": args.cgroup_cpus, "full_s": by_name[full]["median_s"],
         "full_cpu_s": by_name[full]["cpu_s"], "full_tree_pss_mib": by_name[full].get("tree_pss_mib"),
         "full_cuda_devices": by_name[full].get("cuda_devices"), "python_check_s": by_name[python]["median_s"],
         "quick_s": by_name["precision-probe --quick"]["median_s"],
         "amp_cost_s": by_name[full]["median_s"] - by_name["precision-probe --no-amp"]["median_s"]}
    s["speedup_vs_python"], s["speedup_vs_python_ratios"] = round_ratios(raw, python, full)
    s["floor_s"] = by_name[floor]["median_s"] if floor in by_name else None
    s["full_vs_floor"], s["full_vs_floor_ratios"] = round_ratios(raw, full, floor) if floor in raw else (None, [])
    if FLOOR_GEMMS in raw:  # informative: what the stack charges for the GEMMs' first calls, paid too
        s["floor_gemms_s"] = by_name[FLOOR_GEMMS]["median_s"]
        s["floor_gemms_tree_pss_mib"] = by_name[FLOOR_GEMMS].get("tree_pss_mib")
        s["floor_tree_pss_mib"] = by_name[floor].get("tree_pss_mib")
        s["full_vs_floor_gemms"], s["full_vs_floor_gemms_ratios"] = round_ratios(raw, full, FLOOR_GEMMS)
    if "sampled_median_s" in by_name[full]:
        s["sampling_effect"] = by_name[full]["sampled_median_s"] / by_name[full]["median_s"]
    if "nvidia-smi compute_cap" in by_name:
        s["nvidia_smi_s"] = by_name["nvidia-smi compute_cap"]["median_s"]
        s["quick_vs_nvidia_smi"] = s["quick_s"] / s["nvidia_smi_s"]
    traced = ("traced: precision-probe (full)", "traced: without the CPU's checks")
    if traced[0] in raw:
        s["gpu_done_ms"] = {"full": by_name[traced[0]]["gpu_done_ms"], "without_cpu": by_name[traced[1]]["gpu_done_ms"]}
        s["gpu_done_change"], s["gpu_done_ratios"] = round_ratios(raw, *traced, key="gpu_done_ms")
        # A build that does not read the switch checked the CPU both ways: no figure, said so; and a
        # run that ended before its GPU's plan (refused, failed) is said with its exit and reason.
        s["skip_cpu_ignored"] = any(by_name[traced[1]].get("cpu_checked", []))
        if s["skip_cpu_ignored"]:
            s["gpu_done_change"], s["gpu_done_ratios"] = None, []
        for name in traced:
            for r in raw[name]:
                if r.get("gpu_done_ms") is None and "gpu_done_missing" not in s:
                    s["gpu_done_missing"] = (f"{name} exited {r['exit_code']} with no GPU plan done in its trace: "
                                             f"{r['stderr_tail'][-200:]}")
    if args.baseline:
        s["full_change"], s["full_ratios"] = round_ratios(raw, full, "baseline (full)")
        s["quick_change"], s["quick_ratios"] = round_ratios(raw, "precision-probe --quick", "baseline --quick")
    s["variants"] = {r["name"]: round_ratios(raw, r["name"], "default (variants)")[0]
                     for r in rounds.rows if r["name"].startswith("variant ")}
    # Each variant's GPU's checks done (traced), against the default's full probe, run for run.
    s["variants_gpu_done"] = {
        r["name"][len("traced: "):]: {"gpu_done_ms": r.get("gpu_done_ms"),
                                      "change": round_ratios(raw, r["name"], traced[0], key="gpu_done_ms")[0]}
        for r in rounds.rows if r["name"].startswith("traced: variant ")}
    if args.copy_counts:
        s["copies"] = copies_summary(rounds, args.copy_counts)
    s["targets"] = targets(s, one_cpu=(bool(cpus) and len(cpus) == 1) or args.cgroup_cpus == 1)
    return s


def targets(s, one_cpu):
    """Each target: True met, False missed, None not measured in this run."""
    def at_most(value, bound):
        return None if value is None else value <= bound

    t = {"full_8x_faster_than_python": s["speedup_vs_python"] >= 8.0 if s["speedup_vs_python"] else None}
    t["one_cpu_full_at_most_2x_floor"] = at_most(s["full_vs_floor"], ONE_CPU_FLOOR_RATIO) if one_cpu else None
    t["one_cpu_full_2_5x_faster_than_python"] = (
        s["speedup_vs_python"] >= ONE_CPU_PYTHON_SPEEDUP if one_cpu and s["speedup_vs_python"] else None)
    t["one_cpu_gpu_checks_no_later_than_without_cpu"] = at_most(s.get("gpu_done_change"), 1.0) if one_cpu else None
    t["all_cpus_full_no_slower_than_baseline"] = (
        at_most(s.get("full_change"), 1.0) if s["all_cpus"] and not s["cgroup"] else None)
    t["quick_within_5_percent_of_baseline"] = at_most(s.get("quick_change"), QUICK_BASELINE_RATIO)
    one_gpu = s.get("full_cuda_devices") == [1]
    t["tree_pss_at_most_924_mib_for_one_gpu"] = at_most(s["full_tree_pss_mib"], TREE_PSS_MIB) if one_gpu else None
    copies = s.get("copies")
    steps = list(copies["per_added_device"].values()) if copies and copies["honoured"] else []
    measured = steps and all(c["pss_mib"] is not None and c["cpu_s"] is not None for c in steps)
    t["each_added_device_at_most_200_mib_and_0_2_cpu_s"] = all(
        c["pss_mib"] <= ADDED_DEVICE_PSS_MIB and c["cpu_s"] <= ADDED_DEVICE_CPU_S for c in steps) if measured else None
    return t


def print_summary(args, s):
    met = lambda ok: {True: "met", False: "MISSED", None: "not measured"}[ok]  # noqa: E731
    t = s["targets"]
    where = f"on {s['cpus']} CPU(s)" if s["cpus"] else "on all CPUs"
    if s["cgroup"]:
        where += f" under a quota of {fmt(s['cgroup_cpus'], 'd')} CPU(s) ({s['cgroup']})"
    print(f"full probe {where}: {s['full_s']:.3f} s, {s['full_cpu_s']:.3f} s of CPU, tree Pss "
          f"{fmt(s['full_tree_pss_mib'], '.0f')} MiB (target <= {TREE_PSS_MIB:.0f} for one GPU: "
          f"{met(t['tree_pss_at_most_924_mib_for_one_gpu'])})")
    print(f"  {fmt(s['speedup_vs_python'], '.2f')}x faster than the Python check ({s['python_check_s']:.3f} s), "
          f"{fmt(s['full_vs_floor'], '.2f')}x the floor ({fmt(s['floor_s'])} s): the median of {args.runs} "
          "alternating rounds")
    if "floor_gemms_s" in s:
        print(f"  {fmt(s['full_vs_floor_gemms'], '.2f')}x the floor with one GEMM per dtype ({fmt(s['floor_gemms_s'])} s; "
              f"tree Pss {fmt(s['floor_gemms_tree_pss_mib'], '.0f')} MiB against the floor's "
              f"{fmt(s['floor_tree_pss_mib'], '.0f')}): informative, the targets are against the floor")
    if s.get("sampling_effect") is not None:
        print(f"  (its memory sampled every {args.sample_ms} ms in {args.memory_runs} rounds of their own, where it "
              f"took {s['sampling_effect']:.2f}x the time: the times above are of the rounds not sampled)")
    if s["cpus"] == 1 or s["cgroup_cpus"] == 1:
        print(f"  one CPU: <= {ONE_CPU_FLOOR_RATIO}x the floor {met(t['one_cpu_full_at_most_2x_floor'])}; "
              f">= {ONE_CPU_PYTHON_SPEEDUP}x faster than the Python check "
              f"{met(t['one_cpu_full_2_5x_faster_than_python'])}")
    if "gpu_done_ms" in s:
        g = s["gpu_done_ms"]
        print(f"  the GPU's checks done at {fmt(g['full'], '.0f')} ms (full) against {fmt(g['without_cpu'], '.0f')} ms "
              f"(without the CPU's checks), {fmt(s['gpu_done_change'])}x run for run "
              f"({met(t['one_cpu_gpu_checks_no_later_than_without_cpu'])} on one CPU)")
        if s.get("gpu_done_missing"):
            print(f"  (not measured: {s['gpu_done_missing']})")
        if s.get("skip_cpu_ignored"):
            print(f"  (not measured: this build checked the CPU with {SKIP_CPU_VARIABLE}=1 set; it does not read "
                  "the switch)")
    print(f"AMP section: {s['amp_cost_s']:.3f} s; --quick: {s['quick_s']:.3f} s"
          + (f", {s['quick_vs_nvidia_smi']:.1f}x nvidia-smi's time" if "quick_vs_nvidia_smi" in s else ""))
    for name, change in s["variants"].items():
        done = s["variants_gpu_done"].get(name)
        print(f"{name}: {fmt(change)}x the default's time, run for run"
              + (f"; the GPU's checks done at {fmt(done['gpu_done_ms'], '.0f')} ms, {fmt(done['change'])}x the "
                 "default's (traced)" if done else ""))
    if args.baseline:
        print(f"against the baseline, run for run: full {fmt(s['full_change'])}x (no slower on all CPUs: "
              f"{met(t['all_cpus_full_no_slower_than_baseline'])}), --quick {fmt(s['quick_change'])}x "
              f"({met(t['quick_within_5_percent_of_baseline'])} <= {QUICK_BASELINE_RATIO})")
    print_by_round(s)
    if "copies" in s:
        print_copies(s["copies"])
        print(f"  each added device <= {ADDED_DEVICE_PSS_MIB:.0f} MiB and {ADDED_DEVICE_CPU_S} s of CPU: "
              f"{met(t['each_added_device_at_most_200_mib_and_0_2_cpu_s'])}")


def print_by_round(s):
    """The per-round ratios behind the medians above, in the order the rounds ran."""
    for key, said in (("full_vs_floor_ratios", "full / floor"), ("speedup_vs_python_ratios", "Python / full"),
                      ("full_ratios", "full / baseline (full)"),
                      ("gpu_done_ratios", "GPU's checks done, with / without the CPU's")):
        if s.get(key):
            print(f"  by round, {said}: " + ", ".join(f"{r:.2f}" for r in s[key]))


def write_json(path, document):
    """Writes `document` to `path` through a temporary file beside it (no partial file is left)."""
    directory = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(prefix=".bench-startup.", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
        os.replace(temporary, path)
    except OSError as e:
        sys.exit(f"bench: cannot write {path}: {e.strerror}")
    finally:
        if os.path.exists(temporary):  # a failed write, or a SIGTERM in it
            os.unlink(temporary)


def stop_on_term(out):
    """SIGTERM (a time limit's `timeout`, which signals the whole process group) ends the bench
    through its clean-ups (the floor's temporary directory), the groups done so far kept in the JSON."""
    def stop(signum, _frame):
        sys.stderr.write(f"bench: stopped by {signal.Signals(signum).name}; "
                         f"{os.path.join(out, 'bench-startup.json')} holds the groups done so far (partial)\n")
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


def main(argv=None):
    args = parse_args(argv)
    if args.measure is not None:
        print(json.dumps(measure_command(json.loads(args.measure))))
        return 0
    stop_on_term(args.out)
    cpus = args.cpu_list
    all_cpus = cpus is None or len(cpus) == len(os.sched_getaffinity(0))
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        sys.exit(f"bench: --out {args.out}: {e.strerror}")
    with tempfile.TemporaryDirectory(prefix="bench-floor.") as build:
        floor = floor_gemms = None
        if not args.no_floor:
            lib_dir = args.torch_lib or torch_lib_of(args.probe)
            floor = floor_argv(compile_floor(build), lib_dir, args.device == "cpu", args.floor_order)
            check_floor(floor, cpus)
        if args.floor_gemms:
            floor_gemms = [*floor[:-1], "--gemms", floor[-1]]
            check_floor(floor_gemms, cpus)
        rounds = Rounds(args.runs, args.memory_runs, args.sample_ms)
        setup = {"cpus": cpus, "cgroup": args.cgroup, "cgroup_cpus": args.cgroup_cpus,
                 "runs": args.runs, "memory_runs": args.memory_runs, "sample_ms": args.sample_ms,
                 "device": args.device, "floor": floor, "floor_gemms": floor_gemms}
        path = os.path.join(args.out, "bench-startup.json")
        for group in plan(args, cpus, floor, floor_gemms):
            rounds.alternate(group, memory=not group[0]["trace"])
            # The groups done so far, kept should the bench be stopped (a time limit): "partial".
            write_json(path, {"partial": True, "setup": setup, "rows": rounds.rows})
    summary = summarise_all(args, rounds, cpus, all_cpus)
    setup["subreaper"] = all(r["subreaper"] for runs in rounds.raw.values() for r in runs)
    write_json(path, {"setup": setup, "rows": rounds.rows, "summary": summary})

    print_processes(rounds.rows, {"python3 torch fp16/bf16 check", "floor (LibTorch + context)", FLOOR_GEMMS,
                                  "precision-probe (full)", "baseline (full)"}
                    | {r["name"] for r in rounds.rows if r["name"].startswith("copies ")})
    left = [f"{r['name']}: {', '.join(r['leftovers'])}" for r in rounds.rows if r["leftovers"]]
    if left:
        print("LEFT RUNNING after the command ended (killed by the bench): " + "; ".join(left))
    print_summary(args, summary)
    print_table(rounds.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
