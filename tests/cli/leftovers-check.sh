#!/bin/sh
# Tests.LeaveNothingBehind (ctest runs it after every other test, as the cleanup of the fixture
# every test requires): the run's temporary directory (TMPDIR of every test) is empty, and no
# process of this build's binaries is still running. It removes what it finds, then fails naming it.
#   leftovers-check.sh TMPDIR BUILD_DIR
set -u
tmp=$1
build=$2
status=0

# Processes whose executable is in the build tree (a probe, an engine, a fake worker). A process
# killed a moment ago may take a moment to go: wait up to five seconds.
ours() {
  for exe in /proc/[0-9]*/exe; do
    target=$(readlink "$exe" 2>/dev/null) || continue
    case $target in "$build"/*) pid=${exe#/proc/}; echo "${pid%/exe} $target" ;; esac
  done
}
i=0
while [ -n "$(ours)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
left=$(ours)
if [ -n "$left" ]; then
  echo "processes left running by the tests:"
  echo "$left"
  echo "$left" | while read -r pid _; do kill -KILL "$pid" 2>/dev/null; done
  status=1
fi

if [ -d "$tmp" ] && [ -n "$(ls -A "$tmp")" ]; then
  echo "left in the tests' temporary directory $tmp:"
  ls -A "$tmp"
  status=1
fi
rm -rf "$tmp"
[ $status -eq 0 ] && echo "nothing left behind: no process, no file in $tmp"
exit $status
