#!/usr/bin/env python3
"""Reports of the same machine side by side: a change's against the commit before's, or one seed's
against another's (bench/gpu-verify.sh quota-verdicts, quota-measure).

    compare_reports.py verdicts A.json [B.json ...]   every mode of every device: its status and
                                                      relative error (a training run's loss_rel_diff)
                                                      in each report; the modes whose statuses differ
                                                      are marked, and counted
    compare_reports.py bench A.json B.json [A2 B2 ...]  the GPUs' --bench figures (tflops, then
                                                      sustained_tflops) in pairs: per mode, A/B for
                                                      each pair and their median
    compare_reports.py soak A.json [B.json]           the GPUs' --soak figures (iterations,
                                                      mismatches, tflops; A/B of tflops)

Exit 0 where every report could be read (and, for verdicts, every status is the same in all), 1
where statuses differ or a file is refused (not a report, no figures: its message says which).
"""

import json
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            report = json.load(f)
        report["devices"]  # noqa: B018: a report has them
        return report
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"compare_reports: {path} is not a report: {e}")


def device_name(device):
    return device["kind"] + ("" if device.get("index") is None else str(device["index"]))


def verdicts(report):
    """(device, mode) -> (status, relative error or loss_rel_diff)."""
    out = {}
    for d in report["devices"]:
        for mode, p in (d.get("precisions") or {}).items():
            out[(device_name(d), mode)] = (p["status"], (p.get("smoke") or {}).get("rel_error"))
        for mode, a in (d.get("amp") or {}).items():
            out[(device_name(d), mode)] = (a["status"], a.get("loss_rel_diff"))
    return out


def figures(report, kind):
    """(GPU, mode) -> its --bench or --soak figures, of every GPU of the report."""
    out = {}
    for d in report["devices"]:
        if d["kind"] == "cpu" or not d.get(kind):
            continue
        if kind == "soak":
            for m, f in d[kind]["modes"].items():
                out[(device_name(d), m)] = (f.get("iterations"), f.get("mismatches"), f.get("tflops"))
        else:
            for m, f in d[kind].items():
                out[(device_name(d), m)] = (f.get("tflops"), f.get("sustained_tflops"))
    return out


def all_figures(paths, reports, kind):
    """Each report's figures; a report without any is an error (its run did not measure)."""
    figs = [figures(r, kind) for r in reports]
    for p, f in zip(paths, figs):
        if not f:
            sys.exit(f"compare_reports: {p} has no --{kind} figures of a GPU")
    return figs


def head(path, report):
    return f"{path}: exit {report.get('exit_code')} ({report.get('exit_reason')}), {report.get('duration_ms')} ms"


def compare_verdicts(paths):
    reports = [load(p) for p in paths]
    for p, r in zip(paths, reports):
        print(head(p, r))
    rows = [verdicts(r) for r in reports]
    keys = sorted(set().union(*rows))
    differ = [k for k in keys if len({row.get(k, ("absent",))[0] for row in rows}) > 1]
    for k in keys:
        cells = " | ".join(f"{row[k][0]} {row[k][1]}" if k in row else "absent" for row in rows)
        print(f"{k[0]:7} {k[1]:16} {cells}{'   <== statuses differ' if k in differ else ''}")
    print(f"statuses the same in all {len(rows)} reports: {len(keys) - len(differ)} of {len(keys)} modes")
    return 1 if differ else 0


def ratio(a, b):
    return a / b if a and b else None


def compare_bench(paths):
    if len(paths) % 2:
        sys.exit("compare_reports: bench takes reports in pairs (this build's, then the other's)")
    reports = [load(p) for p in paths]
    for p, r in zip(paths, reports):
        print(head(p, r))
    figs = all_figures(paths, reports, "bench")
    pairs = list(zip(figs[0::2], figs[1::2]))
    for key in sorted(set().union(*figs)):
        line = f"{key[1]:14} {key[0]:6}"
        for label, i in (("first", 0), ("sustained", 1)):
            rs = [ratio(a.get(key, (None, None))[i], b.get(key, (None, None))[i]) for a, b in pairs]
            rs = [r for r in rs if r is not None]
            by_pair = ", ".join(f"{r:.3f}" for r in rs)
            line += f"  {label} A/B {statistics.median(rs):.3f} ({by_pair})" if rs else f"  {label} -"
        print(line + "   A " + " ".join(str(a.get(key, ("-",))[0]) for a, _ in pairs))
    return 0


def compare_soak(paths):
    reports = [load(p) for p in paths]
    for p, r in zip(paths, reports):
        print(head(p, r))
    figs = all_figures(paths, reports, "soak")
    for key in sorted(set().union(*figs)):
        cells = " | ".join(f"{f[key][0]} iterations, {f[key][1]} mismatches, {f[key][2]} TFLOP/s"
                           if key in f else "absent" for f in figs)
        change = ""
        if len(figs) == 2 and key in figs[0] and key in figs[1]:
            r = ratio(figs[0][key][2], figs[1][key][2])
            change = f"   tflops A/B {r:.3f}" if r else ""
        print(f"{key[1]:14} {key[0]:6} {cells}{change}")
    return 0


def main(argv):
    ways = {"verdicts": (compare_verdicts, 1), "bench": (compare_bench, 2), "soak": (compare_soak, 1)}
    if len(argv) < 2 or argv[0] not in ways or len(argv) - 1 < ways[argv[0]][1]:
        sys.exit(f"usage: compare_reports.py verdicts|bench|soak REPORT.json...\n{__doc__}")
    compare, _ = ways[argv[0]]
    return compare(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
