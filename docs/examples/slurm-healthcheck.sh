#!/bin/bash
# A Slurm health check (HealthCheckProgram in slurm.conf, or a prolog): probe this node and drain
# it, with a reason a person can act on, exactly when the probe says the node itself is bad, and
# never for a mistake in how the check is set up, so that one wrong setting never drains a cluster.
# The probe only reports; this script decides and calls scontrol. docs/integrations.md#slurm has
# the tables below with more words.
#   HealthCheckProgram=/usr/local/sbin/precision-probe-healthcheck   (this file)
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE   (a job holding a GPU's memory is no fault: see gpu-memory-busy)
#
# The probe's exit code (docs/exit-codes.md), and what this does:
#   0        healthy: nothing
#   1        a required precision is not natively usable here: drain
#   3        an environment problem: decided from the report's diagnostics (docs/diagnostics.md):
#            - the node's own fault: drain
#                driver-library-not-found cuda-library-not-found device-nodes-missing
#                device-nodes-inaccessible cuinit-failed no-cuda-device driver-crashed driver-hung
#                compute-mode-prohibited
#            - a GPU held by another process (gpu-memory-busy compute-mode-exclusive-busy): drain
#              where no job runs on the node (a process left behind), else no drain, log
#            - a setting of this check, the same on every node: no drain, log (fix the defaults
#              below)
#                engine-not-installed libtorch-not-found libtorch-too-old libtorch-load-failed
#                libtorch-without-cuda torch-file-refused arch-not-in-build driver-too-old
#                nvidia-visible-devices-none cuda-visible-devices-empty cuda-visible-devices-invalid
#            - none of these, or no report to read: no drain, log
#            The first that applies wins, in this order: a fault, a held GPU with no job, a
#            setting, a held GPU under a job, the rest.
#   4        a check failed (wrong numbers, NaN, a crashed worker): drain
#   5        timed out (a hung GPU or driver): drain
#   2, 6, 124, 126, 127, 128+N, any other: the check could not judge the node: no drain, log
# "log" is loud: syslog at daemon.err (tag precision-probe-healthcheck) and stderr, exit 1, which
# slurmd logs as "health_check failed: rc:1 output:...".
# Exit status: 0 the node is healthy or was drained; 1 the check could not judge the node, or could
# not drain or log; 128+N this script was stopped by signal N before the probe finished (nothing
# drained).
set -uo pipefail

# --- The defaults: slurmd starts this program with an almost empty environment (SLURMD_NODENAME
# alone), so what the probe and scontrol need is set here. PATH must lead to the python3 of the
# image's PyTorch, or set PRECISION_PROBE_TORCH (docs/images.md): where it leads to none, every
# node says libtorch-not-found, which this logs and drains nothing for.
REQUIRE=${PROBE_REQUIRE:-bf16}
export PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
# export PRECISION_PROBE_TORCH=/opt/pytorch/lib/python3.12/site-packages/torch
# Where scontrol and squeue do not find slurm.conf themselves:
# export SLURM_CONF=/etc/slurm/slurm.conf
# --- end of the defaults
node=${SLURMD_NODENAME:-$(hostname -s)}

# slurmd kills this program 60 s after it started it. The probe ends its run within RUN_S (a hung
# GPU or driver is then exit 5, and drains), each check and driver query within CHECK_S (shorter,
# so that a hung driver is told apart from a run out of time); a probe that overran its own limit
# anyway gets SIGTERM at STOP_S and SIGKILL KILL_S later, so that this script always has the time
# left to drain (scontrol waits up to slurm.conf's MessageTimeout, 10 s by default) or to log.
RUN_S=40 CHECK_S=30 STOP_S=50 KILL_S=5

# The diagnostics of exit 3, by what they say (the table above).
NODE_FAULTS="driver-library-not-found cuda-library-not-found device-nodes-missing
  device-nodes-inaccessible cuinit-failed no-cuda-device driver-crashed driver-hung
  compute-mode-prohibited"
GPU_HELD="gpu-memory-busy compute-mode-exclusive-busy"
SETTINGS="engine-not-installed libtorch-not-found libtorch-too-old libtorch-load-failed
  libtorch-without-cuda torch-file-refused arch-not-in-build driver-too-old
  nvidia-visible-devices-none cuda-visible-devices-empty cuda-visible-devices-invalid"

# What each exit status of the probe (or of the timeout(1) and shell around it) means for the node:
# "drain" (the node is bad), "alert" (the check could not judge the node: log loudly, drain
# nothing), "healthy", or "diagnose" (3: the diagnostics decide).
classify() {
  case $1 in
    0) verdict=healthy meaning="every requirement met natively" ;;
    1) verdict=drain meaning="a required mode is not natively usable" ;;
    2) verdict=alert meaning="usage error (PROBE_REQUIRE='$REQUIRE' or the probe's options)" ;;
    3) verdict=diagnose meaning="environment problem" ;;
    4) verdict=drain meaning="a check failed: wrong numbers, NaN or a crashed worker" ;;
    5) verdict=drain meaning="timed out or interrupted: a hung GPU or driver" ;;
    6) verdict=alert meaning="the report could not be delivered to $work (a full file system?)" ;;
    124) verdict=alert meaning="the probe overran its own --timeout $RUN_S and was stopped at $STOP_S s" ;;
    126) verdict=alert meaning="the probe cannot be executed" ;;
    127) verdict=alert meaning="the probe is not installed (not on PATH=$PATH)" ;;
    *)
      verdict=alert meaning="an exit code the probe does not document"
      if [ "$1" -gt 128 ] && signal=$(kill -l "$1" 2>/dev/null); then
        meaning="the probe was killed by SIG$signal"
      fi
      ;;
  esac
}

