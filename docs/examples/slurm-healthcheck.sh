#!/bin/bash
# A Slurm health check (HealthCheckProgram in slurm.conf, or a prolog): probe this node and drain
# it, with a reason a person can act on, when a precision the jobs need is not natively usable.
# The probe only reports; this script decides and calls scontrol.
#   HealthCheckProgram=/usr/local/sbin/precision-probe-healthcheck   (this file)
#   HealthCheckInterval=3600
set -uo pipefail

REQUIRE=${PROBE_REQUIRE:-bf16}
report=$(mktemp)
trap 'rm -f "$report"' EXIT

precision-probe --require "$REQUIRE" --format json -q -o "$report"
code=$?
# 0: every requirement met; 1: a required mode not native; 3: no usable GPU, driver, engine or
# LibTorch; 4: a check failed (wrong numbers); 5: timed out or interrupted (docs/exit-codes.md).
[ "$code" -eq 0 ] && exit 0

# The first failing (or not native) requirement, with the GPU's UUID: "bf16 failed on GPU 3 (GPU-...)".
reason=$(python3 - "$report" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
uuids = {f"GPU {d['index']}": d.get("gpu", {}).get("uuid", "") for d in r.get("devices", []) if d.get("kind") == "cuda"}
for q in r.get("requirements", []):
    if not q.get("met"):
        uuid = uuids.get(q.get("device", ""), "")
        print(f"{q['mode']} {q['status']} on {q['device']}" + (f" ({uuid})" if uuid else ""))
        break
else:
    print(r.get("exit_reason", "")[:120])
PY
)
reason="precision-probe: ${reason:-exit $code} (exit $code)"

node=$(hostname -s)
scontrol update nodename="$node" state=drain reason="${reason:0:200}"
logger -t precision-probe "drained $node: $reason"
exit 0
