#!/usr/bin/env bash
# The numbers of docs/compile-once.md: compile time (wall and CPU), compiler memory and object
# size of a unit calling the launchers, with plain #include and with extern.cuh, and of the one
# unit including instantiate.cuh (nvcc -arch=sm_90 -O3, one unit at a time).
#
#   tests/compile_once_cost.sh [nvcc flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nvcc=${NVCC:-nvcc}
flags=(-arch=sm_90 -O3 -std=c++17 -I"$root/include" "$@")

one_call='cudaError_t call(float const* x, float* y, long r, long c, cudaStream_t s) {
  return rowsoftmax::softmax_forward(x, y, r, c, s);
}'
six_calls='template <class T>
cudaError_t both(T const* x, T* y, T* dx, long r, long c, cudaStream_t s) {
  cudaError_t e = rowsoftmax::softmax_forward(x, y, r, c, s);
  return e != cudaSuccess ? e : rowsoftmax::softmax_backward(x, y, dx, r, c, s);
}
template cudaError_t both(float const*, float*, float*, long, long, cudaStream_t);
template cudaError_t both(__half const*, __half*, __half*, long, long, cudaStream_t);
template cudaError_t both(__nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long, long,
                          cudaStream_t);'

n=0
measure() {  # label, header, body
  n=$((n + 1))
  local f="$work/unit$n"
  printf '#include <rowsoftmax/%s>\n%s\n' "$2" "$3" > "$f.cu"
  /usr/bin/time -f "%e %U %S %M" -o "$f.time" "$nvcc" "${flags[@]}" -c "$f.cu" -o "$f.o"
  read -r wall user sys rss < "$f.time"
  awk -v l="$1" -v w="$wall" -v c="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
    -v m="$rss" -v o="$(stat -c %s "$f.o")" \
    'BEGIN { printf "%-34s %8.1f s %8.1f s %8.0f MB %10.0f KB\n", l, w, c, m / 1024, o / 1024 }'
}

printf '%-34s %10s %10s %11s %13s\n' unit wall cpu memory object
measure "forward<float>, #include" rowsoftmax.cuh "$one_call"
measure "forward<float>, extern.cuh" extern.cuh "$one_call"
measure "six launchers, #include" rowsoftmax.cuh "$six_calls"
measure "six launchers, extern.cuh" extern.cuh "$six_calls"
measure "instantiate.cuh (the one unit)" instantiate.cuh ""
