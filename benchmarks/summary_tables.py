#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""README tables from the summary that rowsoftmax_bench prints last (`.ci/gpu bench` keeps it as
bench_summary.txt): the rows*cols = 2^27 sweep without a workspace, then the rows of 2^20 and
more columns with one (their plans split rows over many CTAs), then the `range` rows between
the sweep's shapes, each cell
"TB/s (% of copy synchronized / % of copy back to back)" with the plans of that run.

    python3 benchmarks/summary_tables.py benchmarks/results/h200_bench_<commit>.txt
"""
import re
import sys

LINE = re.compile(
    r"^(forward|backward)\s+(bf16|fp16|fp32)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%"
    r"(?:\s+([\d.]+)\s+([\d.]+)%|\s+-\s+-)?\s+(.*)$")  # older summaries: no back-to-back columns
COLUMNS = [("forward", "bf16"), ("forward", "fp16"), ("forward", "fp32"),
           ("backward", "bf16"), ("backward", "fp16"), ("backward", "fp32")]
PLANS = [("forward", "fp32"), ("forward", "bf16"), ("backward", "fp32"), ("backward", "bf16")]


def parse(path):
    """{(workspace, direction, dtype, cols): (rows, cell, plan)} of the sweep's rows."""
    cells = {}
    for line in open(path):
        m = LINE.match(line.strip())
        if not m or "[queued]" in line or "[forced]" in line:
            continue
        d, t, cols, rows, _, tbps, pct, _, b2b_pct, plan = m.groups()
        cols, rows = int(cols), int(rows)
        if rows != max(8 if cols >= 1 << 20 else 1, (1 << 27) // cols):
            continue  # decode rows
        workspace = "split" in plan
        b2b = f"{float(b2b_pct):.1f}%" if b2b_pct else "-"
        cells[(workspace, d, t, cols)] = (rows, f"{tbps} ({float(pct):.1f}% / {b2b})", plan)
    return cells


def table(cells, workspace):
    short = {"forward": "fwd", "backward": "bwd"}
    head = (["cols", "rows"] + [f"{short[d]} {t}" for d, t in COLUMNS]
            + [f"plan {short[d]} {'16-bit' if t == 'bf16' else t}" for d, t in PLANS])
    out = ["| " + " | ".join(head) + " |",
           "|" + "---:|" * (2 + len(COLUMNS)) + "---|" * len(PLANS)]
    for cols in sorted({k[3] for k in cells if k[0] == workspace}):
        got = [cells.get((workspace, d, t, cols)) for d, t in COLUMNS]
        rows = next(g[0] for g in got if g)
        plans = [cells.get((workspace, d, t, cols), (0, "", "-"))[2] for d, t in PLANS]
        out.append("| " + " | ".join([str(cols), str(rows)] + [g[1] if g else "-" for g in got]
                                     + plans) + " |")
    return "\n".join(out)


# The benchmark's `range` rows (bench_common.cuh, register_type: the same list): tabled apart.
RANGE = {16385, 18000, 20000, 24577, 28000, 32769, 40000, 49153, 57345, 65537, 81921, 98305,
         114689, 131073, 147457, 163841, 196609, 229377, 245761, 262143}


def main():
    cells = parse(sys.argv[1])
    ranged = {k: v for k, v in cells.items() if k[3] in RANGE}
    cells = {k: v for k, v in cells.items() if k[3] not in RANGE}
    print(table(cells, False))
    print()
    print(table(cells, True))
    if ranged:
        print()
        print(table(ranged, False))


if __name__ == "__main__":
    main()
