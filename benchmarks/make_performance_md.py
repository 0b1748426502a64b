#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes docs/performance.md from the current results files (python3, standard library only).

    python3 benchmarks/make_performance_md.py            # regenerate docs/performance.md, README table
    python3 benchmarks/make_performance_md.py --check    # exit 1 if either would change

Reads, in benchmarks/results/:
  run.txt            the run's card, date and commit, one "key: value" a line (other keys, such as
                     driver, build and clocks, are listed as they are)
  bench_summary.txt  the summary rowsoftmax_bench prints last, from its "summary (copy ...)" line
  bench.json         the same run's Google Benchmark JSON (optional; its date if run.txt has none)
  compare.csv/.json  benchmarks/compare_peers.py's comparison with the peers (optional)
  compare_fused.csv/.json  its --fused comparison with the torch expressions (optional)
and docs/performance_notes.md (the hand-written "What falls short and why", included as it is).
Writes docs/performance.md, and the README's headline table between the lines
<!-- headline:begin --> and <!-- headline:end --> where README.md has them. The same inputs give
the same bytes; the outputs are never edited by hand.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import OrderedDict
from pathlib import Path

from answers import is_right

ROOT = Path(__file__).resolve().parents[1]
ELEMS = 1 << 27  # the benchmark's launches: rows * cols = 2^27 elements
LONG = 1 << 20  # rows of 2^20 columns and more: at least 8 rows
COLUMNS = [("forward", "bf16"), ("forward", "fp16"), ("forward", "fp32"),
           ("backward", "bf16"), ("backward", "fp16"), ("backward", "fp32")]
SHORT = {"forward": "fwd", "backward": "bwd"}
# The README's headline: shapes of compare.csv, and the (direction, dtype) columns shown.
HEADLINE_SHAPES = ["134217x1000", "32768x4096", "4194x32000", "2670x50257", "1046x128256",
                   "8192x262144"]
HEADLINE_COLUMNS = [("forward", "bf16"), ("forward", "fp32"), ("backward", "bf16"),
                    ("backward", "fp32")]
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"
# The fused launchers' variants (the benchmark's tags): what each computes.
VARIANTS = OrderedDict([
    ("log", "log-softmax"),
    ("scaled", "softmax, a scale, per-row scales and the row log-sum-exp written"),
    ("causal", "softmax, causal (square score matrices: half of each row kept on average)"),
    ("lengths", "softmax, a length a row (half of each row kept on average)"),
    ("boolmask", "softmax, a boolean mask of (batch, queries, keys) broadcast over 8 heads up "
                 "to 4096 columns, one mask row shared by every row past that, a tenth of it 0 "
                 "(its bytes counted once)"),
    ("bias", "softmax, forward, an additive bias: of the input type a row up to 4096 columns, one "
             "float32 row shared by every row past that (its bytes counted once)"),
    ("to_fp32", "softmax of bf16 or fp16 x written as float32 y (backward: float32 dy and y, dx "
                "of the input type), each tensor's bytes at its own size"),
    ("to_bf16", "softmax of float32 x written as bf16 y (backward: bf16 dy and y, float32 dx)"),
])

TIMINGS = ["queued", "cold", "hot"]
LINE = re.compile(
    r"^(forward|backward)\s+(bf16|fp16|fp32)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%"
    r"(?:\s+([\d.]+)\s+([\d.]+)%|\s+-\s+-)?\s+(.*)$")  # older summaries: no back-to-back columns
HEAD = re.compile(r"^summary \(copy ([\d.]+) TB/s(?: synchronized, ([\d.]+) TB/s back to back)?, "
                  r"(.*)\)$")


