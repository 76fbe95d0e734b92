#!/bin/sh
# docs/examples/slurm-healthcheck.sh drains the node on exactly the probe's outcomes that say the
# node is bad (1, 4, 5; 3 with a diagnostic of the node's own fault, or of a GPU held where no job
# runs) and for every other outcome (0, 2, 6, 126, 127, a probe killed by a signal, 124 from
# timeout(1), an unknown code, 3 for a setting of the check or with no diagnostic it knows, the
# check itself interrupted) drains nothing; it logs loudly instead. The same under a real slurmd:
# slurm-healthcheck-slurmd-test.sh. Each case runs the example itself as slurmd does (an empty environment but
# SLURMD_NODENAME), with stubs first on PATH: a precision-probe that exits as told (and writes a
# report for the drain codes), and scontrol and logger that record their arguments. Shellcheck
# checks the example where it is installed.
#   usage: slurm-healthcheck-test.sh EXAMPLE
set -eu
example=$1
command -v python3 >/dev/null || { echo "no python3 (the example reads the report with it)"; exit 77; }
command -v timeout >/dev/null || { echo "no timeout(1)"; exit 77; }
dir=$(mktemp -d)
# A stub left waiting (when the example does not stop it) is ended too.
cleanup() {
  if [ -f "$dir/sleep.pid" ]; then kill "$(cat "$dir/sleep.pid")" 2>/dev/null || :; fi
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/bin" "$dir/probe" "$dir/tmp"
mkfifo "$dir/ready"

# The stub probe: STUB_PROBE is an exit code, "killed" (SIGKILL, as the OOM killer does), "hang"
# (says so through the FIFO, then waits for a signal: exit 5 as the real probe); STUB_NO_REPORT:
# no report for the drain codes.
cat > "$dir/probe/precision-probe" <<'EOF'
#!/bin/sh
printf '%s\n' "$@" > "$STUB_DIR/probe.args"
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
case $STUB_PROBE in
  killed) kill -KILL $$ ;;
  hang)
    echo $$ > "$STUB_DIR/probe.pid"
    sleep 1000 &
    echo $! > "$STUB_DIR/sleep.pid"
    # As the real probe: stopped, it writes its report and exits 5.
    trap 'kill $!; wait; echo "{\"exit_code\": 5}" > "$out"; exit 5' TERM
    echo ready > "$STUB_DIR/ready"
    wait
    exit 99 ;;
  3)
    # STUB_CODES: the report's diagnostics (their codes), as the probe writes them.
    diagnostics= sep=
    for c in ${STUB_CODES:-}; do
      diagnostics="$diagnostics$sep
    {
      \"code\": \"$c\",
      \"severity\": \"error\",
      \"message\": \"${STUB_MESSAGE:-what $c says}\",
      \"hint\": \"\"
    }"
      sep=,
    done
    [ -n "${STUB_NO_REPORT:-}" ] || cat > "$out" <<JSON
{"exit_code": 3, "exit_reason": "--require bf16: no usable GPU", "devices": [],
 "requirements": [{"mode": "bf16", "device": "none", "status": "not_tested", "met": false,
                   "reason": "no usable GPU: libcuda.so.1: cannot open shared object file"}],
  "diagnostics": [$diagnostics
  ]}
JSON
    echo "precision-probe: exit 3: --require bf16: no usable GPU" >&2 ;;
  1|4|5)
    [ -n "${STUB_NO_REPORT:-}" ] || cat > "$out" <<JSON
{"exit_code": $STUB_PROBE, "exit_reason": "the stub's reason",
 "devices": [{"kind": "cuda", "index": 3, "gpu": {"uuid": "GPU-1234abcd"}}],
 "requirements": [{"mode": "bf16", "device": "GPU 3", "status": "failed", "met": false}]}
JSON
    echo "precision-probe: exit $STUB_PROBE: the stub's reason" >&2 ;;
  2) echo "precision-probe: error: --require: unknown mode 'bf61' (known: fp32, bf16)" >&2 ;;
  6) echo "precision-probe: error: $out: No space left on device" >&2 ;;
