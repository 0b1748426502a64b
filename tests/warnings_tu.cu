// SPDX-License-Identifier: Apache-2.0
// Built, not run: the library under the strictest warnings a user may compile with (host
// -Wall -Wextra -Wshadow -Werror, device warnings as errors; see CMakeLists.txt), every public
// launcher, plan query and explanation instantiated for every element type through
// instantiate.cuh (so extern.cuh and instantiate.cuh themselves are checked too). It is also the
// one instantiating unit of the compile-once test (test_compile_once.cu), which links it.
#include <rowsoftmax/instantiate.cuh>

// The explanations without a workspace are not in instantiate.cuh's list (they compile no
// kernel): instantiated here so that they too are checked.
template const char* rowsoftmax::explain_forward<float>(float const*, std::int64_t, float const*,
                                                        std::int64_t, std::int64_t, std::int64_t,
                                                        cudaStream_t) noexcept;
template const char* rowsoftmax::explain_backward<__nv_bfloat16>(__nv_bfloat16 const*, std::int64_t,
                                                                 __nv_bfloat16 const*, std::int64_t,
                                                                 __nv_bfloat16 const*, std::int64_t,
                                                                 std::int64_t, std::int64_t,
                                                                 cudaStream_t) noexcept;
