#!/usr/bin/env bash
# The distribution on the GPU machine (docs/images.md, "What was verified where"): the wheel of
# `./dev dist` for this machine's architecture (dist/, carried over) pip-installed offline into a
# virtual environment that sees the machine's PyTorch (--system-site-packages), and its
# `precision-probe` (pip's launcher) run there: --quick, then the full check. Writes quick.json,
# full.json, full.txt and dist-gpu.log to $OUT (default ./dist-gpu); prints a short summary.
#
#   bench/dist-gpu.sh [PYTHON]    PYTHON: the interpreter whose torch to use (default: the first
#                                 of /opt/torch/.venv/bin/python and python3 that imports torch)
set -uo pipefail
OUT=${OUT:-dist-gpu}
mkdir -p "$OUT"
arch=$(uname -m)
wheel=$(ls dist/precision_probe-*-manylinux_2_28_"$arch".whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { echo "no dist/*_$arch.whl: run ./dev dist and carry dist/"; exit 1; }
py=${1:-}
if [ -z "$py" ]; then
  for c in /opt/torch/.venv/bin/python "$(command -v python3)"; do
    [ -x "$c" ] && "$c" -c 'import torch' 2>/dev/null && { py=$c; break; }
  done
fi
[ -n "$py" ] || { echo "no python with torch here"; exit 1; }
{
  uname -m; ldd --version | head -n 1; nvidia-smi -L
  "$py" -c 'import sys, torch; print(sys.executable, torch.__version__, torch.__file__)'
} | tee "$OUT/dist-gpu.log"
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$py" -m venv --system-site-packages "$venv" && "$venv/bin/python" -m pip install -q --no-index --no-deps "$wheel" ||
  { echo "pip install $wheel failed"; exit 1; }
probe="$venv/bin/precision-probe"
echo "command: $(head -n 1 "$probe") (pip's launcher)" | tee -a "$OUT/dist-gpu.log"
( cd / && "$probe" --quick --format json > "$OUT/quick.json" ); echo "quick: exit $?" | tee -a "$OUT/dist-gpu.log"
start=$EPOCHREALTIME
( cd / && "$probe" --require bf16,fp8_rowwise,amp_bf16 --format json > "$OUT/full.json" 2>> "$OUT/dist-gpu.log" )
rc=$?
echo "full: exit $rc in $("$py" -c "print(round($EPOCHREALTIME - $start, 1))") s" | tee -a "$OUT/dist-gpu.log"
( cd / && "$probe" --require bf16 > "$OUT/full.txt" 2>&1 )
"$py" - "$OUT/full.json" <<'P' | tee -a "$OUT/dist-gpu.log"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["stack"]
print("found_by:", j["image_stack"].get("found_by"))
print("library:", s.get("library"), "abi", s.get("abi_version"), s.get("load_error") or "")
print("exit", j["exit_code"], j["exit_reason"])
for d in j["devices"]:
    print(d["kind"], d.get("index"), d.get("name"), " ".join(f"{m}={p['status']}" for m, p in d["precisions"].items()))
P
