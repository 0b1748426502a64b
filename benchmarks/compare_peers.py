#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side: rowsoftmax against PyTorch eager, torch.compile, a Triton kernel written here,
and quack (when importable), forward and backward, in one process on the same tensors.

    PYTHONPATH=examples/pytorch python benchmarks/compare_peers.py --out results/

Each implementation is timed by CUDA events around single calls issued back to back (median
of --reps after at least --warmup calls and --warm-ms milliseconds of calls, inputs warm in
memory as in training loops; each point starts with another implementation), as TB/s over the
bytes a softmax must move (forward 2*rows*cols*size, backward 3*rows*cols*size), and as a
percentage of the device-to-device copy bandwidth measured in the same run. Every result
carries its normwise error against float64 (first rows of the tensor), so a fast wrong answer
cannot hide; a wrong one (answers.py) is marked and never counts as the fastest peer.
Writes compare.csv, compare.json, compare_forward.png and compare_backward.png to --out.
--impls, --shapes (a regular expression on the label), --dtypes and --directions time a subset
(not with --fused);
--runs K measures each point K times, the implementations in another order each time, and
reports the median (rowsoftmax against quack at their closest shapes, say:
--impls rowsoftmax,quack --shapes 'x(1000|1024|2048|32000|131072)$' --runs 3).

    PYTHONPATH=examples/pytorch python benchmarks/compare_peers.py --fused --out results/

compares instead the fused calls (rowsoftmax_torch.softmax / log_softmax with a scale, per-row
scales, lengths, causal, a boolean mask or an ALiBi bias) with the torch expressions a user would
run instead, eager and under torch.compile, forward, on attention scores and vocabulary rows; TB/s
over the bytes the fused call must move (2*rows*cols*size, a mask's columns counted as read, plus
a boolean mask's or a bias's bytes once); writes compare_fused.csv, compare_fused.json and
compare_fused.png.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from answers import is_right

# --------------------------------------------------------------------------- Triton peer

