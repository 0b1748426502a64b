// SPDX-License-Identifier: Apache-2.0
// Built, not run: the fused launchers' host code (fused.cuh) under the strictest warnings, as
// warnings_tu.cu checks the plain ones (see CMakeLists.txt); their kernels compile under the same
// warnings in rowsoftmax_fused_instances. Through extern_fused.cuh, so that it is checked too.
#include <rowsoftmax/extern_fused.cuh>

// Their explanations, and one launcher of each options type (a 16-bit log-softmax).
template const char* rowsoftmax::explain_forward<float>(
    float const*, std::int64_t, float const*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::softmax_options const&) noexcept;
template const char* rowsoftmax::explain_backward<__half>(
    __half const*, std::int64_t, __half const*, std::int64_t, __half const*, std::int64_t,
    std::int64_t, std::int64_t, rowsoftmax::softmax_options const&) noexcept;
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::softmax_options const&, cudaStream_t) noexcept;
// Its masked form.
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::masked_softmax_options const&, cudaStream_t) noexcept;
// The boolean-masked form.
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::bool_masked_softmax_options const&, cudaStream_t) noexcept;
// Another output type, both directions (bf16 to float; its backward float dy and y to bf16 dx).
template cudaError_t rowsoftmax::softmax_forward<__nv_bfloat16, float>(
    __nv_bfloat16 const*, std::int64_t, float*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::softmax_options const&, cudaStream_t) noexcept;
template cudaError_t rowsoftmax::softmax_backward<__nv_bfloat16, float>(
    float const*, std::int64_t, float const*, std::int64_t, __nv_bfloat16*, std::int64_t,
    std::int64_t, std::int64_t, rowsoftmax::softmax_options const&, cudaStream_t) noexcept;
