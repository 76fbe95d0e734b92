#!/bin/bash
# Probe every node of a Slurm allocation, one task per node, and collect one JSON report per node.
#   sbatch --nodes=16 --gres=gpu:8 docs/examples/slurm.sh
#SBATCH --job-name=precision-probe
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:05:00
set -euo pipefail

out=${PROBE_OUT:-probe-$SLURM_JOB_ID}
mkdir -p "$out"

# Each task writes its node's report; the exit codes are collected, not fatal.
srun --ntasks-per-node=1 bash -c \
  'precision-probe --require bf16 --format json -o "'"$out"'/$(hostname).json"; echo "$(hostname) $?" > "'"$out"'/$(hostname).exit"' || true

# One line per node: its exit code and the GPUs that are not native in bf16.
for f in "$out"/*.json; do
  node=$(basename "$f" .json)
  code=$(cut -d' ' -f2 "$out/$node.exit")
  bad=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join(d["name"]+"#"+str(d["index"]) for d in r.get("devices",[]) if d["kind"]=="cuda" and d["precisions"]["bf16"]["status"]!="native"))' "$f")
  echo "$node exit=$code ${bad:+not native: $bad}"
done
