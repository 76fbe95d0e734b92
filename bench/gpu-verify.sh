#!/usr/bin/env bash
# Everything the GPU machine has to show: the reports, the diagnostics of a misconfigured
# environment, a GPU whose memory another process holds, collectives when there are two GPUs or
# more, compute-sanitizer, and the benchmarks. Writes verify.log (every section), report.json and
# the benchmark JSON files to $OUT (default ./gpu-verify). Run after ./dev gpu-test has built
# build-gpu.
#
#   bench/gpu-verify.sh [PART...]   PART: reports, memory, nccl, sanitizer, startup, throughput
#                                   (default: all of them, in that order)
#   BASELINE=DIR/bin/precision-probe bench/gpu-verify.sh startup
#                                   start-up side by side with another build of the probe
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

reports() {
  section topology nvidia-smi topo -m
  [ "$gpus" -ge 2 ] && section nvlink nvidia-smi nvlink -s -i 0
  section report $P --seed 1
  $P --seed 1 --format json > "$OUT/report.json"
  section quick $P --quick
  section no-visible-devices env CUDA_VISIBLE_DEVICES= $P --require bf16
  section visible-device-7 env CUDA_VISIBLE_DEVICES=7 $P --require bf16
  section no-driver-library env PRECISION_PROBE_LIBCUDA=libcuda-missing.so.1 PRECISION_PROBE_LIBNVML=libnvidia-ml-missing.so.1 $P --require bf16
  section arch-7.5 $P arch 7.5 --require bf16
  section markdown $P --format markdown --no-amp
  section prometheus-promtool-free $P --format prometheus --no-amp
  section bench $P --bench --device 0 --no-amp
  section trace env PRECISION_PROBE_TRACE=1 $P --format json -o /dev/null
}

# Another process holds all but LEFT MiB of GPU 0's memory (MEMORY_LEFT, default "4096 1024 256"): what could not run is not_tested
# (never failed, never exit 4), a requirement that needed it is exit 3, the holder is named, and
# --bench sizes its GEMMs to what is free.
memory() {
  local left
  for left in ${MEMORY_LEFT:-4096 1024 256}; do
    python3 - "$left" > "$OUT/holder-$left.log" 2>&1 <<'EOF' &
import sys, time, torch
free, total = torch.cuda.mem_get_info(0)
hold = torch.empty(free - int(sys.argv[1]) * 2**20, dtype=torch.uint8, device="cuda:0")
print(f"holding {hold.numel() / 2**30:.1f} GiB of {total / 2**30:.1f}", flush=True)
time.sleep(120)
EOF
    local holder=$!
    for _ in $(seq 60); do grep -q holding "$OUT/holder-$left.log" && break; sleep 0.5; done
    section "memory-held-$left-MiB-left" $P --device 0 --require bf16,amp_bf16
    section "memory-held-$left-MiB-left-bench" $P --device 0 --bench --no-amp --format json -o "$OUT/memory-$left.json"
    section "memory-held-$left-MiB-left-bench-sizes" python3 -c "import json; d = json.load(open('$OUT/memory-$left.json'))['devices'][0]; [print(m, b['size'], b['note'] or b['error']) for m, b in d.get('bench', {}).items()]; print([p['pid'] for p in d['gpu']['processes']])"
    kill "$holder"; wait "$holder" 2>/dev/null
  done
}

nccl() {
  [ "$gpus" -ge 2 ] || return 0
  section nccl $P --nccl --no-amp
  section nccl-json-timing bash -c "time $P --nccl --no-amp --format json > /dev/null; time $P --no-amp --format json > /dev/null"
}

sanitizer() {
  command -v compute-sanitizer > /dev/null || return 0
  section compute-sanitizer compute-sanitizer --tool memcheck --target-processes all $P --device 0 --seed 1 -q --timeout 400 --check-timeout 300
}

startup() {
  python3 bench/startup.py --probe $P ${BASELINE:+--baseline "$BASELINE"} --out "$OUT" >> "$LOG" 2>&1
}

throughput() {
  python3 bench/throughput.py --probe $P --out "$OUT" >> "$LOG" 2>&1
  python3 bench/sustained.py --mode bf16 --seconds 2 --out "$OUT" >> "$LOG" 2>&1
}

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(reports memory nccl sanitizer startup throughput)
for part in "${parts[@]}"; do
  case $part in
    reports | memory | nccl | sanitizer | startup | throughput) "$part" ;;
    *) echo "gpu-verify: unknown part '$part'" >&2; exit 2 ;;
  esac
done
grep -E "^===== .*: exit|TF/s|full probe|AMP section|--quick:|baseline|within 3%|^(fp32|tf32|fp16|bf16|fp8)|^burst|^probe method|^exit [0-9]|gpu-memory-busy|sized to" "$LOG"
