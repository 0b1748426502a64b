// SPDX-License-Identifier: Apache-2.0
// The list of the public function templates that compile kernels, written once for extern.cuh
// (declarations) and instantiate.cuh (definitions), so the two cannot list different functions.
#pragma once

#include <cstddef>
#include <cstdint>

/// Expands to `KIND` (`extern template` or `template`) followed by every public launcher, plan
/// query and workspace explanation for element type T, and the two detail functions through
/// which everything reaches the plain ops' kernels (plan_fits, launch: detail::run, the forced
/// plans of the tests and the benchmark, goes through them too), each ending in `;`: the
/// functions whose instantiation compiles the kernels (the explanations without a workspace
/// compile none).
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
                                                   cudaStream_t) noexcept;                         \
  KIND cudaError_t rowsoftmax::detail::plan_fits<rowsoftmax::detail::forward_op<T>>(               \
      rowsoftmax::plan const&, int, bool*);                                                        \
  KIND cudaError_t rowsoftmax::detail::plan_fits<rowsoftmax::detail::backward_op<T>>(              \
      rowsoftmax::plan const&, int, bool*);                                                        \
  KIND cudaError_t rowsoftmax::detail::launch<rowsoftmax::detail::forward_op<T>>(                  \
      rowsoftmax::plan const&, rowsoftmax::detail::forward_op<T>::args const&, void*,              \
      cudaStream_t);                                                                               \
  KIND cudaError_t rowsoftmax::detail::launch<rowsoftmax::detail::backward_op<T>>(                 \
      rowsoftmax::plan const&, rowsoftmax::detail::backward_op<T>::args const&, void*,             \
      cudaStream_t)
