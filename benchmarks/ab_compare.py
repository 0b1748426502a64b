#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares benchmark summaries of two builds run alternately in one session (A1 B1 A2 B2 ...).

    python3 benchmarks/ab_compare.py --a A1.txt A2.txt --b B1.txt B2.txt [--metric b2b%|%copy]
        [--noise POINTS]

Each file is the `summary` part of rowsoftmax_bench's output. Rows are matched by direction,
dtype, cols, rows and whether the plan was forced. The noise is the spread between the runs of
the same build (the largest |A1 - A2| or |B1 - B2| over all rows), or --noise where each build
ran once (the noise of another comparison in the same session); a row whose mean difference
B - A exceeds that noise is flagged. Prints one line a row, then the noise and the counts, and
each run's copy bandwidth: a row's percentage is against its own run's copy, so where the copies
of A's and B's runs differ, every row moves by as much (b2b%, against the back-to-back copy,
moved less in the runs on record; tuning log, how to measure).
"""
import argparse
import re
import statistics
import sys


def read_summary(path):
    """The summary's rows by key, and its run's copy bandwidths ("synchronized/back to back")."""
    rows = {}
    header = None
    copy = "?"
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("summary"):
                m = re.search(r"copy ([0-9.]+) TB/s synchronized, ([0-9.]+) TB/s back to back",
                              line)
                copy = f"{m.group(1)}/{m.group(2)}" if m else copy
                continue
            if line.startswith("direction"):
                header = line.split()
                continue
            if header is None or not line.strip():
                continue
            parts = line.split()
            if len(parts) < 9 or parts[0] not in ("forward", "backward"):
                continue
            tags = tuple(re.findall(r"\[(\w+)\]", line))
            key = (parts[0], parts[1], int(parts[2]), int(parts[3]), tags, "workspace" in line)
            num = lambda x: float(x.rstrip("%")) if x not in ("-", "") else float("nan")
            pct = num(parts[6])
            b2b = num(parts[8])
            plan = re.sub(r"\s*\[\w+\]", "", " ".join(parts[9:]))
            # Several forced rows may share a key: keep the first.
            rows.setdefault(key, {"%copy": pct, "b2b%": b2b, "plan": plan})
    return rows, copy


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", nargs="+", required=True, help="summaries of build A")
    ap.add_argument("--b", nargs="+", required=True, help="summaries of build B")
    ap.add_argument("--metric", default="%copy", choices=["%copy", "b2b%"])
    ap.add_argument("--noise", type=float,
                    help="points; the noise measured elsewhere, for builds run once each")
    args = ap.parse_args()
    a_runs, a_copies = zip(*(read_summary(p) for p in args.a))
    b_runs, b_copies = zip(*(read_summary(p) for p in args.b))
    keys = sorted(set.intersection(*(set(r) for r in a_runs + b_runs)))
    if not keys:
        sys.exit("no rows common to every summary")
    m = args.metric
    if args.noise is not None:
        noise = args.noise
    elif len(a_runs) < 2 and len(b_runs) < 2:
        sys.exit("one run of each build measures no noise: give --noise")
    else:
        noise = 0.0
        for runs in (a_runs, b_runs):
            for k in keys:
                vals = [r[k][m] for r in runs]
                if all(v == v for v in vals):
                    noise = max(noise, max(vals) - min(vals))
    flagged = slower = 0
    plans_differ = 0
    print(f"{'direction':9} {'dtype':5} {'cols':>9} {'rows':>8}  {'A':>14}  {'B':>14}  {'B-A':>6}")
    for k in keys:
        av = [r[k][m] for r in a_runs]
        bv = [r[k][m] for r in b_runs]
        d = statistics.mean(bv) - statistics.mean(av)
        mark = ""
        if abs(d) > noise:
            flagged += 1
            slower += d < 0
            mark = "  <-- beyond noise"
        if a_runs[0][k]["plan"] != b_runs[0][k]["plan"]:
            plans_differ += 1
            mark += "  (plans differ)"
        fmt = lambda v: "/".join(f"{x:.1f}" for x in v)
        name = f"{k[0]:9} {k[1]:5} {k[2]:>9} {k[3]:>8}" + "".join(" " + t for t in k[4])
        print(f"{name}  {fmt(av):>14}  {fmt(bv):>14}  {d:+6.2f}{mark}")
    said = "given" if args.noise is not None else "largest spread between runs of one build"
    print(f"\n{len(keys)} rows, metric {m}; noise ({said}): "
          f"{noise:.2f} points; beyond it: {flagged} ({slower} slower in B); "
          f"plans differ: {plans_differ}")
    print("copy TB/s (synchronized/back to back): A " + ", ".join(a_copies) +
          "; B " + ", ".join(b_copies))


if __name__ == "__main__":
    main()
