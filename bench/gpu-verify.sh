#!/usr/bin/env bash
# Everything the GPU machine has to show, in one call: the reports, the diagnostics of a
# misconfigured environment, collectives when there are two GPUs or more, compute-sanitizer, and
# the benchmarks. Writes verify.log (every section), report.json and the benchmark JSON files to
# $OUT (default ./gpu-verify). Run after ./dev gpu-test has built build-gpu.
set -uo pipefail
OUT=${OUT:-gpu-verify}
mkdir -p "$OUT"
P=build-gpu/bin/precision-probe
LOG="$OUT/verify.log"
: > "$LOG"
section() {
  local name=$1; shift
  { echo "===== $name: $*"; "$@" 2>&1; echo "===== $name: exit $?"; echo; } >> "$LOG"
}

gpus=$(nvidia-smi -L | wc -l)
section topology nvidia-smi topo -m
[ "$gpus" -ge 2 ] && section nvlink nvidia-smi nvlink -s -i 0
section report $P --seed 1
$P --seed 1 --format json > "$OUT/report.json"
section quick $P --quick
section no-visible-devices env CUDA_VISIBLE_DEVICES= $P --require bf16
section visible-device-7 env CUDA_VISIBLE_DEVICES=7 $P --require bf16
section no-driver-library env PRECISION_PROBE_LIBCUDA=libcuda-missing.so.1 PRECISION_PROBE_LIBNVML=libnvidia-ml-missing.so.1 $P --require bf16
section arch-7.5 $P arch 7.5
section markdown $P --format markdown --no-amp
section prometheus-promtool-free $P --format prometheus --no-amp
if [ "$gpus" -ge 2 ]; then
  section nccl $P --nccl --no-amp
  section nccl-json-timing bash -c "time $P --nccl --no-amp --format json > /dev/null; time $P --no-amp --format json > /dev/null"
fi
section bench $P --bench --device 0 --no-amp
section trace env PRECISION_PROBE_TRACE=1 $P --format json -o /dev/null
if command -v compute-sanitizer > /dev/null; then
  section compute-sanitizer compute-sanitizer --tool memcheck --target-processes all $P --device 0 --seed 1 -q --timeout 400 --check-timeout 300
fi
python3 bench/startup.py --probe $P --out "$OUT" >> "$LOG" 2>&1
python3 bench/throughput.py --probe $P --out "$OUT" >> "$LOG" 2>&1
python3 bench/sustained.py --mode bf16 --seconds 2 --out "$OUT" >> "$LOG" 2>&1
grep -E "^===== .*: exit|TF/s|full probe|AMP section|early CUDA context|--quick:|within 3%|^(fp32|tf32|fp16|bf16|fp8)|^burst|^probe method" "$LOG"