esac
exit "$STUB_PROBE"
EOF
cat > "$dir/bin/scontrol" <<'EOF'
#!/bin/sh
printf '%s\n' "$@" > "$STUB_DIR/scontrol.args"
[ "${STUB_SCONTROL_EXIT:-0}" -eq 0 ] || echo "slurm_update error: Invalid node name specified" >&2
exit "${STUB_SCONTROL_EXIT:-0}"
EOF
# squeue: STUB_SQUEUE is the jobs it lists on the node, or "fail".
cat > "$dir/bin/squeue" <<'EOF'
#!/bin/sh
printf '%s\n' "$@" > "$STUB_DIR/squeue.args"
[ "${STUB_SQUEUE:-}" != fail ] || { echo "squeue: error: Unable to contact slurm controller" >&2; exit 1; }
[ -z "${STUB_SQUEUE:-}" ] || echo "$STUB_SQUEUE"
exit 0
EOF
cat > "$dir/bin/logger" <<'EOF'
#!/bin/sh
printf '%s|' "$@" >> "$STUB_DIR/logger.log"
echo >> "$STUB_DIR/logger.log"
exit "${STUB_LOGGER_EXIT:-0}"
EOF
chmod +x "$dir/probe/precision-probe" "$dir/bin/scontrol" "$dir/bin/squeue" "$dir/bin/logger"
path="$dir/probe:$dir/bin:/usr/bin:/bin"

failures=0
fail() { echo "FAIL $case: $*"; failures=$((failures + 1)); }

# run CASE STUB_PROBE [VAR=VALUE...]: the example as slurmd starts it; its exit status in $rc.
run() {
  case=$1 stub=$2
  shift 2
  rm -f "$dir/probe.args" "$dir/scontrol.args" "$dir/squeue.args" "$dir/logger.log" "$dir/stderr"
  rc=0
  env -i PATH="$path" SLURMD_NODENAME=gpu-07 TMPDIR="$dir/tmp" STUB_DIR="$dir" STUB_PROBE="$stub" \
    "$@" bash "$example" > "$dir/stdout" 2> "$dir/stderr" || rc=$?
  after_run
}
after_run() {
  [ ! -s "$dir/stdout" ] || fail "wrote to stdout: $(cat "$dir/stdout")"
  [ -z "$(ls -A "$dir/tmp")" ] || fail "left behind: $(ls -A "$dir/tmp")"
}

# expect_drain EXIT REASON: scontrol drained gpu-07 with REASON, and said so at daemon.warning.
expect_drain() {
  [ "$rc" -eq "$1" ] || fail "exit $rc, not $1: $(cat "$dir/stderr")"
  want=$(printf 'update\nnodename=gpu-07\nstate=drain\nreason=%s' "$2")
  if [ ! -f "$dir/scontrol.args" ]; then
    fail "scontrol was not called"
  elif [ "$(cat "$dir/scontrol.args")" != "$want" ]; then
    fail "scontrol was called with: $(tr '\n' ' ' < "$dir/scontrol.args")"
  fi
  expect_log "-t|precision-probe|-p|daemon.warning|--|drained gpu-07: $2|"
}

# expect_alert EXIT TEXT: nothing drained; TEXT logged at daemon.err under its own tag, and on stderr.
expect_alert() {
  [ "$rc" -eq "$1" ] || fail "exit $rc, not $1: $(cat "$dir/stderr")"
  [ ! -f "$dir/scontrol.args" ] || fail "scontrol was called: $(tr '\n' ' ' < "$dir/scontrol.args")"
  expect_log "-t|precision-probe-healthcheck|-p|daemon.err|--|NOT drained gpu-07: $2"
  grep -qF "precision-probe-healthcheck: NOT drained gpu-07: $2" "$dir/stderr" ||
    fail "not on stderr: $2 (stderr: $(cat "$dir/stderr"))"
}
expect_log() {
  if [ ! -f "$dir/logger.log" ]; then
    fail "nothing logged"
  elif [ "$(wc -l < "$dir/logger.log")" -ne 1 ] || ! grep -qF -- "$1" "$dir/logger.log"; then
    fail "logged $(cat "$dir/logger.log"), not $1"
  fi
}

# The node is bad: drained, with the first failing requirement and the GPU's UUID as the reason
# (or the requirement's reason where no GPU was tested).
for code in 1 4 5; do
  run "exit $code" "$code"
  expect_drain 0 "precision-probe: bf16 failed on GPU 3 (GPU-1234abcd) (exit $code)"
done
# Exit 3 is decided by the report's diagnostics: the node's own fault drains, naming it, whatever
# else is wrong (a setting too).
run "exit 3, no-cuda-device" 3 STUB_CODES=no-cuda-device
expect_drain 0 "precision-probe: no-cuda-device: bf16 not_tested: no usable GPU: libcuda.so.1: cannot open shared object file (exit 3)"
for fault in driver-library-not-found cuda-library-not-found device-nodes-missing \
  device-nodes-inaccessible cuinit-failed driver-crashed driver-hung compute-mode-prohibited; do
  run "exit 3, $fault after a setting" 3 STUB_CODES="nvidia-visible-devices-unset libtorch-not-found $fault"
  expect_drain 0 "precision-probe: $fault: bf16 not_tested: no usable GPU: libcuda.so.1: cannot open shared object file (exit 3)"