@triton.jit
def _tr_fwd_block(X, Y, xs, ys, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(X + row * xs + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(Y + row * ys + cols, (e / tl.sum(e, 0)).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _tr_fwd_loop(X, Y, xs, ys, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    s = 0.0
    for off in range(0, n, BLOCK):  # online (max, sum)
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * xs + cols, mask=cols < n, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * xs + cols, mask=cols < n, other=-float("inf")).to(tl.float32)
        tl.store(Y + row * ys + cols, (tl.exp(x - m) / s).to(Y.dtype.element_ty), mask=cols < n)


@triton.jit
def _tr_bwd_block(DY, Y, DX, s_, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    dy = tl.load(DY + row * s_ + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(Y + row * s_ + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(dy * y, 0)
    tl.store(DX + row * s_ + cols, (y * (dy - dot)).to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _tr_bwd_loop(DY, Y, DX, s_, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    dot = 0.0
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        dy = tl.load(DY + row * s_ + cols, mask=cols < n, other=0.0).to(tl.float32)
        y = tl.load(Y + row * s_ + cols, mask=cols < n, other=0.0).to(tl.float32)
        dot += tl.sum(dy * y, 0)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        dy = tl.load(DY + row * s_ + cols, mask=cols < n, other=0.0).to(tl.float32)
        y = tl.load(Y + row * s_ + cols, mask=cols < n, other=0.0).to(tl.float32)
        tl.store(DX + row * s_ + cols, (y * (dy - dot)).to(DX.dtype.element_ty), mask=cols < n)


ONE_BLOCK_MAX = 8192  # one program holds the row up to here; longer rows loop in 4096 chunks


def _warps(block):
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def triton_forward(x):
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    rows, n = x2.shape
    if n <= ONE_BLOCK_MAX:
        b = triton.next_power_of_2(n)
        _tr_fwd_block[(rows,)](x2, y, x2.stride(0), y.stride(0), n, BLOCK=b, num_warps=_warps(b))
    else:
        _tr_fwd_loop[(rows,)](x2, y, x2.stride(0), y.stride(0), n, BLOCK=4096, num_warps=8)
    return y.view(x.shape)


def triton_backward(dy, y):
    dy2, y2 = dy.reshape(-1, dy.shape[-1]), y.reshape(-1, y.shape[-1])
    dx = torch.empty_like(y2)
    rows, n = y2.shape
    if n <= ONE_BLOCK_MAX:
        b = triton.next_power_of_2(n)
        _tr_bwd_block[(rows,)](dy2, y2, dx, n, n, BLOCK=b, num_warps=_warps(b))
    else:
        _tr_bwd_loop[(rows,)](dy2, y2, dx, n, n, BLOCK=4096, num_warps=8)
    return dx.view(y.shape)


# --------------------------------------------------------------------------- peers

def implementations():
    """name -> (forward(x), backward(dy, y)) or a string saying why it is missing."""
    impls = {}
    try:
        import rowsoftmax_torch as rs
        impls["rowsoftmax"] = (rs.softmax_forward, rs.softmax_backward)
    except Exception as e:  # noqa: BLE001
        impls["rowsoftmax"] = f"not importable: {e}"
    impls["torch eager"] = (
        lambda x: torch.softmax(x, dim=-1),
        lambda dy, y: torch._softmax_backward_data(dy, y, -1, y.dtype),
    )

    def bwd_expr(dy, y):
        dot = (dy.float() * y.float()).sum(-1, keepdim=True)
        return (y.float() * (dy.float() - dot)).to(y.dtype)

    # dynamic=True: one compile per dtype and direction for all shapes (static-shape compiles
    # for every shape did not fit the device-time budget of a run).
    impls["torch.compile"] = (
        torch.compile(lambda x: torch.softmax(x, dim=-1), dynamic=True),
        torch.compile(bwd_expr, dynamic=True),
    )
    impls["triton"] = (triton_forward, triton_backward)
    try:
        from quack.softmax import softmax_bwd, softmax_fwd
        impls["quack"] = (softmax_fwd, softmax_bwd)
    except Exception as e:  # noqa: BLE001
        impls["quack"] = f"not importable: {type(e).__name__}: {e}"
    return impls


# --------------------------------------------------------------------------- measuring

def time_ms(fn, warmup, reps, warm_s=0.0, sync=False):
    """Median of `reps` single calls bracketed by CUDA events, issued back to back (`sync`: each
    waited for before the next), after at least `warmup` calls and `warm_s` seconds of calls:
    the first milliseconds of calls on a new shape run slower (docs/tuning.md, How to measure), so a
    fixed count of warm-up calls favours whoever runs later."""
    done, until = 0, time.perf_counter() + warm_s
    while done < warmup or time.perf_counter() < until:
        fn()
        done += 1
        if done % 8 == 0:  # the host a few calls ahead at most, so the clock measures the GPU
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
        if sync:
            e.synchronize()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def copy_tbps(reps=20):
    a = torch.empty(2 ** 29, dtype=torch.float16, device="cuda").uniform_()
    b = torch.empty_like(a)
    ms = time_ms(lambda: b.copy_(a), 3, reps)
    return 2 * a.numel() * a.element_size() / (ms * 1e-3) / 1e12


def normwise(out, ref, check_rows):
    out = out.reshape(-1, out.shape[-1])[:check_rows].double()
    ref = ref.reshape(-1, ref.shape[-1])[:check_rows]
    return ((out - ref).norm() / ref.norm()).item()


def shapes():
    """(label, shape, dtypes) per the comparison's shape set."""
    every = (torch.bfloat16, torch.float16, torch.float32)
    out = []
    for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536):  # quack's own set
        out.append((f"32768x{n}", (32768, n), every))
    out.append(("16384x131072", (16384, 131072), every))
    out.append(("8192x262144", (8192, 262144), every))
    for n in (1000, 4097, 32000, 50257, 128256, 151936):  # odd cols, rows*cols ~ 2^27
        out.append((f"{2 ** 27 // n}x{n}", (2 ** 27 // n, n), every))
    out.append(("attn 8x12x512x512", (8, 12, 512, 512), (torch.float16,)))
    for r in (1, 8, 64):  # decode-time sampling
        out.append((f"decode {r}x128256", (r, 128256), (torch.float32,)))
    return out


NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="compare-out")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--warm-ms", type=float, default=50.0,
                    help="milliseconds of warm-up calls at least, per implementation and point")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--check-rows", type=int, default=64, help="rows compared with float64")
    ap.add_argument("--budget", type=float, default=400.0, help="seconds; later shapes are skipped")
    ap.add_argument("--quick", action="store_true", help="bf16 and the first shapes only")
    ap.add_argument("--replot", metavar="JSON", help="redraw the plots and table of a saved run")
    ap.add_argument("--impls", help="comma-separated implementations to time (default: all)")
    ap.add_argument("--shapes", help="regular expression a shape's label must match")
    ap.add_argument("--dtypes", help="comma-separated dtypes to time (bf16, fp16, fp32)")
    ap.add_argument("--directions", default="forward,backward", help="comma-separated directions")
    ap.add_argument("--runs", type=int, default=1,
                    help="times each point is measured, implementations in a new order each "
                         "time; the median of the runs is reported")
    ap.add_argument("--fused", action="store_true",
                    help="the fused calls against the torch expressions they replace")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.replot:
        saved = json.loads(Path(args.replot).read_text())
        plot(saved["results"], out_dir, saved["meta"])
        names = list(dict.fromkeys(r["impl"] for r in saved["results"]))
        print_table(saved["results"], names, saved["meta"]["copy_tbps"])
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to compare")
        return 0

    t0 = time.time()
    torch.manual_seed(0)
    copy = copy_tbps()
    dev = torch.cuda.get_device_name()
    impls = implementations()
    if args.impls:
        keep = args.impls.split(",")
        unknown = [k for k in keep if k not in impls]
        if unknown:
            print(f"--impls: unknown {unknown}; known: {list(impls)}")
            return 2
        impls = {k: v for k, v in impls.items() if k in keep}
    missing = {k: v for k, v in impls.items() if isinstance(v, str)}
    impls = {k: v for k, v in impls.items() if not isinstance(v, str)}
    print(f"device {dev}, copy {copy:.3f} TB/s, torch {torch.__version__}, triton {triton.__version__}")
    for k, v in missing.items():
        print(f"skipped {k}: {v}")
    if args.fused:
        return run_fused(args, out_dir, copy, dev)

    results, skipped, point = [], [], 0
    dtypes_kept = set(args.dtypes.split(",")) if args.dtypes else set(NAMES.values())
    directions = args.directions.split(",")
    for label, shape, dtypes in shapes():
        if args.shapes and not re.search(args.shapes, label):
            continue
        for dtype in dtypes:
            if (args.quick and dtype != torch.bfloat16) or NAMES[dtype] not in dtypes_kept:
                continue
            if time.time() - t0 > args.budget:
                skipped.append(f"{label} {NAMES[dtype]}")
                continue
            x = (torch.rand(shape, device="cuda") * 16 - 8).to(dtype)
            dy = (torch.rand(shape, device="cuda") * 2 - 1).to(dtype)
            rows = x.numel() // shape[-1]
            check = min(rows, args.check_rows)
            ref_y = torch.softmax(x.reshape(-1, shape[-1])[:check].double(), dim=-1)
            y = torch.softmax(x, dim=-1)
            yd = y.reshape(-1, shape[-1])[:check].double()
            dyd = dy.reshape(-1, shape[-1])[:check].double()
            ref_dx = yd * (dyd - (dyd * yd).sum(-1, keepdim=True))
            size = x.element_size() * x.numel()
            for direction, nbytes in (("forward", 2 * size), ("backward", 3 * size)):
                if direction not in directions:
                    continue
                names, times, errs = list(impls), {}, {}
                for _ in range(args.runs):
                    # Each point and run starts with another implementation, so that none is
                    # always first on a new shape.
                    first = point % len(names)
                    point += 1
                    for name in names[first:] + names[:first]:
                        if name in errs and errs[name] is None:
                            continue  # failed in an earlier run
                        fwd, bwd = impls[name]
                        call = (lambda: fwd(x)) if direction == "forward" else (lambda: bwd(dy, y))
                        try:
                            if name not in errs:
                                got = call()
                                errs[name] = normwise(
                                    got, ref_y if direction == "forward" else ref_dx, check)
                                del got
                            times.setdefault(name, []).append(
                                time_ms(call, args.warmup, args.reps, args.warm_ms * 1e-3))
                        except Exception as e:  # noqa: BLE001
                            print(f"  {name} {direction} {label} {NAMES[dtype]}: failed: "
                                  f"{type(e).__name__}: {e}")
                            errs[name] = None
                for name in names:
                    if not times.get(name) or errs.get(name) is None:
                        continue
                    ms = statistics.median(times[name])
                    tbps = nbytes / (ms * 1e-3) / 1e12
                    results.append(dict(direction=direction, dtype=NAMES[dtype], shape=label,
                                        rows=rows, cols=shape[-1], impl=name, us=ms * 1e3,
                                        tbps=tbps, pct_copy=100 * tbps / copy, rel_err=errs[name],
                                        runs=len(times[name])))
            del x, dy, y
            torch.cuda.empty_cache()

    # Ratio of rowsoftmax to the best peer whose answer is right (answers.py), per shape.
    best = {}
    for r in results:
        if r["impl"] != "rowsoftmax" and is_right(r):
            k = (r["direction"], r["dtype"], r["shape"])
            best[k] = max(best.get(k, 0.0), r["tbps"])
    for r in results:
        k = (r["direction"], r["dtype"], r["shape"])
        r["vs_best_peer"] = r["tbps"] / best[k] if best.get(k) else float("nan")

    meta = dict(device=dev, copy_tbps=copy, torch=torch.__version__, triton=triton.__version__,
                date=time.strftime("%Y-%m-%d"), commit=os.environ.get("ROWSOFTMAX_COMMIT", "unknown"),
                missing=missing, skipped_for_time=skipped)
    (out_dir / "compare.json").write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    with open(out_dir / "compare.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0].keys()) if results else ["none"])
        w.writeheader()
        w.writerows(results)
    plot(results, out_dir, meta)
    print_table(results, impls.keys(), copy)
    if skipped:
        print(f"skipped for the time budget: {', '.join(skipped)}")
    return 0


def print_table(results, names, copy):
    names = list(names)
    print(f"\nTB/s (and rel. error vs float64) per implementation; copy {copy:.3f} TB/s; "
          "last column: rowsoftmax / best peer; !: a wrong answer (answers.py), no peer")
    head = f"{'dir':4} {'dtype':5} {'shape':20}" + "".join(f" {n[:13]:>21}" for n in names) + "   ratio"
    print(head)
    keys = []
    for r in results:
        k = (r["direction"], r["dtype"], r["shape"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        row = {r["impl"]: r for r in results if (r["direction"], r["dtype"], r["shape"]) == k}
        cells = "".join(
            f" {row[n]['tbps']:6.3f} ({row[n]['rel_err']:8.1e}){' ' if is_right(row[n]) else '!'}"
            if n in row else f" {'-':>21}" for n in names)
        ratio = row["rowsoftmax"]["vs_best_peer"] if "rowsoftmax" in row else float("nan")
        print(f"{k[0][:4]:4} {k[1]:5} {k[2]:20}{cells} {ratio:6.2f}")


def plot(results, out_dir, meta):
    """compare_<direction>.png: TB/s against cols per dtype, one colour per implementation;
    lines join the power-of-two shapes, odd cols are unjoined markers."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        print(f"no plots: {e}")
        return
    names = sorted({r["impl"] for r in results})
    colours = {n: f"C{i}" for i, n in enumerate(names)}
    for direction in ("forward", "backward"):
        fig, axes = plt.subplots(1, 3, figsize=(18, 5), sharey=True)
        for ax, dtype in zip(axes, ("bf16", "fp16", "fp32")):
            rows = [r for r in results if r["direction"] == direction and r["dtype"] == dtype
                    and not r["shape"].startswith(("attn", "decode"))]
            for name in names:
                mine = [r for r in rows if r["impl"] == name]
                pow2 = sorted((r["cols"], r["tbps"]) for r in mine if r["cols"] & (r["cols"] - 1) == 0)
                odd = [(r["cols"], r["tbps"]) for r in mine if r["cols"] & (r["cols"] - 1)]
                ax.plot([p[0] for p in pow2], [p[1] for p in pow2], marker="o", color=colours[name],
                        label=name)
                ax.plot([p[0] for p in odd], [p[1] for p in odd], linestyle="none", marker="x",
                        markersize=9, color=colours[name])
            ax.axhline(meta["copy_tbps"], color="gray", linestyle="--", label="copy")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{direction} {dtype}")
            ax.set_xlabel("cols (o: 2^k cols, x: odd cols; rows x cols 2^27..2^31)")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("TB/s")
        axes[0].legend()
        fig.suptitle(f"row softmax {direction} on {meta['device']}, {meta['date']}, commit {meta['commit']}")
        fig.tight_layout()
        fig.savefig(out_dir / f"compare_{direction}.png", dpi=80)
        plt.close(fig)


# --------------------------------------------------------------------------- fused calls

def fused_cases():
    """(label, shape, dtype, case) for the fused comparison: attention scores (batch, heads,
    queries, keys), 16-bit, scaled, causal, key-padded, a boolean mask, an ALiBi bias or float32
    probabilities; vocabulary rows, bf16 and fp32, log-softmax or a temperature a row (bf16:
    also float32 probabilities). The two families alternate, so that a run cut short by its time
    budget still has some of each."""
    attn, vocab = [], []
    for b, h, q in ((8, 12, 512), (2, 32, 2048), (1, 32, 4096)):
        for dtype in (torch.bfloat16, torch.float16):
            for case in ("scaled", "causal", "padded", "mask", "alibi", "to_fp32"):
                attn.append((f"attn {b}x{h}x{q}x{q} {case}", (b, h, q, q), dtype, case))
    for cols in (128256, 151936, 256000):
        rows = max(1, 2 ** 27 // cols)
        for dtype in (torch.bfloat16, torch.float32):
            for case in ("log", "temperature") + (("to_fp32",) if dtype == torch.bfloat16 else ()):
                vocab.append((f"vocab {rows}x{cols} {case}", (rows, cols), dtype, case))
    out = []
    for i in range(max(len(attn), 2 * len(vocab))):
        out += attn[i:i + 1] + vocab[i // 2:i // 2 + 1] * (i % 2 == 0)
    return out


def fused_calls(case, x):
    """({name: forward()}, expr, extra bytes) for one fused case on scores or logits `x`:
    rowsoftmax's fused call, and the torch expression `expr` it replaces, eager and compiled (the
    mask and temperatures made once, outside the timed calls, as a model holds them); extra bytes
    the bytes of a boolean mask or a bias the call must read, once (they are broadcast), or those
    a float32 output writes beyond x's size."""
    import rowsoftmax_torch as rs
    cols = x.shape[-1]
    s = 1.0 / math.sqrt(128.0)
    extra = 0
    if case == "scaled":
        ours = lambda: rs.softmax(x, scale=s)
        expr = lambda x: torch.softmax(x * s, dim=-1)
    elif case == "causal":
        keep = torch.ones(x.shape[-2], cols, dtype=torch.bool, device=x.device).tril()
        ours = lambda: rs.softmax(x, scale=s, causal=True)
        expr = lambda x: torch.softmax((x * s).masked_fill(~keep, -math.inf), dim=-1)
    elif case == "padded":  # a key length a batch, from half the keys to all of them
        g = torch.Generator(device="cuda").manual_seed(1)
        lengths = torch.randint(cols // 2, cols + 1, (x.shape[0], 1, 1), generator=g,
                                device="cuda").int()
        keep = (torch.arange(cols, device=x.device) < lengths.unsqueeze(-1))
        ours = lambda: rs.softmax(x, scale=s, lengths=lengths)
        expr = lambda x: torch.softmax((x * s).masked_fill(~keep, -math.inf), dim=-1)
    elif case == "mask":  # a boolean attention mask a batch, shared by the heads, 1 in 10 False
        g = torch.Generator(device="cuda").manual_seed(3)
        keep = torch.rand((x.shape[0], 1) + tuple(x.shape[2:]), generator=g, device="cuda") >= 0.1
        extra = keep.numel()
        ours = lambda: rs.softmax(x, scale=s, mask=keep)
        expr = lambda x: torch.softmax((x * s).masked_fill(~keep, -math.inf), dim=-1)
    elif case == "alibi":  # a bias a head of x's dtype, shared by batches and queries
        heads = x.shape[1]
        slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1, device=x.device) / heads)
        bias = (-slopes.view(1, heads, 1, 1) * torch.arange(cols, device=x.device)).to(x.dtype)
        extra = bias.numel() * bias.element_size()
        ours = lambda: rs.softmax(x, scale=s, bias=bias)
        expr = lambda x: torch.softmax(x * s + bias, dim=-1)
    elif case == "log":
        ours = lambda: rs.log_softmax(x)
        expr = lambda x: torch.log_softmax(x, dim=-1)
    elif case == "to_fp32":  # float32 probabilities from 16-bit logits
        extra = x.numel() * (4 - x.element_size())
        ours = lambda: rs.softmax(x, dtype=torch.float32)
        expr = lambda x: torch.softmax(x, dim=-1, dtype=torch.float32)
    else:  # temperature: one a row
        g = torch.Generator(device="cuda").manual_seed(2)
        t = torch.rand(x.shape[0], generator=g, device="cuda") + 0.5
        inv = 1.0 / t
        ours = lambda: rs.softmax(x, row_scale=inv)
        expr = lambda x: torch.softmax(x / t.unsqueeze(-1), dim=-1)
    compiled = torch.compile(expr, dynamic=True)
    return {"rowsoftmax": ours, "torch eager": lambda: expr(x),
            "torch.compile": lambda: compiled(x)}, expr, extra


def run_fused(args, out_dir, copy, dev):
    t0, results, skipped = time.time(), [], []
    for i, (label, shape, dtype, case) in enumerate(fused_cases()):
        if time.time() - t0 > args.budget:
            skipped.append(f"{label} {NAMES[dtype]}")
            continue
        x = (torch.rand(shape, device="cuda") * 16 - 8).to(dtype)
        calls, expr, extra = fused_calls(case, x)
        rows = x.numel() // shape[-1]
        check = min(rows, args.check_rows)
        ref = expr(x.double()).reshape(-1, shape[-1])[:check]  # float64
        nbytes = 2 * x.element_size() * x.numel() + extra
        names = list(calls)
        first = i % len(names)
        for name in names[first:] + names[:first]:
            try:
                got = calls[name]()
                finite = torch.isfinite(ref)
                out = got.reshape(-1, shape[-1])[:check].double()
                err = ((out - ref)[finite].norm() / ref[finite].norm()).item()
                same_inf = bool((out[~finite] == ref[~finite]).all())
                del got, out
                ms = time_ms(calls[name], args.warmup, args.reps, args.warm_ms * 1e-3)
            except Exception as e:  # noqa: BLE001
                print(f"  {name} {label} {NAMES[dtype]}: failed: {type(e).__name__}: {e}")
                continue
            tbps = nbytes / (ms * 1e-3) / 1e12
            results.append(dict(direction="forward", dtype=NAMES[dtype], shape=label, case=case,
                                rows=rows, cols=shape[-1], impl=name, us=ms * 1e3, tbps=tbps,
                                pct_copy=100 * tbps / copy, rel_err=err, same_inf=same_inf))
        del x, calls, expr, ref
        torch.cuda.empty_cache()
    for r in results:
        peer = max((q["tbps"] for q in results if q["impl"] != "rowsoftmax" and is_right(q) and
                    (q["shape"], q["dtype"]) == (r["shape"], r["dtype"])), default=0.0)
        r["vs_best_peer"] = r["tbps"] / peer if peer else float("nan")
    meta = dict(device=dev, copy_tbps=copy, torch=torch.__version__, triton=triton.__version__,
                date=time.strftime("%Y-%m-%d"), commit=os.environ.get("ROWSOFTMAX_COMMIT", "unknown"),
                skipped_for_time=skipped)
    (out_dir / "compare_fused.json").write_text(json.dumps(dict(meta=meta, results=results), indent=1))
    with open(out_dir / "compare_fused.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0].keys()) if results else ["none"])
        w.writeheader()
        w.writerows(results)
    plot_fused(results, out_dir, meta)
    print_table(results, ["rowsoftmax", "torch eager", "torch.compile"], copy)
    if skipped:
        print(f"skipped for the time budget: {', '.join(skipped)}")
    return 0


def plot_fused(results, out_dir, meta):
    """compare_fused.png: TB/s of each implementation on each fused point, as bars."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        print(f"no plots: {e}")
        return
    points = list(dict.fromkeys((r["shape"], r["dtype"]) for r in results))
    names = ["rowsoftmax", "torch eager", "torch.compile"]
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(points)), 6))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        vals = [next((r["tbps"] for r in results if (r["shape"], r["dtype"]) == p and
                      r["impl"] == name), 0.0) for p in points]
        ax.bar([i + k * width for i in range(len(points))], vals, width, label=name,
               color=f"C{k}")
    ax.axhline(meta["copy_tbps"], color="gray", linestyle="--", label="copy")
    ax.set_xticks([i + width for i in range(len(points))])
    ax.set_xticklabels([f"{s} {d}" for s, d in points], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("TB/s (2 x rows x cols x size)")
    ax.legend()
    ax.set_title(f"fused softmax calls against their torch expressions on {meta['device']}, "
                 f"{meta['date']}, commit {meta['commit']}")
    fig.tight_layout()
    fig.savefig(out_dir / "compare_fused.png", dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
