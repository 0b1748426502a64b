// SPDX-License-Identifier: Apache-2.0
// Host-only: two units of one program that compile the same kernel (this one and
// kernel_ptr_other_unit.cu) launch it by one pointer. nvcc 13 gives each unit its own host stub
// of a template kernel; the library's once-a-program attribute calls (shared memory past 48 KB, a
// non-portable cluster size) must reach the copy every launch runs.
#include <rowsoftmax/rowsoftmax.cuh>

#include <gtest/gtest.h>

namespace rowsoftmax::test {
void const* kernel_launched_by_other_unit();
void const* kernel_of_other_unit();
}  // namespace rowsoftmax::test

TEST(Dispatch, OneKernelPointerAProgram) {
  namespace d = rowsoftmax::detail;
  using op = d::forward_op<float>;
  void const* here =
      reinterpret_cast<void const*>(d::kernel_ptr<op, 4, d::configs::first_one_cta>());
  void const* own =
      reinterpret_cast<void const*>(d::unit_kernel_ptr<op, 4, d::configs::first_one_cta>());
  ASSERT_NE(here, nullptr);
  EXPECT_EQ(here, rowsoftmax::test::kernel_launched_by_other_unit());
  // The pointer is one of the two units' own (the first unit to ask fixes it); where nvcc gives
  // the units distinct stubs, the other is never launched.
  void const* other = rowsoftmax::test::kernel_of_other_unit();
  EXPECT_TRUE(here == own || here == other);
}
