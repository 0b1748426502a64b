// SPDX-License-Identifier: Apache-2.0
// Host-only tests: the fused launchers refuse bad options (and bad tensors, as the plain ones do)
// with cudaErrorInvalidValue before any CUDA call, and explain_forward / explain_backward with
// options name the rule; they run (and must pass) on machines without a GPU. float only: the
// rules do not depend on the type. Included by the float fused GPU unit (test_gpu_fused_float.cu),
// which instantiates the same float fused launchers, so that their kernels compile once.
#pragma once

#include <rowsoftmax/extern.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace {

template <class T>
T* fake(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

constexpr cudaError_t bad = cudaErrorInvalidValue;

std::string why(const char* s) {
  return s ? s : "(accepted)";
}

rowsoftmax::softmax_options with_scale(float s) {
  rowsoftmax::softmax_options o;
  o.scale = s;
  return o;
}

}  // namespace

TEST(FusedValidation, OptionsAreCheckedAndExplained) {
  float* x = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  const float inf = std::numeric_limits<float>::infinity();
  rowsoftmax::softmax_options bad_options[5] = {with_scale(inf),
                                                with_scale(-inf),
                                                with_scale(std::numeric_limits<float>::quiet_NaN()),
                                                {},
                                                {}};
  bad_options[3].row_scale = fake<float const>(0x30002);
  bad_options[4].row_lse = fake<float>(0x30001);
  const char* rules[5] = {"options.scale (inf) is not finite", "options.scale (-inf) is not finite",
                          "options.scale (nan) is not finite",
                          "options.row_scale (0x30002) is not 4-byte aligned",
                          "options.row_lse (0x30001) is not 4-byte aligned"};
  for (int i = 0; i < 5; ++i) {
    auto const& o = bad_options[i];
    SCOPED_TRACE(rules[i]);
    EXPECT_EQ(rowsoftmax::softmax_forward<float>(x, 8, y, 8, 4, 8, o), bad);
    EXPECT_EQ(rowsoftmax::log_softmax_forward<float>(x, 8, y, 8, 4, 8, o), bad);
    std::size_t bytes = 0;
    EXPECT_EQ(rowsoftmax::softmax_forward<float>(nullptr, &bytes, x, 8, y, 8, 4, 8, o), bad);
    rowsoftmax::plan p;
    EXPECT_EQ(rowsoftmax::fused_forward_plan<float>(x, 8, y, 8, 4, 8, o, false, &p), bad);
    EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)), rules[i]);
  }
  rowsoftmax::softmax_options e;
  e.empty = static_cast<rowsoftmax::empty_rows>(5);
  EXPECT_EQ(rowsoftmax::softmax_forward<float>(x, 8, y, 8, 4, 8, e), bad);
  EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, e)),
            "options.empty (5) is not an empty_rows value");
  // Good options: nothing to explain; negative and zero scales are valid.
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, with_scale(-3.0f)), nullptr);
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, with_scale(0.0f)), nullptr);
}

TEST(FusedValidation, BackwardIgnoresRowLseAndChecksTheRest) {
  float* dy = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  float* dx = fake<float>(0x30000);
  rowsoftmax::softmax_options o;
  o.row_lse = fake<float>(0x40001);  // backward never writes it
  EXPECT_EQ(rowsoftmax::explain_backward<float>(dy, 8, y, 8, dx, 8, 4, 8, o), nullptr);
  o.scale = std::numeric_limits<float>::infinity();
  EXPECT_EQ(rowsoftmax::softmax_backward<float>(dy, 8, y, 8, dx, 8, 4, 8, o), bad);
  EXPECT_EQ(rowsoftmax::log_softmax_backward<float>(dy, 8, y, 8, dx, 8, 4, 8, o), bad);
  EXPECT_EQ(why(rowsoftmax::explain_backward<float>(dy, 8, y, 8, dx, 8, 4, 8, o)),
            "options.scale (inf) is not finite");
}

TEST(FusedValidation, TensorRulesComeFirst) {
  float* x = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  const rowsoftmax::softmax_options o = with_scale(std::numeric_limits<float>::infinity());
  EXPECT_EQ(rowsoftmax::log_softmax_forward<float>(x, 7, y, 8, 4, 8), bad);  // stride < cols
  EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 7, y, 8, 4, 8, o)),
            "x_row_stride (7) is smaller than cols (8)");
  EXPECT_EQ(rowsoftmax::log_softmax_forward<float>(nullptr, 8, y, 8, 4, 8), bad);
  // No rows: a no-op for good options, refused for bad ones (as explained).
  EXPECT_EQ(rowsoftmax::log_softmax_forward<float>(x, 8, y, 8, 0, 8), cudaSuccess);
  EXPECT_EQ(rowsoftmax::softmax_forward<float>(x, 8, y, 8, 0, 8, o), bad);
}