done
# A setting of the check (the same on every node: the first deployment's PATH without torch) never
# drains: it is logged, naming the diagnostic and the defaults to edit.
for setting in engine-not-installed libtorch-not-found libtorch-too-old libtorch-load-failed \
  libtorch-without-cuda torch-file-refused arch-not-in-build driver-too-old \
  nvidia-visible-devices-none cuda-visible-devices-empty cuda-visible-devices-invalid; do
  run "exit 3, $setting" 3 STUB_CODES="nvidia-visible-devices-unset $setting"
  expect_alert 1 "precision-probe exit 3: a setting of this check, not the node: $setting (the defaults at the top of $example): precision-probe: exit 3: --require bf16: no usable GPU"
done
# A message that spells a code is no diagnostic of that code.
run "exit 3, a message naming a fault" 3 STUB_CODES=libtorch-not-found \
  STUB_MESSAGE='torch at /x/\"code\": \"no-cuda-device\" not found'
expect_alert 1 "precision-probe exit 3: a setting of this check, not the node: libtorch-not-found"
# A GPU another process holds: a drain where no job runs on the node (a process left behind), a
# log where one does or squeue cannot say; a setting comes before a held GPU under a job.
run "exit 3, memory held, no job" 3 STUB_CODES=gpu-memory-busy
expect_drain 0 "precision-probe: gpu-memory-busy with no job on the node: bf16 not_tested: no usable GPU: libcuda.so.1: cannot open shared object file (exit 3)"
[ "$(tr '\n' ' ' < "$dir/squeue.args")" = "-h -w gpu-07 -t RUNNING,COMPLETING -o %i " ] ||
  fail "squeue was called with: $(tr '\n' ' ' < "$dir/squeue.args" 2>&1)"
run "exit 3, GPU held exclusively, no job, a setting" 3 STUB_CODES="libtorch-not-found compute-mode-exclusive-busy"
expect_drain 0 "precision-probe: compute-mode-exclusive-busy with no job on the node: bf16 not_tested: no usable GPU: libcuda.so.1: cannot open shared object file (exit 3)"
run "exit 3, memory held by a job" 3 STUB_CODES=gpu-memory-busy STUB_SQUEUE=4242
expect_alert 1 "precision-probe exit 3: gpu-memory-busy: a job runs on the node (HealthCheckNodeState=IDLE keeps the check off busy nodes)"
run "exit 3, memory held, squeue fails" 3 STUB_CODES=gpu-memory-busy STUB_SQUEUE=fail
expect_alert 1 "precision-probe exit 3: gpu-memory-busy, and squeue could not say whether a job runs on the node"
run "exit 3, memory held by a job, a setting" 3 STUB_CODES="gpu-memory-busy libtorch-too-old" STUB_SQUEUE=4242
expect_alert 1 "precision-probe exit 3: a setting of this check, not the node: libtorch-too-old"
# What the check does not know, or no report: a log.
run "exit 3, an unknown diagnostic" 3 STUB_CODES="mig-enabled some-new-code"
expect_alert 1 "precision-probe exit 3: an environment problem this check does not judge: mig-enabled some-new-code: precision-probe: exit 3"
run "exit 3, no diagnostic" 3
expect_alert 1 "precision-probe exit 3: an environment problem, and no report says which: precision-probe: exit 3"
run "exit 3, no report" 3 STUB_NO_REPORT=1
expect_alert 1 "precision-probe exit 3: an environment problem, and no report says which: precision-probe: exit 3"
# The probe's limits fit under slurmd's 60 s, and PROBE_REQUIRE is passed on.
run "exit 4, PROBE_REQUIRE" 4 PROBE_REQUIRE=bf16,fp8
expect_drain 0 "precision-probe: bf16 failed on GPU 3 (GPU-1234abcd) (exit 4)"
args=$(tr '\n' ' ' < "$dir/probe.args")
case $args in
  "--require bf16,fp8 --timeout 40 --check-timeout 30 --format json -q -o $dir/tmp/"*"/report.json ") ;;
  *) fail "the probe's arguments: $args" ;;
