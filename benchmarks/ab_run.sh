#!/usr/bin/env bash
# A/B of the benchmark between this tree (B) and another source tree (A, e.g. an earlier commit
# unpacked with `git archive`), on the GPU in one session: both built here, then run alternately
# A B A B, and compared row by row against the spread between runs of one build
# (benchmarks/ab_compare.py). Summaries and the comparison go to $OUT (default ./ab-out). B is
# built in $B_BUILD (default build-ab-b; an existing build directory of this tree is reused).
#
#   benchmarks/ab_run.sh A_SOURCE_DIR [BENCH_FILTER] [PASSES]
#
# A_SOURCE_DIR may instead be a rowsoftmax_bench binary built elsewhere (Release, sm_90), run as
# it is.
set -u -o pipefail
a_src=$1
filter=${2:-'^(forward|backward)/(bf16|fp16|fp32)/cols:'}
passes=${3:-2}
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
build() {  # source dir, build dir
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DROWSOFTMAX_BUILD_TESTS=OFF -DROWSOFTMAX_BUILD_EXAMPLES=OFF > "$OUT/configure_$(basename "$2").log" 2>&1 &&
    ninja -C "$2" rowsoftmax_bench > "$OUT/build_$(basename "$2").log" 2>&1
}
start=$SECONDS
a_bin=build-ab-a/benchmarks/rowsoftmax_bench
pa=
if [[ -f $a_src && -x $a_src ]]; then a_bin=$a_src; else build "$a_src" build-ab-a & pa=$!; fi
b_build=${B_BUILD:-build-ab-b}
if [[ -f $b_build/build.ninja ]]; then ninja -C "$b_build" rowsoftmax_bench > "$OUT/build_b.log" 2>&1 &
else build . "$b_build" & fi
pb=$!
[[ -z $pa ]] || wait $pa || { tail -20 "$OUT/build_build-ab-a.log"; echo "build of A failed"; exit 1; }
wait $pb || { tail -20 "$OUT"/build_*b*.log; echo "build of B failed"; exit 1; }
echo "built A and B in $((SECONDS - start)) s"
for ((i = 1; i <= passes; ++i)); do
  for side in a b; do
    bin=$a_bin; [[ $side == b ]] && bin=$b_build/benchmarks/rowsoftmax_bench
    $bin --benchmark_filter="$filter" > "$OUT/bench_${side}$i.log" 2>&1 ||
      { tail -5 "$OUT/bench_${side}$i.log"; echo "benchmark $side$i failed"; }
    sed -n '/^summary/,$p' "$OUT/bench_${side}$i.log" > "$OUT/summary_${side}$i.txt"
    echo "pass $i $side done at $((SECONDS - start)) s: $(head -1 "$OUT/summary_${side}$i.txt")"
  done
done
python3 "$(dirname "$0")/ab_compare.py" --a "$OUT"/summary_a*.txt --b "$OUT"/summary_b*.txt \
  > "$OUT/ab_compare.txt"
grep -E "beyond noise|plans differ" "$OUT/ab_compare.txt" | head -40
tail -2 "$OUT/ab_compare.txt"  # the counts, and each run's copies
