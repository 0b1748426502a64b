// SPDX-License-Identifier: Apache-2.0
// The functions through which the fused launchers reach the fused ops' kernels, written once for
// extern_fused.cuh (declarations) and instantiate_fused.cuh (definitions).
#pragma once

/// Expands to `KIND` (`extern template` or `template`) followed by the two functions of op `...`
/// (a fused op type, commas and all) that compile its kernels: detail::plan_fits and
/// detail::launch, through which every fused launcher, plan query and explanation of it goes
/// (and detail::run, the forced plans of the project's tests). No trailing `;`.
#define ROWSOFTMAX_DETAIL_FUSED_OP_INSTANCES(KIND, ...)                                     \
  KIND cudaError_t rowsoftmax::detail::plan_fits<__VA_ARGS__>(rowsoftmax::plan const&, int, \
                                                              bool*);                       \
  KIND cudaError_t rowsoftmax::detail::launch<__VA_ARGS__>(                                 \
      rowsoftmax::plan const&, __VA_ARGS__::args const&, void*, cudaStream_t)

/// The four fused ops of input type T, output type OUT and one options family (MASKED, KEEP,
/// BIAS: false, false, false for softmax_options; true, false, false for masked_softmax_options;
/// true, true, false for bool_masked_softmax_options; true, true, true for
/// biased_softmax_options): softmax and log-softmax, forward (x of T, y of OUT) and backward (dy
/// and y of OUT, dx of T). No trailing `;`.
#define ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, OUT, MASKED, KEEP, BIAS)        \
  ROWSOFTMAX_DETAIL_FUSED_OP_INSTANCES(                                                \
      KIND, rowsoftmax::detail::fused_forward_op<T, false, MASKED, KEEP, BIAS, OUT>);  \
  ROWSOFTMAX_DETAIL_FUSED_OP_INSTANCES(                                                \
      KIND, rowsoftmax::detail::fused_forward_op<T, true, MASKED, KEEP, BIAS, OUT>);   \
  ROWSOFTMAX_DETAIL_FUSED_OP_INSTANCES(                                                \
      KIND, rowsoftmax::detail::fused_backward_op<OUT, false, MASKED, KEEP, BIAS, T>); \
  ROWSOFTMAX_DETAIL_FUSED_OP_INSTANCES(                                                \
      KIND, rowsoftmax::detail::fused_backward_op<OUT, true, MASKED, KEEP, BIAS, T>)

/// The four fused ops of element type T (input and output) and one options family.
#define ROWSOFTMAX_DETAIL_FUSED_INSTANCES(KIND, T, MASKED, KEEP, BIAS) \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, T, MASKED, KEEP, BIAS)

/// Every fused op of input type T and output type OUT (the four options families).
#define ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES_ALL(KIND, T, OUT)             \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, OUT, false, false, false); \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, OUT, true, false, false);  \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, OUT, true, true, false);   \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(KIND, T, OUT, true, true, true)