class Result:
    """One line of the summary."""

    def __init__(self, m):
        d, t, cols, rows, us, tbps, pct, b2b_us, b2b_pct, plan = m.groups()
        self.direction, self.dtype = d, t
        self.cols, self.rows = int(cols), int(rows)
        self.us, self.tbps, self.pct = float(us), float(tbps), float(pct)
        self.b2b_us = float(b2b_us) if b2b_us else None
        self.b2b_pct = float(b2b_pct) if b2b_pct else None
        self.forced = " [forced]" in plan
        # How the call was timed (the benchmark's time_launches): idle, or behind a spin kernel
        # with the input in L2 (queued), L2 flushed (cold) or the input just rewritten (hot).
        self.timing = next((t for t in TIMINGS if f" [{t}]" in plan), "idle")
        self.queued = self.timing != "idle"
        # The fused launchers' rows: the variant the benchmark tags them with.
        self.variant = next((v for v in VARIANTS if f" [{v}]" in plan), None)
        for tag in [" [forced]"] + [f" [{t}]" for t in TIMINGS] + [f" [{v}]" for v in VARIANTS]:
            plan = plan.replace(tag, "")
        self.plan = plan.strip()

    @property
    def key(self):
        return (self.direction, self.dtype, self.cols, self.rows)

    def kind(self):
        if self.variant:
            return "fused"
        if self.forced:
            return "forced"
        if self.queued:
            return "few"
        if self.rows == max(8 if self.cols >= LONG else 1, ELEMS // self.cols):
            return "long" if self.cols >= LONG else "full"
        return "few"

    def cell(self):
        return f"{self.pct:.1f}" + (f" / {self.b2b_pct:.1f}" if self.b2b_pct is not None else "")


def read_run(results):
    run = OrderedDict()
    path = results / "run.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                run[k.strip()] = v.strip()
    return run


def read_summary(path):
    copy, copy_b2b, card, rows = None, None, None, []
    for line in path.read_text().splitlines():
        line = line.strip()
        h = HEAD.match(line)
        if h:
            copy, copy_b2b, card = h.group(1), h.group(2), h.group(3)
            continue
        m = LINE.match(line)
        if m:
            rows.append(Result(m))
    return copy, copy_b2b, card, rows


def md_table(head, rows, align=None):
    align = align or ["---:"] * len(head)
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def plan_16bit(cells, direction):
    """The 16-bit plan of a shape: bf16's, or both where fp16's differs."""
    b, h = cells.get((direction, "bf16")), cells.get((direction, "fp16"))
    if b and h and b.plan != h.plan:
        return f"bf16: {b.plan}; fp16: {h.plan}"
    return (b or h).plan if (b or h) else "-"


def full_tables(by_cols):
    """The speed table (% of copy) and the plans of each shape, for rows keyed by cols."""
    speed, plans = [], []
    for cols in sorted(by_cols):
        cells = by_cols[cols]
        rows = next(iter(cells.values())).rows
        speed.append([str(cols), str(rows)] +
                     [cells[c].cell() if c in cells else "-" for c in COLUMNS])
        plans.append([str(cols),
                      cells[("forward", "fp32")].plan if ("forward", "fp32") in cells else "-",
                      plan_16bit(cells, "forward"),
                      cells[("backward", "fp32")].plan if ("backward", "fp32") in cells else "-",
                      plan_16bit(cells, "backward")])
    head = ["cols", "rows"] + [f"{SHORT[d]} {t}" for d, t in COLUMNS]
    return (md_table(head, speed),
            md_table(["cols", "fwd fp32", "fwd 16-bit", "bwd fp32", "bwd 16-bit"], plans,
                     ["---:"] + ["---"] * 4))


def long_workspace(r, seen):
    """Whether a long row ran through the workspace launchers: the plan says where it can (a split
    plan without 'workspace=output'); else the benchmark's order (without a workspace first)."""
    if "workspace=output" in r.plan or r.plan.startswith("streaming"):
        return False
    if "split" in r.plan:
        return True
    return r.key in seen


def section_full(out, results):
    full = [r for r in results if r.kind() == "full"]
    if not full:
        return
    ranges = [("Up to 128 columns", 1, 128), ("129 to 16384 columns", 129, 16384),
              ("16385 columns to 2^20", 16385, LONG - 1)]
    out.append("## Rows of 2^27 elements\n")
    out.append("Each launch holds rows x cols = 2^27 elements. Cells: % of copy, synchronized / "
               "back to back. Plans below each table.\n")
    for title, lo, hi in ranges:
        by_cols = OrderedDict()
        for r in full:
            if lo <= r.cols <= hi:
                by_cols.setdefault(r.cols, {}).setdefault((r.direction, r.dtype), r)
        if not by_cols:
            continue
        emit_tables(out, title, by_cols)


def emit_tables(out, title, by_cols):
    """A subsection: the speed table of `by_cols`, then its plans."""
    speed, plans = full_tables(by_cols)
    out.append(f"### {title}\n")
    out.append(speed + "\n")
    out.append("Plans:\n")
    out.append(plans + "\n")


def section_long(out, results):
    long_rows = [r for r in results if r.kind() == "long"]
    if not long_rows:
        return
    groups = {False: OrderedDict(), True: OrderedDict()}
    seen = set()
    for r in long_rows:
        ws = long_workspace(r, seen)
        seen.add(r.key)
        groups[ws].setdefault(r.cols, {}).setdefault((r.direction, r.dtype), r)
    out.append("## Rows of 2^20 columns and more\n")
    out.append("At least 8 rows a launch, rows x cols = 2^27 elements. Cells: % of copy, "
               "synchronized / back to back.\n")
    for ws, title in ((True, "With a workspace"), (False, "Without a workspace")):
        if not groups[ws]:
            continue
        emit_tables(out, title, groups[ws])


def section_few(out, results):
    few = [r for r in results if r.kind() == "few"]
    if not few:
        return
    keyed = OrderedDict()
    for r in sorted(few, key=lambda r: (r.direction != "forward", r.dtype, r.cols, r.rows)):
        keyed.setdefault(r.key, {})[r.timing] = r
    rows = []
    for (d, t, cols, n), got in keyed.items():
        idle = got.get("idle")
        timed = [got.get(k) for k in TIMINGS]
        rows.append([d, t, str(cols), str(n),
                     f"{idle.us:.2f}" if idle else "-",
                     f"{idle.b2b_us:.2f}" if idle and idle.b2b_us is not None else "-"] +
                    [f"{r.us:.2f}" if r else "-" for r in timed] +
                    [next(r for r in [idle] + timed if r).plan])
    out.append("## Launches of few rows\n")
    out.append("Latency-bound shapes, in microseconds a call: idle (one launch on an idle GPU, "
               "the host's submission included), back to back, and behind a spin kernel, so that "
               "the events bracket only the GPU's work: queued (the input in L2 from the call "
               "before), cold (L2 flushed first) and hot (the input just rewritten by a copy, as "
               "after the kernel that makes it).\n")
    out.append(md_table(["direction", "dtype", "cols", "rows", "idle us", "back to back us",
                         "queued us", "cold us", "hot us", "plan"], rows,
                        ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
                         "---"]) + "\n")