# The report's diagnostic codes, one a line, in its order. Only a diagnostic has a "code" member,
# and a quote inside a text is escaped (\"), so a message cannot fake one; no jq or python needed.
diagnostic_codes() {
  grep -o '"code": *"[a-z0-9-]*"' "$1" 2>/dev/null | sed 's/.*"\([a-z0-9-]*\)"$/\1/'
}

# The first of CODES (one a line) that LIST names; nothing when none does. first_of LIST CODES
first_of() {
  local code word
  for code in $2; do
    for word in $1; do
      [ "$code" != "$word" ] || { echo "$code"; return; }
    done
  done
}

# Whether a job runs on the node (squeue answers); "unknown" when squeue cannot say.
job_on_node() {
  local jobs
  if ! jobs=$(squeue -h -w "$node" -t RUNNING,COMPLETING -o %i 2>/dev/null); then
    echo unknown
  elif [ -n "$jobs" ]; then
    echo yes
  else
    echo no
  fi
}

# Exit 3: which of its diagnostics decides (the table at the top). Sets verdict and meaning.
diagnose() {
  local codes fault held setting
  codes=$(diagnostic_codes "$work/report.json")
  fault=$(first_of "$NODE_FAULTS" "$codes")
  held=$(first_of "$GPU_HELD" "$codes")
  setting=$(first_of "$SETTINGS" "$codes")
  if [ -n "$fault" ]; then
    verdict=drain meaning="$fault"
    return
  fi
  local job=
  [ -z "$held" ] || job=$(job_on_node)
  verdict=alert
  if [ "$job" = no ]; then
    verdict=drain meaning="$held with no job on the node"
  elif [ -n "$setting" ]; then
    meaning="a setting of this check, not the node: $setting (the defaults at the top of $0)"
  elif [ "$job" = yes ]; then
    meaning="$held: a job runs on the node (HealthCheckNodeState=IDLE keeps the check off busy nodes)"
  elif [ -n "$held" ]; then
    meaning="$held, and squeue could not say whether a job runs on the node"
  elif [ -n "$codes" ]; then
    meaning="an environment problem this check does not judge: $(tr '\n' ' ' <<<"$codes")"
    meaning=${meaning% }
  else
    meaning="an environment problem, and no report says which"
  fi
}

