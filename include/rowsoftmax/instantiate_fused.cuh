// SPDX-License-Identifier: Apache-2.0
// Compile once, the fused launchers: include this header in the .cu files that define the fused
// variants a program calls, for the units that include <rowsoftmax/extern_fused.cuh>; each
// ROWSOFTMAX_INSTANTIATE_FUSED(T, Options) compiles the kernels of one element type and options
// type (softmax and log-softmax, forward and backward), once. One definition of each a program
// (the standard allows one explicit instantiation definition of each function per program); one
// variant a unit compiles fastest in parallel builds. See docs/compile-once.md.
#pragma once

#include "extern_fused.cuh"

/// Defines the fused kernels of element type `T` (float, __half, __nv_bfloat16) with options
/// type `Options` (rowsoftmax::softmax_options, masked_softmax_options,
/// bool_masked_softmax_options or biased_softmax_options): the functions extern_fused.cuh
/// declares for them.
#define ROWSOFTMAX_INSTANTIATE_FUSED(T, Options) ROWSOFTMAX_INSTANTIATE_FUSED_OUT(T, T, Options)

/// Defines the fused kernels of input type `T` and output type `Out` (float where T is 16-bit,
/// __half or __nv_bfloat16 where T is float) with options type `Options`: the forward writing
/// y of Out from x of T, the backward dx of T from dy and y of Out.
#define ROWSOFTMAX_INSTANTIATE_FUSED_OUT(T, Out, Options)                 \
  ROWSOFTMAX_DETAIL_FUSED_OUT_INSTANCES(                                  \
      template, T, Out, rowsoftmax::detail::is_masked_options_v<Options>, \
      rowsoftmax::detail::has_keep_v<Options>, rowsoftmax::detail::has_bias_v<Options>)
