// SPDX-License-Identifier: Apache-2.0
// The second unit of test_kernel_ptr.cu: it compiles the same kernel and says which pointer the
// library launches it by here.
#include <rowsoftmax/rowsoftmax.cuh>

namespace rowsoftmax::test {

void const* kernel_launched_by_other_unit() {
  using op = detail::forward_op<float>;
  return reinterpret_cast<void const*>(detail::kernel_ptr<op, 4, detail::configs::first_one_cta>());
}
void const* kernel_of_other_unit() {
  using op = detail::forward_op<float>;
  return reinterpret_cast<void const*>(
      detail::unit_kernel_ptr<op, 4, detail::configs::first_one_cta>());
}

}  // namespace rowsoftmax::test
