// SPDX-License-Identifier: Apache-2.0
// Built, not run: the fused launchers (fused.cuh) under the strictest warnings, as warnings_tu.cu
// checks the plain ones (see CMakeLists.txt); also the one unit that instantiates the fused
// launchers the GPU fuzzer calls (gpu_fuzz.cu declares them, this unit is linked into it).
// Apart from warnings_tu.cu, which the test programs and the benchmark link for the plain
// kernels, so that no program compiles these launchers in two units (the GPU suite's bf16 unit
// compiles them too), which would test the other unit's copies only.
#include <rowsoftmax/rowsoftmax.cuh>

// Their explanations, and one launcher whose kernels compile under the same warnings (a 16-bit
// log-softmax: the fused op's 16-bit paths and its log epilogue).
template const char* rowsoftmax::explain_forward<float>(
    float const*, std::int64_t, float const*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::softmax_options const&) noexcept;
template const char* rowsoftmax::explain_backward<__half>(
    __half const*, std::int64_t, __half const*, std::int64_t, __half const*, std::int64_t,
    std::int64_t, std::int64_t, rowsoftmax::softmax_options const&) noexcept;
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::softmax_options const&, cudaStream_t) noexcept;
// Its masked form: the masked op's kernels under the same warnings (and the GPU fuzzer's).
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::masked_softmax_options const&, cudaStream_t) noexcept;
// The boolean-masked form: its kernels (the masks' selects, the staged tiers' hook) under the
// same warnings.
template cudaError_t rowsoftmax::log_softmax_forward<__nv_bfloat16>(
    __nv_bfloat16 const*, std::int64_t, __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
    rowsoftmax::bool_masked_softmax_options const&, cudaStream_t) noexcept;