def section_forced(out, results):
    forced = [r for r in results if r.kind() == "forced"]
    if not forced:
        return
    planned = {}
    for r in results:
        if not r.forced:
            planned.setdefault((r.key, r.timing), r)
    rows = []
    for r in sorted(forced, key=lambda r: (r.direction != "forward", r.dtype, r.cols, r.rows)):
        p = planned.get((r.key, r.timing))
        rows.append([r.direction, r.dtype, str(r.cols), str(r.rows),
                     r.timing,
                     f"{p.us:.2f}" if p else "-", f"{r.us:.2f}",
                     f"{r.us / p.us:.2f}" if p else "-", r.plan])
    out.append("## Other configurations timed in the same run\n")
    out.append("Shapes forced through another configuration (the plan before a change, or a "
               "candidate), beside the planned one: time a call in microseconds; a ratio above 1 "
               "means the planned configuration is faster.\n")
    out.append(md_table(["direction", "dtype", "cols", "rows", "timing", "planned us",
                         "forced us", "forced / planned", "forced plan"], rows,
                        ["---", "---", "---:", "---:", "---", "---:", "---:", "---:", "---"])
               + "\n")


def section_below(out, results):
    below = OrderedDict()
    for r in results:
        if r.kind() in ("full", "long") and r.pct < 90.0:
            below.setdefault((r.direction, r.dtype), []).append(r)
    out.append("## Below 90% of copy in this run\n")
    if not below:
        out.append("Every shape of 2^27 elements read 90% of copy or more (synchronized).\n")
        return
    out.append("Shapes of 2^27 elements below 90% of copy, synchronized (cols: %; `w`: with a "
               "workspace):\n")
    for (d, t), rs in below.items():
        seen, cells = set(), []
        for r in rs:
            ws = r.cols >= LONG and long_workspace(r, seen)
            seen.add(r.key)
            cols = f"2^{r.cols.bit_length() - 1}" if r.cols >= LONG and r.cols & (r.cols - 1) == 0 \
                else str(r.cols)
            cells.append(f"{cols}{' w' if ws else ''}: {r.pct:.1f}")
        out.append(f"- {d} {t}: " + ", ".join(cells))
    out.append("")


