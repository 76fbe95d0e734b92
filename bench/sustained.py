#!/usr/bin/env python3
"""Throughput and clocks over a sustained GEMM load: how a GPU's TFLOP/s move with its SM clock.

Runs back-to-back GEMMs of one precision for a few seconds (CUDA events around each), while
nvidia-smi samples the SM clock, power draw and the active clock-event (throttle) reasons every
20 ms, then prints one line per 100 ms window. Then compares three ways to time the same GEMM
from an idle GPU, three times each: a burst (three warm-up calls, mean of the next ten: what quick
checks do), the probe's method (three warm-up calls queued back to back, median of the next 20)
and its previous one (at least 25 ms of warm-up waiting for each call, median of 20). Writes
sustained-MODE.json.

  usage: bench/sustained.py [--mode bf16] [--size 8192] [--seconds 3] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def operands(mode, n, sets=3):
    gen = torch.Generator(device="cuda").manual_seed(99)
    return [(torch.randn(n, n, device="cuda", dtype=DTYPES[mode], generator=gen),
             torch.randn(n, n, device="cuda", dtype=DTYPES[mode], generator=gen)) for _ in range(sets)]


def timed_calls(inputs, count):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    for i in range(count):
        a, b = inputs[i % len(inputs)]
        starts[i].record()
        torch.mm(a, b)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def burst(inputs, flop):
    for i in range(3):
        torch.mm(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    ms = timed_calls(inputs, 10)
    return flop / (statistics.mean(ms) * 1e-3) / 1e12


def probe_method(inputs, flop):
    torch.mm(*inputs[0])
    torch.cuda.synchronize()
    for i in range(3):  # queued back to back, the timed calls right behind them
        torch.mm(*inputs[(i + 1) % len(inputs)])
    ms = timed_calls(inputs, 20)
    return flop / (statistics.median(ms) * 1e-3) / 1e12


def old_method(inputs, flop):
    begin, done = time.perf_counter(), 0
    while done < 3 or time.perf_counter() - begin < 0.025:
        torch.mm(*inputs[done % len(inputs)])
        torch.cuda.synchronize()
        done += 1
    ms = timed_calls(inputs, 20)
    return flop / (statistics.median(ms) * 1e-3) / 1e12


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = args.mode == "tf32"
    n = args.size
    flop = 2.0 * n ** 3
    inputs = operands(args.mode, n)
    torch.mm(*inputs[0])
    torch.cuda.synchronize()
    time.sleep(2.0)  # let the GPU go idle

    smi = subprocess.Popen(
        ["nvidia-smi", "-i", "0", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,"
         "clocks_event_reasons.active", "--format=csv,noheader,nounits", "-lms", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.3)
    t0 = time.perf_counter()
    calls = []  # (host time at launch, ms)
    while time.perf_counter() - t0 < args.seconds:
        launched = time.perf_counter() - t0
        ms = timed_calls(inputs, 10)
        for k, m in enumerate(ms):
            calls.append((launched + sum(ms[:k]) / 1e3, m))
    smi.terminate()
    samples = []
    for line in smi.communicate()[0].splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 5:
            try:
                samples.append({"sm_mhz": float(parts[1]), "watts": float(parts[2]),
                                "celsius": float(parts[3]), "reasons": parts[4]})
            except ValueError:
                pass

    windows = []
    step = 0.1
    w = 0.0
    while w < args.seconds:
        inside = [m for t, m in calls if w <= t < w + step]
        if inside:
            windows.append({"t": round(w, 2), "tflops": flop / (statistics.median(inside) * 1e-3) / 1e12,
                            "calls": len(inside)})
        w += step
    # Samples are spread evenly over the load (20 ms apart): index them by share of the run.
    for win in windows:
        if samples:
            i = min(len(samples) - 1, int(win["t"] / args.seconds * len(samples)))
            win.update(samples[i])

    bursts, methods, olds = [], [], []
    for _ in range(3):
        for method, into in ((burst, bursts), (probe_method, methods), (old_method, olds)):
            time.sleep(2.0)
            into.append(method(inputs, flop))

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"sustained-{args.mode}.json"), "w") as f:
        json.dump({"mode": args.mode, "size": n, "windows": windows, "samples": samples,
                   "burst_tflops": bursts, "probe_method_tflops": methods,
                   "previous_method_tflops": olds}, f, indent=1)
    print(f"{torch.cuda.get_device_name(0)} {args.mode} {n}^3, back-to-back for {args.seconds} s")
    print(f"{'t s':>5} {'TFLOP/s':>8} {'SM MHz':>7} {'W':>6} {'C':>4}  reasons")
    for win in windows[::2]:
        print(f"{win['t']:5.1f} {win['tflops']:8.1f} {win.get('sm_mhz', 0):7.0f} {win.get('watts', 0):6.0f} "
              f"{win.get('celsius', 0):4.0f}  {win.get('reasons', '')}")
    print(f"burst (3 warm-up, mean of 10): {' '.join(f'{b:.1f}' for b in bursts)} TFLOP/s")
    print(f"probe method (3 warm-up calls back to back, median of 20): {' '.join(f'{m:.1f}' for m in methods)} TFLOP/s")
    print(f"previous method (>=25 ms warm-up, waiting for each call): {' '.join(f'{m:.1f}' for m in olds)} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
