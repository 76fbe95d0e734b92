#!/usr/bin/env python3
"""bench/compare_reports.py against reports written here: statuses that differ are marked, counted
and exit 1; --bench figures in pairs give A/B per mode and their median; a soak's tflops A/B; a
file that is not a report, or an odd number of bench reports, is refused. Nothing is left behind
(a temporary directory).

    bench_compare_reports_test.py COMPARE_REPORTS_PY
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pychecks import check, finish  # noqa: E402


def report(bf16="native", bench=None, soak=None):
    gpu = {"kind": "cuda", "index": 0,
           "precisions": {"fp32": {"status": "native", "smoke": {"rel_error": 1.5e-7}},
                          "bf16": {"status": bf16, "smoke": {"rel_error": 1.6e-3}}},
           "amp": {"amp_bf16": {"status": "native", "loss_rel_diff": 2e-3}}}
    if bench:
        gpu["bench"] = {m: {"tflops": t, "sustained_tflops": t * 0.9} for m, t in bench.items()}
    if soak:
        gpu["soak"] = {"modes": {m: {"iterations": 100, "mismatches": n, "tflops": t} for m, (n, t) in soak.items()}}
    cpu = {"kind": "cpu", "index": None, "precisions": {"fp32": {"status": "native", "smoke": {"rel_error": 2e-7}}}}
    return {"exit_code": 0, "exit_reason": "ok", "duration_ms": 1000, "devices": [gpu, cpu]}


def run(script, tmp, *reports, way="verdicts"):
    paths = []
    for i, r in enumerate(reports):
        paths.append(os.path.join(tmp, f"r{i}.json"))
        with open(paths[-1], "w") as f:
            f.write(r if isinstance(r, str) else json.dumps(r))
    p = subprocess.run([sys.executable, script, way, *paths], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def main(script):
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run(script, tmp, report(), report())
        check("the same statuses: exit 0, every mode counted", rc == 0 and "4 of 4 modes" in out, out)
        rc, out = run(script, tmp, report(), report(bf16="failed"), report())
        check("a status that differs: exit 1", rc == 1, out)
        marked = [line for line in out.splitlines() if "statuses differ" in line and "reports" not in line]
        check("only that mode is marked", len(marked) == 1 and "bf16" in marked[0] and "cuda0" in marked[0], out)
        check("and counted", "3 of 4 modes" in out, out)
        rc, out = run(script, tmp, report(bench={"bf16": 110.0}), report(bench={"bf16": 100.0}),
                      report(bench={"bf16": 120.0}), report(bench={"bf16": 100.0}), way="bench")
        check("bench: A/B per pair and their median", rc == 0 and "first A/B 1.150 (1.100, 1.200)" in out, out)
        rc, out = run(script, tmp, report(bench={"bf16": 1.0}), way="bench")
        check("bench: an odd number of reports is refused", rc != 0 and "pairs" in out, out)
        rc, out = run(script, tmp, report(soak={"bf16": (1, 50.0)}), report(soak={"bf16": (0, 100.0)}), way="soak")
        check("soak: the mismatches and tflops A/B", rc == 0 and "1 mismatches" in out and "tflops A/B 0.500" in out, out)
        rc, out = run(script, tmp, report(bench={"bf16": 1.0}), report(), way="bench")
        check("bench: a report without figures is refused, named", rc != 0 and "r1.json has no --bench" in out, out)
        two = report(soak={"bf16": (0, 100.0)})
        two["devices"].insert(1, json.loads(json.dumps(two["devices"][0])))
        two["devices"][1]["index"] = 1
        two["devices"][1]["soak"]["modes"]["bf16"]["mismatches"] = 3
        rc, out = run(script, tmp, two, way="soak")
        check("soak: every GPU's figures, the second's mismatches too",
              "cuda1  100 iterations, 3 mismatches" in out and "cuda0  100 iterations, 0 mismatches" in out, out)
        rc, out = run(script, tmp, "{not json", report())
        check("a file that is not a report is refused, named", rc != 0 and "is not a report" in out, out)
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