def section_fused(out, results):
    fused = [r for r in results if r.kind() == "fused"]
    if not fused:
        return
    plain = {}
    for r in results:
        if r.kind() in ("full", "long"):
            plain.setdefault(r.key, r)
    out.append("## Fused and masked launchers\n")
    out.append("The fused launchers (`fused.cuh`) at the plain sweep's shapes, beside the plain "
               "softmax of the same shape and type in the same run (log-softmax beside softmax). "
               "% of copy counts the bytes each call moves: the per-row scales and log-sum-exp "
               "where used; masked rows read only their kept columns (and write every column), so "
               "their time is also given as a fraction of the plain call's.\n")
    rows = []
    for r in sorted(fused, key=lambda r: (list(VARIANTS).index(r.variant), r.direction != "forward",
                                          r.dtype, r.cols)):
        p = plain.get(r.key)
        masked = r.variant in ("causal", "lengths")
        rows.append([r.variant, r.direction, r.dtype, str(r.cols), str(r.rows), f"{r.pct:.1f}",
                     f"{p.pct:.1f}" if p else "-",
                     f"{r.pct - p.pct:+.1f}" if p else "-",
                     f"{r.us / p.us:.2f}" if p and masked else "-", r.plan])
    out.append("\n".join(f"- `{k}`: {v}" for k, v in VARIANTS.items()) + "\n")
    out.append(md_table(["variant", "direction", "dtype", "cols", "rows", "% copy",
                         "plain % copy", "points", "time / plain", "plan"], rows,
                        ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:",
                         "---"]) + "\n")


def read_compare(results):
    path = results / "compare.csv"
    if not path.exists():
        return None, []
    meta = {}
    if (results / "compare.json").exists():
        meta = json.loads((results / "compare.json").read_text()).get("meta", {})
    with open(path, newline="") as f:
        return meta, list(csv.DictReader(f))


def error_of(r):
    """Row `r`'s error against float64, as the tables print it."""
    return f"error {float(r['rel_err']):.1e}"


def peer_points(rows):
    """{(shape, direction, dtype): (rowsoftmax row, best peer row)}, shapes in file order; a
    peer whose answer is wrong is never the best."""
    points = OrderedDict()
    for r in rows:
        k = (r["shape"], r["direction"], r["dtype"])
        mine, best = points.get(k, (None, None))
        if r["impl"] == "rowsoftmax":
            mine = r
        elif is_right(r) and (best is None or float(r["tbps"]) > float(best["tbps"])):
            best = r
        points[k] = (mine, best)
    return points


def peer_cell(mine, best, shape):
    if not mine:
        return ""
    if not is_right(mine):
        return f"wrong ({error_of(mine)})"
    value = (f"{float(mine['us']):.1f} us" if shape.startswith("decode")
             else f"{float(mine['pct_copy']):.1f}%")
    if not best:
        return value
    return f"{value} ({float(mine['tbps']) / float(best['tbps']):.2f}× {best['impl']})"


def section_peers(out, meta, rows):
    if not rows:
        return
    points = peer_points(rows)
    shapes = list(OrderedDict.fromkeys(k[0] for k in points))
    table = [[s] + [peer_cell(*points.get((s, d, t), (None, None)), s) for d, t in COLUMNS]
             for s in shapes]
    ratios = [(float(m["tbps"]) / float(b["tbps"]), b["impl"]) for m, b in points.values()
              if m and b and is_right(m)]
    wrong = [r for r in rows if r["impl"] != "rowsoftmax" and not is_right(r)]
    at_or_above = sum(1 for q, _ in ratios if q >= 1.0)
    below = sorted(q for q, _ in ratios if q < 1.0)
    by_peer = OrderedDict()
    for q, impl in sorted(ratios, key=lambda x: x[1]):
        if q < 1.0:
            by_peer[impl] = by_peer.get(impl, 0) + 1
    out.append("## Against the peers\n")
    info = ", ".join(f"{k} {meta[k]}" for k in ("device", "date", "commit", "torch", "triton")
                     if k in meta)
    copy = f", copy {float(meta['copy_tbps']):.3f} TB/s" if "copy_tbps" in meta else ""
    out.append(f"`benchmarks/compare_peers.py` ({info}{copy}): rowsoftmax, PyTorch eager, "
               "torch.compile, a Triton kernel and quack in one process, calls back to back. "
               "Cells: rowsoftmax's % of that copy (decode rows: microseconds a call, host "
               "overhead included), then its speed over the fastest peer's, and which peer. "
               "A peer's answer counts only where it is right (normwise error against float64 "
               "finite and within 16 units of the type's rounding: `benchmarks/answers.py`). "
               "Every implementation's error against float64 is in "
               "`benchmarks/results/compare_table.txt`; plots: "
               "`benchmarks/results/compare_forward.png`, `compare_backward.png`.\n")
    out.append(md_table(["shape"] + [f"{SHORT[d]} {t}" for d, t in COLUMNS], table,
                        ["---"] + ["---:"] * len(COLUMNS)) + "\n")
    if ratios:
        text = f"At or above the fastest peer on {at_or_above} of {len(ratios)} points"
        if below:
            peers = ", ".join(f"{n} against {p}" for p, n in by_peer.items())
            text += f"; below it on {len(below)} ({peers}), the lowest ratio {below[0]:.2f}"
        out.append(text + ".\n")
    if wrong:
        out.append("Wrong answers, not counted: " + "; ".join(
            f"{r['impl']} {r['direction']} {r['dtype']} {r['shape']} ({error_of(r)})"
            for r in wrong) + ".\n")


