#!/usr/bin/env bash
# Runs ./ab_old and ./ab_new (ab_bias.cu built against two header trees, beside this script)
# alternately three times, logs in $OUT; prints the outputs' hash mismatches and each row's
# median time, new over old.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name --format=csv,noheader
for i in 1 2 3; do
  ./ab_old > $OUT/old$i.txt 2>&1; echo "old$i rc=$?"
  ./ab_new > $OUT/new$i.txt 2>&1; echo "new$i rc=$?"
done
python3 - <<'PY'
import os, statistics
out = os.environ["OUT"]
def parse(f):
    r = {}
    for l in open(f):
        p = l.split()
        if len(p) < 10 or p[0] == "ERR": continue
        key = tuple(p[0:5]) + (len(r),)
        r[key] = (float(p[6]), p[10])
    return r
runs = {s: [parse(f"{out}/{s}{i}.txt") for i in (1, 2, 3)] for s in ("old", "new")}
keys = list(runs["old"][0])
bad = 0
for k in keys:
    ho = {r[k][1] for r in runs["old"]}; hn = {r[k][1] for r in runs["new"]}
    if ho != hn or len(ho) != 1: bad += 1; print("HASH DIFFERS", k, ho, hn)
print("hash mismatches:", bad, "of", len(keys))
for k in keys:
    o = statistics.median(r[k][0] for r in runs["old"]); n = statistics.median(r[k][0] for r in runs["new"])
    if o > 0: print(f"{k[0]:5} {k[1]:>8} {k[2]:>8} {k[3]} old {o:9.2f} new {n:9.2f} new/old {n/o:.3f}")
PY