esac
# Without a readable report the reason is what the exit code means.
run "exit 5, no report" 5 STUB_NO_REPORT=1
expect_drain 0 "precision-probe: timed out or interrupted: a hung GPU or driver (exit 5)"
# Without SLURMD_NODENAME (run by hand), the short host name.
case="no SLURMD_NODENAME"
rm -f "$dir/scontrol.args" "$dir/logger.log"
rc=0
env -i PATH="$path" TMPDIR="$dir/tmp" STUB_DIR="$dir" STUB_PROBE=4 bash "$example" \
  > "$dir/stdout" 2> "$dir/stderr" || rc=$?
after_run
if [ "$rc" -ne 0 ] || ! grep -qx "nodename=$(hostname -s)" "$dir/scontrol.args"; then
  fail "exit $rc, scontrol: $(tr '\n' ' ' < "$dir/scontrol.args" 2>&1)"
fi
# A drain that fails, or a log that fails, is no success.
run "scontrol fails" 4 STUB_SCONTROL_EXIT=1
[ -f "$dir/scontrol.args" ] || fail "scontrol was not called"
rm -f "$dir/scontrol.args"
expect_alert 1 "scontrol could not drain it (exit 1: slurm_update error: Invalid node name specified): precision-probe: bf16 failed on GPU 3 (GPU-1234abcd) (exit 4)"
run "logger fails" 4 STUB_LOGGER_EXIT=1
if [ "$rc" -ne 1 ] || [ ! -f "$dir/scontrol.args" ] ||
  ! grep -q 'logger -t precision-probe failed' "$dir/stderr"; then
  fail "exit $rc: $(cat "$dir/stderr")"
fi

# Healthy: nothing drained, nothing logged.
run "exit 0" 0
if [ "$rc" -ne 0 ] || [ -f "$dir/scontrol.args" ] || [ -f "$dir/logger.log" ]; then
  fail "exit $rc, scontrol or logger called: $(cat "$dir/logger.log" 2>&1)"
fi

# The check could not judge the node: nothing drained, logged loudly with the probe's own line.
run "exit 2" 2 PROBE_REQUIRE=bf61
expect_alert 1 "precision-probe exit 2: usage error (PROBE_REQUIRE='bf61' or the probe's options): precision-probe: error: --require: unknown mode 'bf61'"
run "exit 6" 6
expect_alert 1 "precision-probe exit 6: the report could not be delivered to $dir/tmp/"
run "exit 124" 124
expect_alert 1 "precision-probe exit 124: the probe overran its own --timeout 40 and was stopped at 50 s"
run "exit 42" 42
expect_alert 1 "precision-probe exit 42: an exit code the probe does not document"
run "killed" killed
expect_alert 1 "precision-probe exit 137: the probe was killed by SIGKILL"
chmod -x "$dir/probe/precision-probe"
run "exit 126" 0
expect_alert 1 "precision-probe exit 126: the probe cannot be executed"
chmod +x "$dir/probe/precision-probe"
if PATH="$dir/bin:/usr/bin:/bin" command -v precision-probe >/dev/null; then
  echo "note: a precision-probe is installed in /usr/bin or /bin: no case of a missing probe here"
else
  run "exit 127" 0 PATH="$dir/bin:/usr/bin:/bin"
  expect_alert 1 "precision-probe exit 127: the probe is not installed (not on PATH=$dir/bin:/usr/bin:/bin)"
fi

# The check itself stopped (SIGTERM) while the probe runs: the probe is stopped (its exit 5 means
# "interrupted", not a hung GPU), nothing drained, nothing left running.
case="the check is stopped"
rm -f "$dir/scontrol.args" "$dir/logger.log" "$dir/probe.pid" "$dir/sleep.pid"
env -i PATH="$path" SLURMD_NODENAME=gpu-07 TMPDIR="$dir/tmp" STUB_DIR="$dir" STUB_PROBE=hang \
  bash "$example" > "$dir/stdout" 2> "$dir/stderr" &
check=$!
read -r _ < "$dir/ready"
kill -TERM "$check"
rc=0
wait "$check" || rc=$?
after_run
expect_alert 143 "the health check was stopped by SIGTERM before the probe finished"
! kill -0 "$(cat "$dir/probe.pid")" 2>/dev/null || fail "the probe is still running"

if command -v shellcheck >/dev/null; then
  case=shellcheck
  shellcheck "$example" || fail "shellcheck"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "slurm-healthcheck.sh: drains on 1, 4, 5 and 3 for the node's faults; logs 0, 2, 3 for settings, 6, 124, 126, 127, 137, 42 and SIGTERM without draining"
