#!/bin/bash
# docs/examples/slurm-healthcheck.sh under a real slurmd: a one-node cluster on loopback (Debian's
# slurmctld and slurmd, munged on a socket of its own, every file in a temporary directory, ports
# that are free), with a copy of the example as HealthCheckProgram whose documented defaults (the
# block at its top) are set for each case, as a site would set them: PATH, SLURM_CONF, and the
# variables that point the probe at the fake driver, engine and PyTorch. slurmd starts the copy
# with its own almost empty environment when it starts; the node's state and reason are then read
# with `scontrol show node`, and what the copy logged from slurmd's log ("health_check failed").
# It runs in a mount namespace of its own, where /dev also has a GPU's device nodes (below).
#   (a) a setting mistake, the first deployment's: the python3 on PATH has no torch
#       (libtorch-not-found) on a healthy node: NOT drained, logged
#   (b) the node's fault beside that mistake: no GPU (no-cuda-device): drained, the reason naming it
#   (c) a broken driver (its library crashes when queried: driver-crashed): drained
#   (d) wrong numbers (bf16's smoke test, exit 4): drained, the reason naming the GPU
# Skipped (77) where not root (slurmd runs the program as root), where Slurm, munge or unshare is
# not installed, or where no tmpfs can be mounted. Everything it started is stopped and its directory removed, whatever happens.
#   usage: slurm-healthcheck-slurmd-test.sh EXAMPLE PROBE FAKE_DRIVER FAKE_ENGINE FAKE_TORCH
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: $0 EXAMPLE PROBE FAKE_DRIVER FAKE_ENGINE FAKE_TORCH" >&2; exit 2; }
example=$(realpath "$1") probe=$(realpath "$2") fake_driver=$(realpath "$3")
fake_engine=$(realpath "$4") fake_torch=$(realpath "$5")