// The masks' rules (masked_softmax_options), by the plan queries and explanations: they compile
// no kernel, and a refused plan query is a refused launch (the launchers check through them).
TEST(FusedValidation, MasksAreCheckedAndExplained) {
  float* x = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  int const* lengths = fake<int const>(0x40000);
  rowsoftmax::masked_softmax_options bad_masks[8];
  bad_masks[0].heads = 0;
  bad_masks[1].queries = -2;
  bad_masks[2].queries = 3;  // 4 rows
  bad_masks[3].heads = 8;    // more than the rows
  bad_masks[4].lengths = fake<int const>(0x40002);
  bad_masks[5].lengths = lengths;
  bad_masks[5].lengths_strides.head = -1;
  bad_masks[6].lengths = fake<int const>(0x20004);  // inside y's rows
  bad_masks[7].lengths = lengths;
  bad_masks[7].lengths_strides.batch = std::int64_t{1} << 62;
  const char* rules[8] = {
      "options.heads (0) and options.queries (1) must be >= 1 and divide rows as rows = batches * "
      "heads * queries",
      "options.heads (1) and options.queries (-2) must be >= 1 and divide rows as rows = batches "
      "* heads * queries",
      "options.heads (1) and options.queries (3) must be >= 1 and divide rows as rows = batches * "
      "heads * queries",
      "options.heads (8) and options.queries (1) must be >= 1 and divide rows as rows = batches * "
      "heads * queries",
      "options.lengths (0x40002) is not 4-byte aligned",
      "options.lengths_strides (1, -1, 0) has a negative stride",
      "options.lengths (0x20004) shares memory with the output or options.row_lse",
      "options.lengths_strides (4611686018427387904, 0, 0) span more than 2^62 bytes"};
  for (int i = 0; i < 8; ++i) {
    auto const& o = bad_masks[i];
    SCOPED_TRACE(rules[i]);
    rowsoftmax::plan p;
    EXPECT_EQ(rowsoftmax::fused_forward_plan<float>(x, 8, y, 8, 4, 8, o, true, &p), bad);
    EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)), rules[i]);
    EXPECT_EQ(why(rowsoftmax::explain_backward<float>(x, 8, x, 8, y, 8, 4, 8, o)), rules[i]);
  }
  // lengths overlapping row_lse (forward only), and a good attention layout with broadcasts.
  rowsoftmax::masked_softmax_options o;
  o.lengths = lengths;
  o.row_lse = fake<float>(0x40008);
  EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)),
            "options.lengths (0x40000) shares memory with the output or options.row_lse");
  EXPECT_EQ(rowsoftmax::explain_backward<float>(x, 8, x, 8, y, 8, 4, 8, o), nullptr);
  o.row_lse = nullptr;
  o.heads = 2;
  o.queries = 4;
  o.lengths_strides = {4, 0, 1};  // a length a (batch, query), broadcast over heads
  o.causal = true;
  o.diagonal = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 24, 8, o), nullptr);
  // No rows: any layout of valid heads and queries.
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 0, 8, o), nullptr);
}

// The boolean mask's rules (bool_masked_softmax_options), after the prefix masks': strides of
// 0 or more, a span that fits, no byte shared with the output (or, forward, row_lse); any
// alignment.
TEST(FusedValidation, BoolMaskIsCheckedAndExplained) {
  float* x = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  bool const* keep = fake<bool const>(0x40001);
  rowsoftmax::bool_masked_softmax_options refused[5];
  refused[0].keep = keep;
  refused[0].keep_strides = {8, -1, 0};
  refused[1].keep = fake<bool const>(0x2007f);  // the last byte of y's 4 rows of 8
  refused[2].keep = keep;
  refused[2].keep_strides.batch = std::int64_t{1} << 62;
  refused[3].keep = keep;
  refused[3].heads = 3;  // the prefix masks' rules first
  refused[4].keep = keep;
  refused[4].keep_strides.batch = 8;
  refused[4].row_lse = fake<float>(0x40010);  // within the mask's 32 bytes
  const char* rules[5] = {
      "options.keep_strides (8, -1, 0) has a negative stride",
      "options.keep (0x2007f) shares memory with the output or options.row_lse",
      "options.keep_strides (4611686018427387904, 0, 0) span more than 2^62 bytes",
      "options.heads (3) and options.queries (1) must be >= 1 and divide rows as rows = batches * "
      "heads * queries",
      "options.keep (0x40001) shares memory with the output or options.row_lse"};
  for (int i = 0; i < 5; ++i) {
    auto const& o = refused[i];
    SCOPED_TRACE(rules[i]);
    rowsoftmax::plan p;
    EXPECT_EQ(rowsoftmax::fused_forward_plan<float>(x, 8, y, 8, 4, 8, o, false, &p), bad);
    EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)), rules[i]);
    if (i != 4)  // row_lse is the forward's only
      EXPECT_EQ(why(rowsoftmax::explain_backward<float>(x, 8, x, 8, y, 8, 4, 8, o)), rules[i]);
  }
  EXPECT_EQ(rowsoftmax::explain_backward<float>(x, 8, x, 8, y, 8, 4, 8, refused[4]), nullptr);
  // Accepted: a key-padding mask at an odd address, one a (batch, query) over heads, none.
  rowsoftmax::bool_masked_softmax_options o;
  o.keep = keep;
  o.keep_strides = {8, 0, 0};
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o), nullptr);
  o.heads = 2;
  o.queries = 2;
  o.keep_strides = {16, 0, 8};
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 8, 8, o), nullptr);
  o.keep = nullptr;
  o.keep_strides = {-1, -1, -1};  // unused without a mask
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 8, 8, o), nullptr);
}

