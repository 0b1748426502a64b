// SPDX-License-Identifier: Apache-2.0
// Host-only: the fused launchers refuse bad options (and bad tensors, as the plain ones do) with
// cudaErrorInvalidValue before any CUDA call, and explain_forward / explain_backward with options
// name the rule; these run (and must pass) on machines without a GPU. float only: the rules do
// not depend on the type, and each type's fused launchers compile their own kernels.
#include <rowsoftmax/rowsoftmax.cuh>

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
