// SPDX-License-Identifier: Apache-2.0
// The list of the public function templates that compile kernels, written once for extern.cuh
// (declarations) and instantiate.cuh (definitions), so the two cannot list different functions.
#pragma once

#include <cstddef>
#include <cstdint>

/// Expands to `KIND` (`extern template` or `template`) followed by every public launcher, plan
/// query and workspace explanation for element type T, each ending in `;`: the functions whose
/// instantiation compiles the kernels (the explanations without a workspace compile none).
#define ROWSOFTMAX_DETAIL_INSTANCES(KIND, T)                                                       \
  KIND cudaError_t rowsoftmax::softmax_forward<T>(T const*, std::int64_t, T*, std::int64_t,        \
                                                  std::int64_t, std::int64_t,                      \
                                                  cudaStream_t) noexcept;                          \
  KIND cudaError_t rowsoftmax::softmax_forward<T>(T const*, T*, std::int64_t, std::int64_t,        \
                                                  cudaStream_t) noexcept;                          \
  KIND cudaError_t rowsoftmax::softmax_forward<T>(void*, std::size_t*, T const*, std::int64_t, T*, \
                                                  std::int64_t, std::int64_t, std::int64_t,        \
                                                  cudaStream_t) noexcept;                          \
  KIND cudaError_t rowsoftmax::softmax_forward<T>(void*, std::size_t*, T const*, T*, std::int64_t, \
                                                  std::int64_t, cudaStream_t) noexcept;            \
  KIND cudaError_t rowsoftmax::softmax_backward<T>(T const*, std::int64_t, T const*, std::int64_t, \
                                                   T*, std::int64_t, std::int64_t, std::int64_t,   \
                                                   cudaStream_t) noexcept;                         \
  KIND cudaError_t rowsoftmax::softmax_backward<T>(T const*, T const*, T*, std::int64_t,           \
                                                   std::int64_t, cudaStream_t) noexcept;           \
  KIND cudaError_t rowsoftmax::softmax_backward<T>(                                                \
      void*, std::size_t*, T const*, std::int64_t, T const*, std::int64_t, T*, std::int64_t,       \
      std::int64_t, std::int64_t, cudaStream_t) noexcept;                                          \
  KIND cudaError_t rowsoftmax::softmax_backward<T>(void*, std::size_t*, T const*, T const*, T*,    \
                                                   std::int64_t, std::int64_t,                     \
                                                   cudaStream_t) noexcept;                         \
  KIND cudaError_t rowsoftmax::softmax_forward_plan<T>(T const*, std::int64_t, T const*,           \
                                                       std::int64_t, std::int64_t, std::int64_t,   \
                                                       rowsoftmax::plan*, bool) noexcept;          \
  KIND cudaError_t rowsoftmax::softmax_backward_plan<T>(                                           \
      T const*, std::int64_t, T const*, std::int64_t, T const*, std::int64_t, std::int64_t,        \
      std::int64_t, rowsoftmax::plan*, bool) noexcept;                                             \
  KIND const char* rowsoftmax::explain_forward<T>(                                                 \
      void const*, std::size_t const*, T const*, std::int64_t, T const*, std::int64_t,             \
      std::int64_t, std::int64_t, cudaStream_t) noexcept;                                          \
  KIND const char* rowsoftmax::explain_forward<T>(void const*, std::size_t const*, T const*,       \
                                                  T const*, std::int64_t, std::int64_t,            \
                                                  cudaStream_t) noexcept;                          \
  KIND const char* rowsoftmax::explain_backward<T>(                                                \
      void const*, std::size_t const*, T const*, std::int64_t, T const*, std::int64_t, T const*,   \
      std::int64_t, std::int64_t, std::int64_t, cudaStream_t) noexcept;                            \
  KIND const char* rowsoftmax::explain_backward<T>(void const*, std::size_t const*, T const*,      \
                                                   T const*, T const*, std::int64_t, std::int64_t, \
                                                   cudaStream_t) noexcept