def section_fused_peers(out, results):
    path = results / "compare_fused.csv"
    if not path.exists():
        return
    meta = {}
    if (results / "compare_fused.json").exists():
        meta = json.loads((results / "compare_fused.json").read_text()).get("meta", {})
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    points = OrderedDict()
    for r in rows:
        points.setdefault((r["shape"], r["dtype"]), {})[r["impl"]] = r
    table = []
    # Attention rows first, then vocabulary rows (the run alternates them).
    order = sorted(points, key=lambda k: (not k[0].startswith("attn"), list(points).index(k)))
    for shape, dtype in order:
        got = points[(shape, dtype)]
        mine = got.get("rowsoftmax")
        if not mine:
            continue
        if not is_right(mine):
            table.append([shape, dtype, f"wrong ({error_of(mine)})", "", "", ""])
            continue
        cells = [shape, dtype, f"{float(mine['pct_copy']):.1f}%", f"{float(mine['us']):.1f}"]
        for peer in ("torch eager", "torch.compile"):
            p = got.get(peer)
            cells.append("-" if not p else f"{float(mine['tbps']) / float(p['tbps']):.2f}×"
                         if is_right(p) else "wrong")
        table.append(cells)
    info = ", ".join(f"{k} {meta[k]}" for k in ("device", "date", "commit", "torch") if k in meta)
    out.append("## Fused calls against the torch expressions they replace\n")
    out.append(f"`benchmarks/compare_peers.py --fused` ({info}): rowsoftmax's fused call (a "
               "scale, causal, key-padding or boolean attention masks, an ALiBi bias a head, or "
               "float32 probabilities, on attention scores; log-softmax, a temperature a row or "
               "float32 probabilities on vocabulary rows) against the torch expression a user "
               "runs instead (`softmax(x * s)`, `softmax((x * s).masked_fill(~keep, -inf))`, "
               "`softmax(x * s + bias)`, `softmax(x, -1, dtype=torch.float32)`, "
               "`log_softmax(x)`, `softmax(x / t[:, None])`), eager and under torch.compile, "
               "forward, calls back to back. Cells: rowsoftmax's % of copy over 2 x rows x cols x "
               "size (plus a boolean mask's or a bias's bytes, once, or a float32 output's extra "
               "bytes), its time a call, and its speed over each. Errors against float64 and the "
               "plot: `benchmarks/results/compare_fused.json`, `compare_fused.png`.\n")
    out.append(md_table(["shape", "dtype", "% copy", "us", "vs eager", "vs torch.compile"], table,
                        ["---", "---", "---:", "---:", "---:", "---:"]) + "\n")


def headline(meta, rows):
    points = peer_points(rows)
    table = []
    for s in HEADLINE_SHAPES:
        if any((s, d, t) in points for d, t in HEADLINE_COLUMNS):
            table.append([s.replace("x", " x ")] +
                         [peer_cell(*points.get((s, d, t), (None, None)), s)
                          for d, t in HEADLINE_COLUMNS])
    if not table:
        return None
    when = ", ".join(str(meta[k]) for k in ("device", "date") if k in meta)
    return (md_table(["rows x cols"] + [f"{SHORT[d]} {t}" for d, t in HEADLINE_COLUMNS], table,
                     ["---"] + ["---:"] * len(HEADLINE_COLUMNS)) +
            f"\n\nCells: rowsoftmax's % of the copy bandwidth measured in the same process "
            f"({when}; calls back to back), then its speed over the fastest of PyTorch eager, "
            "torch.compile, a Triton kernel and quack, and which that was (quack refuses rows "
            "whose bytes are not a multiple of 16, such as 50257 columns). From "
            "`benchmarks/results/compare.csv`, regenerated by `benchmarks/make_performance_md.py`; "
            "every shape and the C++ benchmark's tables: [docs/performance.md](docs/performance.md).")