// The bias's rules (biased_softmax_options), after the masks', forward only: a bias_type value,
// aligned to its element size, strides of 0 or more, a span that fits, no byte shared with the
// output or row_lse. Backward does not read the bias and takes any.
TEST(FusedValidation, BiasIsCheckedAndExplained) {
  float* x = fake<float>(0x10000);
  float* y = fake<float>(0x20000);
  void const* bias = fake<void const>(0x40000);
  rowsoftmax::biased_softmax_options refused[6];
  refused[0].bias = bias;
  refused[0].bias_dtype = static_cast<rowsoftmax::bias_type>(9);
  refused[1].bias = fake<void const>(0x40002);
  refused[1].bias_dtype = rowsoftmax::bias_type::f32;
  refused[2].bias = bias;
  refused[2].bias_strides = {8, 0, -8};
  refused[3].bias = fake<void const>(0x2007c);  // y's last element
  refused[4].bias = bias;
  refused[4].bias_strides.batch = std::int64_t{1} << 61;  // 2^61 floats: more than 2^62 bytes
  refused[5].bias = bias;
  refused[5].keep = fake<bool const>(0x50000);
  refused[5].keep_strides.head = -1;  // the mask's rules first
  const char* rules[6] = {
      "options.bias_dtype (9) is not a bias_type value",
      "options.bias (0x40002) is not aligned to its element size (bias_dtype f32)",
      "options.bias_strides (8, 0, -8) has a negative stride",
      "options.bias (0x2007c) shares memory with the output or options.row_lse",
      "options.bias_strides (2305843009213693952, 0, 0) span more than 2^62 bytes",
      "options.keep_strides (0, -1, 0) has a negative stride"};
  for (int i = 0; i < 6; ++i) {
    auto const& o = refused[i];
    SCOPED_TRACE(rules[i]);
    rowsoftmax::plan p;
    EXPECT_EQ(rowsoftmax::fused_forward_plan<float>(x, 8, y, 8, 4, 8, o, false, &p), bad);
    EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)), rules[i]);
    if (i != 5)  // backward checks the mask, not the bias
      EXPECT_EQ(rowsoftmax::explain_backward<float>(x, 8, x, 8, y, 8, 4, 8, o), nullptr);
  }
  // The bias overlapping row_lse, forward only.
  rowsoftmax::biased_softmax_options o;
  o.bias = bias;
  o.bias_strides = {8, 0, 0};
  o.row_lse = fake<float>(0x40010);
  EXPECT_EQ(why(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o)),
            "options.bias (0x40000) shares memory with the output or options.row_lse");
  // Accepted: a bias of the input type a row, one a head with a mask, a 2-byte-aligned one of
  // 16-bit elements, and none (its strides then unused).
  o.row_lse = nullptr;
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o), nullptr);
  o.heads = 2;
  o.bias_strides = {0, 8, 0};
  o.bias_dtype = rowsoftmax::bias_type::f32;
  o.keep = fake<bool const>(0x50001);
  o.keep_strides = {8, 0, 0};
  EXPECT_EQ(rowsoftmax::explain_forward<float>(x, 8, y, 8, 4, 8, o), nullptr);
  rowsoftmax::biased_softmax_options h;
  h.bias = fake<void const>(0x40002);
  h.bias_strides = {8, 0, 0};
  EXPECT_EQ(rowsoftmax::explain_forward<__half>(fake<__half>(0x10000), 8, fake<__half>(0x20000), 8,
                                                4, 8, h),
            nullptr);
  h.bias = fake<void const>(0x40001);
  EXPECT_EQ(why(rowsoftmax::explain_forward<__half>(fake<__half>(0x10000), 8, fake<__half>(0x20000),
                                                    8, 4, 8, h)),
            "options.bias (0x40001) is not aligned to its element size (bias_dtype input)");
  h.bias = nullptr;
  h.bias_strides = {-1, -1, -1};
  EXPECT_EQ(rowsoftmax::explain_forward<__half>(fake<__half>(0x10000), 8, fake<__half>(0x20000), 8,
                                                4, 8, h),
            nullptr);
}
