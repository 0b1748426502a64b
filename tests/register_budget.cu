// SPDX-License-Identifier: Apache-2.0
// A build-time check, no test to run: compiled for sm_90 with ptxas spill warnings as errors
// (tests/CMakeLists.txt), this file fails the build if a streaming or split kernel spills
// registers to local memory. Those kernels run at their register bound, and a spilled row state
// is reloaded past an L1 that the row's own loads keep full: the fp32 forward split kernel lost
// 4-9 points of copy bandwidth on the H200 to 20 bytes of spills (docs/tuning.md).
#include <rowsoftmax/rowsoftmax.cuh>

namespace rowsoftmax::detail {

/// The streaming and split kernels of `Op` at vector width `V` (referencing them compiles them).
template <class Op, int V>
int count_row_loop_kernels() {
  void const* k[] = {reinterpret_cast<void const*>(kernel_ptr<Op, V, configs::streaming_one_cta>()),
                     reinterpret_cast<void const*>(kernel_ptr<Op, V, configs::streaming_cluster>()),
                     reinterpret_cast<void const*>(kernel_ptr<Op, V, configs::split>())};
  int n = 0;
  for (void const* p : k) n += p != nullptr;
  return n;
}

template <class T>
int count_kernels_of() {
  constexpr int V = 16 / sizeof(T);
  // The hinted split kernels: backward and 16-bit forward (has_kernel).
  int hinted = kernel_ptr<backward_op<T>, V, configs::split_hinted>() != nullptr ? 1 : 0;
  if constexpr (has_kernel(configs::split_hinted, direction::forward, V, sizeof(T)))
    hinted += kernel_ptr<forward_op<T>, V, configs::split_hinted>() != nullptr ? 1 : 0;
  return count_row_loop_kernels<forward_op<T>, V>() + count_row_loop_kernels<forward_op<T>, 1>() +
         count_row_loop_kernels<backward_op<T>, V>() + count_row_loop_kernels<backward_op<T>, 1>() +
         hinted;
}

int register_budget_kernels() {
  return count_kernels_of<float>() + count_kernels_of<__half>() + count_kernels_of<__nv_bfloat16>();
}

}  // namespace rowsoftmax::detail
