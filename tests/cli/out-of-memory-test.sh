#!/bin/sh
# A summary that runs out of memory (docs/summarize.md): exit 4, one line on stderr, with
# --format json still a JSON document (error.kind "internal") on stdout, nothing written to -o FILE
# and nothing left beside it. The memory is cut with `ulimit -v` below what a 30 MB report needs
# (not under sanitizers, which reserve terabytes of address space: the test is disabled there).
#   usage: out-of-memory-test.sh PROBE
set -eu
probe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$probe" --quick --format json > "$dir/report.json" || [ $? -le 1 ]
# The probe's own report with 30 MB of a field no reader knows in front: valid, and large.
{ printf '{"padding": "'; head -c 30000000 /dev/zero | tr '\0' x; printf '", '; tail -c +2 "$dir/report.json"; } > "$dir/big.json"
rc=0
"$probe" summarize --format json "$dir/big.json" > "$dir/whole.json" || rc=$?
if [ "$rc" -ne 0 ] || ! grep -q '"nodes": 1' "$dir/whole.json"; then
  echo "with memory enough the summary reads the report: exit $rc"; exit 1
fi
mkdir "$dir/out"
rc=0
(ulimit -v 20000 && exec "$probe" summarize --format json -o "$dir/out/summary.json" "$dir/big.json") \
  > "$dir/stdout" 2> "$dir/stderr" || rc=$?
[ "$rc" -eq 4 ] || { echo "out of memory: exit $rc, not 4: $(cat "$dir/stderr")"; exit 1; }
grep -q '^precision-probe: error: internal error: ' "$dir/stderr" || { echo "no error line: $(cat "$dir/stderr")"; exit 1; }
[ "$(wc -l < "$dir/stderr")" -eq 1 ] || { echo "more than one line on stderr: $(cat "$dir/stderr")"; exit 1; }
grep -q '"kind": "internal"' "$dir/stdout" && grep -q '"exit_code": 4' "$dir/stdout" ||
  { echo "no JSON error document: $(cat "$dir/stdout")"; exit 1; }
[ -z "$(ls -A "$dir/out")" ] || { echo "left in the output's directory: $(ls -A "$dir/out")"; exit 1; }
echo "out of memory: exit 4, a JSON error document, nothing written"