skip() {
  echo "skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root: slurmd runs HealthCheckProgram as root"
for tool in slurmctld slurmd scontrol squeue munged python3 timeout; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (apt-get install slurmctld slurmd slurm-client munge python3)"
done

command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"
# The rest runs in a mount namespace of its own, where /dev has a GPU's device nodes.
if [ -z "${PP_SLURMD_TEST_NAMESPACE:-}" ]; then
  PP_SLURMD_TEST_NAMESPACE=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi

# Never "": every path below is joined to it (the script runs without -e).
dir=$(mktemp -d /tmp/pp-slurmd-XXXXXX) && [ -n "$dir" ] || { echo "mktemp -d failed" >&2; exit 1; }
chmod 755 "$dir"
# The daemons' working directory, and so the health check's: slurmd allows core dumps, and a case
# crashes the fake driver's process on purpose; its core is removed with the directory.
cd "$dir" || exit 1
daemons=()
# Stops what this test started: the daemons, then any health check they left running (a process
# whose command line names this directory), then removes the directory.
cleanup() {
  local pid p
  for pid in "${daemons[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${daemons[@]}"; do wait "$pid" 2>/dev/null; done
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -qF "$dir/"; then
      kill -KILL "${p#/proc/}" 2>/dev/null
    fi
  done
  rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# A GPU node has /dev/nvidiactl and /dev/nvidiaN (the probe says device-nodes-missing otherwise: a
# node fault, which drains). This machine may have none: in this namespace alone, /dev becomes a
# tmpfs of links to the real one's entries (kept at /dev/.host) and the two nodes (no driver
# answers them; the fake driver does not open them).
mkdir "$dir/dev"
mount -t tmpfs -o mode=755 pp-dev "$dir/dev" || skip "cannot mount a tmpfs (a container without CAP_SYS_ADMIN?)"
mkdir "$dir/dev/.host"
mount --rbind /dev "$dir/dev/.host" || { echo "FAIL: mount --rbind /dev"; exit 1; }
for entry in /dev/* /dev/.[!.]*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  ln -s "/dev/.host/${entry##*/}" "$dir/dev/${entry##*/}"
done
rm -f "$dir/dev/nvidiactl" "$dir/dev/nvidia0"
if ! mknod -m 666 "$dir/dev/nvidiactl" c 195 255 || ! mknod -m 666 "$dir/dev/nvidia0" c 195 0 ||
  ! mount --move "$dir/dev" /dev; then
  echo "FAIL: the namespace's /dev"
  exit 1
fi

failures=0
fail() {
  echo "FAIL $case: $*"
  failures=$((failures + 1))
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 when it never did.
wait_for() {
  local seconds=$1
  shift
  local end=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# munged, on a socket and key of its own (run in the foreground as this test's child).
mkdir -m 700 "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/key"
chmod 400 "$dir/munge/key"
munged -F -f --key-file="$dir/munge/key" --socket="$dir/munge/socket" --pid-file="$dir/munge/pid" \
  --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" 2>"$dir/munge/stderr" &
daemons+=($!)
wait_for 10 test -S "$dir/munge/socket" || { cat "$dir/munge/stderr" "$dir/munge/log"; echo "FAIL: munged did not start"; exit 1; }

node=pp-test-node
mkdir "$dir/state" "$dir/spool" "$dir/log"
cat > "$dir/slurm.conf" <<EOF
ClusterName=pptest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
MessageTimeout=10
HealthCheckProgram=$dir/healthcheck
HealthCheckInterval=3600
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$dir/slurm.conf"

slurmctld -D -f "$SLURM_CONF" > "$dir/log/slurmctld.out" 2>&1 &
daemons+=($!)
wait_for 20 scontrol ping >/dev/null 2>&1 || {
  cat "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" 2>/dev/null
  echo "FAIL: slurmctld did not answer"
  exit 1
}

# The python3 on PATH of case (a): an interpreter of no torch (a script that runs this machine's:
# the probe never runs a script to find torch, and its prefix holds none), whatever is installed.
mkdir "$dir/python"
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > "$dir/python/python3"
chmod +x "$dir/python/python3"

# The copy for a case: the example with lines added at the end of its defaults block.
copy_with_defaults() {
  local defaults=$1
  awk -v add="$defaults" '/^# --- end of the defaults/ { print add } { print }' "$example" \
    > "$dir/healthcheck.new" || return 1
  grep -qF "$defaults" "$dir/healthcheck.new" || { echo "FAIL: the example has no defaults block"; exit 1; }
  chmod 755 "$dir/healthcheck.new"
  mv "$dir/healthcheck.new" "$dir/healthcheck"
}

node_field() { # node_field NAME: the value of NAME= in `scontrol show node`
  scontrol show node "$node" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"
}
# Reason= runs to the end of its line (it has spaces): that line, less "Reason=".
node_reason() {
  scontrol show node "$node" 2>/dev/null | sed -n 's/^ *Reason=//p'
}
drained() { case $(node_field State) in *DRAIN*) return 0 ;; esac; return 1; }
checked() { grep -q "health_check failed" "$dir/log/slurmd.log" 2>/dev/null || drained; }

slurmd_pid=
stop_slurmd() {
  [ -n "$slurmd_pid" ] || return 0
  kill -TERM "$slurmd_pid" 2>/dev/null
  wait "$slurmd_pid" 2>/dev/null
  slurmd_pid=
}

# run_case NAME DEFAULTS: the node resumed, the copy written, slurmd started (it runs the health
# check once, at its start: HealthCheckInterval is an hour), and waited for until the node is
# drained or slurmd logged the check's failure; slurmd stopped again.
run_case() {
  case=$1
  stop_slurmd
  if drained; then scontrol update nodename="$node" state=resume || fail "could not resume the node"; fi
  drained && fail "the node is still drained: $(node_reason)"
  copy_with_defaults "$2"
  : > "$dir/log/slurmd.log"
  slurmd -D -N "$node" -f "$SLURM_CONF" > "$dir/log/slurmd.out" 2>&1 &
  slurmd_pid=$!
  daemons+=("$slurmd_pid")
  if ! wait_for 60 checked; then
    fail "no outcome within 60 s: $(scontrol show node "$node" 2>&1); $(cat "$dir/log/slurmd.log")"
  fi
  # A check that exits 0 after draining is not logged: the drain is its outcome.
  sleep 1
  stop_slurmd
}

# The defaults a site sets, and those of the fakes.
base="export SLURM_CONF=$dir/slurm.conf
export PRECISION_PROBE_LIBCUDA=$fake_driver PRECISION_PROBE_LIBNVML=$fake_driver"
h200="export FAKE_NVIDIA_GPUS='NVIDIA H200:9.0:132:141'"
path_without_torch="export PATH=$dir/python:$(dirname "$probe"):/usr/bin:/bin"
path="export PATH=$(dirname "$probe"):/usr/bin:/bin"
with_torch="export PRECISION_PROBE_TORCH=$fake_torch PRECISION_PROBE_ENGINE=$fake_engine"

run_case "(a) no torch on a healthy node" "$base
$h200
$path_without_torch"
if drained; then
  fail "drained: $(node_reason)"
fi
# slurmd logs the check's exit 1 with its output (stderr), whose lines follow.
probe_line=$(grep -o 'health_check failed: rc:1 output:precision-probe: exit 3: .*' "$dir/log/slurmd.log" |
  head -n 1 | sed 's/^health_check failed: rc:1 output://')
if [ -z "$probe_line" ] ||
  ! grep -qxF "precision-probe-healthcheck: NOT drained $node: precision-probe exit 3: a setting of this check, not the node: libtorch-not-found (the defaults at the top of $dir/healthcheck): $probe_line" "$dir/log/slurmd.log"; then
  fail "slurmd did not log the setting mistake: $(cat "$dir/log/slurmd.log")"
fi

run_case "(b) no GPU, and no torch" "$base
export FAKE_NVIDIA_GPUS= FAKE_CUINIT_RESULT=100
$path_without_torch"
drained || fail "not drained: $(scontrol show node "$node")"
case $(node_reason) in
  "precision-probe: no-cuda-device: bf16 not_tested: no usable GPU"*"(exit 3)"*) ;;
  *) fail "reason: $(node_reason)" ;;
esac

run_case "(c) a driver whose library crashes" "$base
$h200
export FAKE_NVML_FAULT=segv FAKE_CUINIT_FAULT=segv
$path
$with_torch"
drained || fail "not drained: $(scontrol show node "$node")"
case $(node_reason) in
  "precision-probe: driver-crashed: "*"(exit 3)"*) ;;
  *) fail "reason: $(node_reason)" ;;
esac

run_case "(d) wrong bf16 numbers" "$base
$h200
export FAKE_ENGINE=wrong:bf16
$path
$with_torch"
drained || fail "not drained: $(scontrol show node "$node")"
case $(node_reason) in
  "precision-probe: bf16 failed on GPU 0 (GPU-"*") (exit 4)"*) ;;
  *) fail "reason: $(node_reason)" ;;
esac

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "under slurmd: a setting mistake (libtorch-not-found) drains nothing; no GPU, a crashing driver and wrong numbers drain"