def build(results, notes_path):
    run = read_run(results)
    copy, copy_b2b, card, rows = read_summary(results / "bench_summary.txt")
    if "date" not in run and (results / "bench.json").exists():
        date = json.loads((results / "bench.json").read_text()).get("context", {}).get("date")
        if date:
            run["date"] = date[:10]
    card = run.get("card", card or "unknown card")
    out = ["# Performance", "",
           "<!-- Generated by benchmarks/make_performance_md.py from benchmarks/results/; "
           "do not edit by hand. -->", ""]
    out.append(f"The benchmark's run on an **{card}**, {run.get('date', 'date unknown')}, "
               f"commit {run.get('commit', 'unknown')} (`rowsoftmax_bench`, "
               "`benchmarks/results/bench_summary.txt`).\n")
    extra = [(k, v) for k, v in run.items() if k not in ("card", "date", "commit")]
    if extra:
        out.append("\n".join(f"- {k}: {v}" for k, v in extra) + "\n")
    copy_text = f"{copy} TB/s synchronized" if copy else "not recorded"
    if copy_b2b:
        copy_text += f", {copy_b2b} TB/s back to back"
    out.append(
        "How to read it. Every speed is a percentage of the device-to-device copy bandwidth "
        f"measured in the same process ({copy_text}), over the bytes a softmax must move: "
        "forward 2 x rows x cols x size, backward 3 x (two reads, one write, which the memory "
        "system serves faster than a copy: hence backward above 100%). *Synchronized*: each "
        "launch alone, median of CUDA-event times (the start event is recorded on an idle GPU, "
        "so the host's submission is included); *back to back*: batches of calls between two "
        "events, as a training step issues them, against the copy timed the same way. Plans as "
        "`to_string(plan)` prints them: the tier (`registers`, `cluster xN`, `staged`, "
        "`streaming`, `split GxC ctas`), CTA threads (`cta`), threads a row (`tpr`), elements a "
        "vector x vectors a thread (`vec`), rows a thread (`rows`), tiles kept in shared memory "
        "(`stash`), `head`: rows start misaligned and a head is peeled, `tiled`: rows copied "
        "through a shared-memory tile. Regenerate after a run: copy its `bench.json`, "
        "`bench_summary.txt` and `run.txt` into `benchmarks/results/`, then "
        "`python3 benchmarks/make_performance_md.py`.\n")
    section_full(out, rows)
    section_long(out, rows)
    section_fused(out, rows)
    section_few(out, rows)
    section_forced(out, rows)
    meta, peers = read_compare(results)
    section_peers(out, meta, peers)
    section_fused_peers(out, results)
    section_below(out, rows)
    notes = notes_path.read_text() if notes_path.exists() else ""
    notes = re.sub(r"^<!--.*?-->\n+", "", notes, flags=re.S).strip()
    if notes:
        out.append(notes + "\n")
    text = "\n".join(out).rstrip() + "\n"
    return text, (headline(meta, peers) if peers else None)


def with_headline(readme, table):
    if table is None or BEGIN not in readme or END not in readme:
        return readme
    before, rest = readme.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return f"{before}{BEGIN}\n{table}\n{END}{after}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    ap.add_argument("--notes", type=Path, default=ROOT / "docs" / "performance_notes.md")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if an output would change")
    args = ap.parse_args()
    text, table = build(args.results, args.notes)
    outputs = [(args.out, text)]
    if args.readme.exists():
        readme = args.readme.read_text()
        outputs.append((args.readme, with_headline(readme, table)))
    changed = [p for p, t in outputs if not p.exists() or p.read_text() != t]
    if args.check:
        for p in changed:
            print(f"{p} is not what {Path(__file__).name} writes from the current results")
        return 1 if changed else 0
    for p, t in outputs:
        if p in changed:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(t)
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
