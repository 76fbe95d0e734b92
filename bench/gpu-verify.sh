#!/usr/bin/env bash
# Everything the GPU machine has to show, in one call: the test suite, the reports, the
# diagnostics of a misconfigured environment, and the benchmarks. Writes its files to $OUT (or
# ./gpu-verify) and prints a short table last.
#   usage: bench/gpu-verify.sh   (after ./dev gpu-test has built build-gpu)
set -uo pipefail
OUT=${OUT:-gpu-verify}
mkdir -p "$OUT"
P=build-gpu/bin/precision-probe
run() { local name=$1; shift; "$@" > "$OUT/$name" 2>&1; echo "$name: exit $?"; }

run report.txt $P --seed 1
run report.json $P --seed 1 --format json
run quick.txt $P --quick
run no-visible-devices.txt env CUDA_VISIBLE_DEVICES= $P --require bf16
run visible-device-7.txt env CUDA_VISIBLE_DEVICES=7 $P --require bf16
run no-driver-library.txt env PRECISION_PROBE_LIBCUDA=libcuda-missing.so.1 PRECISION_PROBE_LIBNVML=libnvidia-ml-missing.so.1 $P --require bf16
run arch-7.5.txt $P arch 7.5
run bench.txt $P --bench --device 0
PRECISION_PROBE_TRACE=1 $P > /dev/null 2> "$OUT/trace.txt"
python3 bench/startup.py --probe $P --out "$OUT" | tee "$OUT/startup.txt"
python3 bench/throughput.py --probe $P --out "$OUT" | tee "$OUT/throughput.txt"