failed_log=
# One line to syslog (daemon facility) and to stderr, which slurmd keeps in its log when this
# script exits non-zero. log PRIORITY TAG MESSAGE
log() {
  printf '%s: %s\n' "$2" "$3" >&2
  if ! logger -t "$2" -p "daemon.$1" -- "$3"; then
    printf '%s: logger -t %s failed: the line above is not in syslog\n' "$2" "$2" >&2
    failed_log=yes
  fi
}
# The check could not judge the node: tag precision-probe-healthcheck, priority err.
alert() { log err precision-probe-healthcheck "NOT drained $node: $1"; }

# The first failing (or not native) requirement, with the GPU's UUID: "bf16 failed on GPU 3
# (GPU-...)", or with its reason where no device was tested ("bf16 not_tested: no usable GPU:
# ..."), else the report's exit_reason; nothing when there is no readable report or no python3.
first_failure() {
  python3 - "$1" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
uuids = {f"GPU {d['index']}": d.get("gpu", {}).get("uuid", "") for d in r.get("devices", []) if d.get("kind") == "cuda"}
for q in r.get("requirements", []):
    if not q.get("met"):
        device = q.get("device", "none")
        if device == "none":
            print(f"{q['mode']} {q['status']}: {q.get('reason', '')}")
        else:
            uuid = uuids.get(device, "")
            print(f"{q['mode']} {q['status']} on {device}" + (f" ({uuid})" if uuid else ""))
        break
else:
    print(r.get("exit_reason", "")[:120])
PY
}

# A signal to this script (an operator's Ctrl-C or kill, a prolog cancelled) stops the probe, whose
# exit 5 then means "interrupted", not "a hung GPU": nothing is drained.
signalled=
probe=
on_signal() {
  signalled=$1
  [ -z "$probe" ] || kill -TERM "$probe" 2>/dev/null
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap 'on_signal HUP' HUP

if ! work=$(mktemp -d); then
  alert "mktemp -d failed (a full or read-only ${TMPDIR:-/tmp}?): the probe was not run"
  exit 1
fi
trap 'rm -rf "$work"' EXIT

# --foreground: the probe stays in this script's process group, which slurmd kills at 60 s.
timeout --foreground -k "$KILL_S" "$STOP_S" \
  precision-probe --require "$REQUIRE" --timeout "$RUN_S" --check-timeout "$CHECK_S" \
  --format json -q -o "$work/report.json" 2>"$work/stderr" &
probe=$!
[ -z "$signalled" ] || kill -TERM "$probe" 2>/dev/null
wait "$probe"
code=$?
if [ -n "$signalled" ]; then
  wait "$probe" # a trap ends the first wait early: let the probe finish stopping
  cat "$work/stderr" >&2
  alert "the health check was stopped by SIG$signalled before the probe finished"
  exit $((128 + $(kill -l "$signalled")))
fi
cat "$work/stderr" >&2
detail=$(head -n 1 "$work/stderr" | cut -c 1-300)

classify "$code"
[ "$verdict" != diagnose ] || diagnose
case $verdict in
  healthy)
    exit 0
    ;;
  alert)
    alert "precision-probe exit $code: $meaning${detail:+: $detail}"
    exit 1
    ;;
  drain)
    reason=$(first_failure "$work/report.json")
    # Exit 3's diagnostic first: it names what is wrong with the node.
    if [ "$code" -eq 3 ]; then
      reason="$meaning${reason:+: $reason}"
    fi
    reason="precision-probe: ${reason:-$meaning} (exit $code)"
    out=$(scontrol update nodename="$node" state=drain reason="${reason:0:200}" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ]; then
      alert "scontrol could not drain it (exit $rc${out:+: $out}): $reason"
      exit 1
    fi
    log warning precision-probe "drained $node: $reason"
    [ -z "$failed_log" ] || exit 1
    exit 0
    ;;
esac
