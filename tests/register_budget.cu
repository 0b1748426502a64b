// SPDX-License-Identifier: Apache-2.0
// A build-time check, no test to run: compiled for sm_90 with ptxas spill warnings as errors
// (tests/CMakeLists.txt), this file fails the build if a streaming or split kernel spills
// registers to local memory. Those kernels run at their register bound, and a spilled row state
// is reloaded past an L1 that the row's own loads keep full: the fp32 forward split kernel lost
// 4-9 points of copy bandwidth on the H200 to 20 bytes of spills (docs/tuning.md). The 16-bit
// forward one-CTA kernels that keep their exps as floats, nearest their bound at the widest
// threads' bytes, are checked too, and which op those configurations run.
#include <rowsoftmax/rowsoftmax.cuh>

#include <type_traits>

namespace rowsoftmax::detail {

/// How many of the kernels named are non-null (referencing them compiles them).
template <class... Kernels>
int count_referenced(Kernels... kernels) {
  return ((kernels != nullptr ? 1 : 0) + ...);
}

/// The streaming and split kernels of `Op` at vector width `V`.
template <class Op, int V>
int count_row_loop_kernels() {
  return count_referenced(kernel_ptr<Op, V, configs::streaming_one_cta>(),
                          kernel_ptr<Op, V, configs::streaming_cluster>(),
                          kernel_ptr<Op, V, configs::split>());
}

template <class T>
int count_kernels_of() {
  constexpr int V = 16 / sizeof(T);
  // The hinted split kernels: backward and 16-bit forward (has_kernel).
  int hinted = count_referenced(kernel_ptr<backward_op<T>, V, configs::split_hinted>());
  if constexpr (has_kernel(configs::split_hinted, direction::forward, V, sizeof(T)))
    hinted += count_referenced(kernel_ptr<forward_op<T>, V, configs::split_hinted>());
  return count_row_loop_kernels<forward_op<T>, V>() + count_row_loop_kernels<forward_op<T>, 1>() +
         count_row_loop_kernels<backward_op<T>, V>() + count_row_loop_kernels<backward_op<T>, 1>() +
         hinted;
}

// One-CTA 16-bit plain forward rows keep their exps as floats; clusters, short rows and fp32
// run the op itself.
static_assert(std::is_same_v<resident_op_t<forward_op<__nv_bfloat16>, configs::one_cta_of(16, 128)>,
                             float_exps_forward_op<__nv_bfloat16>>);
static_assert(std::is_same_v<resident_op_t<forward_op<__half>, configs::widest_one_cta>,
                             float_exps_forward_op<__half>>);
static_assert(
    std::is_same_v<resident_op_t<forward_op<__half>, configs::cluster_128t>, forward_op<__half>>);
static_assert(std::is_same_v<resident_op_t<forward_op<__half>, configs::last_short_rows>,
                             forward_op<__half>>);
static_assert(std::is_same_v<resident_op_t<forward_op<float>, configs::one_cta_of(16, 128)>,
                             forward_op<float>>);
static_assert(std::is_same_v<resident_op_t<backward_op<__half>, configs::one_cta_of(16, 128)>,
                             backward_op<__half>>);

/// The float-exp forward kernels of the one-CTA configurations of 144 bytes a thread (the most
/// floats a thread keeps) and of 128 bytes at 16 threads a row (1K columns).
template <class T>
int count_float_exps_kernels() {
  constexpr int V = 16 / sizeof(T);
  return count_referenced(kernel_ptr<forward_op<T>, V, configs::one_cta_of(16, 128)>(),
                          kernel_ptr<forward_op<T>, V, configs::one_cta_of(16, 144)>(),
                          kernel_ptr<forward_op<T>, V, configs::one_cta_of(32, 144)>(),
                          kernel_ptr<forward_op<T>, V, configs::one_cta_of(64, 144)>(),
                          kernel_ptr<forward_op<T>, V, configs::one_cta_of(128, 144)>(),
                          kernel_ptr<forward_op<T>, V, configs::widest_one_cta>());
}

int register_budget_kernels() {
  return count_kernels_of<float>() + count_kernels_of<__half>() +
         count_kernels_of<__nv_bfloat16>() + count_float_exps_kernels<__half>() +
         count_float_exps_kernels<__nv_bfloat16>();
}

}  // namespace rowsoftmax::detail
