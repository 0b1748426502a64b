// SPDX-License-Identifier: Apache-2.0
// The shared-memory stash of a streaming or split CTA: its threads' fragments of some tiles,
// laid out so that a tile's put and get are free of bank conflicts.
#pragma once

#include <cstdint>
#include <cstring>

namespace rowsoftmax::detail {

/// A thread's fragment in a streaming or split CTA's stash: 16-byte words, word q of thread i of
/// tile k at [(k * quads + q) * threads + i] (consecutive threads, consecutive words: no bank
/// conflicts).
template <class Fragment, int Threads, int StrideBytes>
struct stash {
  static constexpr int quads = (static_cast<int>(sizeof(Fragment)) + 15) / 16;
  static constexpr int stride = StrideBytes / 16;  // quads a thread a tile (plan.hpp's size)
  static_assert(sizeof(Fragment) % 4 == 0 && quads <= stride,
                "a fragment fits the stash tile size the planner assumes");

  __device__ static void put(uint4* base, int tile, Fragment const& frag) {
    std::uint32_t w[quads * 4] = {};
    memcpy(w, &frag, sizeof(Fragment));
#pragma unroll
    for (int q = 0; q < quads; ++q)
      base[(tile * stride + q) * Threads + threadIdx.x] =
          make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
  }

  __device__ static void get(uint4 const* base, int tile, Fragment& frag) {
    std::uint32_t w[quads * 4];
#pragma unroll
    for (int q = 0; q < quads; ++q) {
      const uint4 v = base[(tile * stride + q) * Threads + threadIdx.x];
      w[4 * q] = v.x;
      w[4 * q + 1] = v.y;
      w[4 * q + 2] = v.z;
      w[4 * q + 3] = v.w;
    }
    memcpy(&frag, w, sizeof(Fragment));
  }
};

}  // namespace rowsoftmax::detail
