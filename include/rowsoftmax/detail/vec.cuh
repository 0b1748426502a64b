// SPDX-License-Identifier: Apache-2.0
// A thread's registers for one 16-byte (or one-element) window of a row. Elements are kept
// packed in 32-bit words, two per word for bf16/fp16, whichever path loaded them (one vector
// load or element-wise at a head or tail), so a 16-bit row costs half the registers of fp32.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "math.cuh"

namespace rowsoftmax::detail {

template <class To, class From>
__device__ inline To bits_as(From const& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof(to));
  return to;
}

/// An L2 eviction priority for a global access, as a cache policy (`createpolicy`): `first`
/// lines are evicted before others, `last` ones after. The split kernel's 16-byte loads and
/// stores carry one where an fp32 CTA reads some of its tiles twice, so that L2 keeps those
/// tiles for their second read (see tile_share::hinted).
struct l2_hint {
  enum priority { first, last };
  std::uint64_t policy;

  /// Made where it is used (volatile: one instruction, where a policy kept across a loop costs
  /// two registers).
  __device__ static l2_hint make(priority p) {
    l2_hint h;
    if (p == first) {
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(h.policy));
    } else {
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(h.policy));
    }
    return h;
  }
};

/// A plain access: no L2 hint.
struct no_hint {};

template <class T, int V>
struct alignas(sizeof(T) * V) vec_t {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4);
  using word = std::conditional_t<(sizeof(T) * V >= 4), std::uint32_t, std::uint16_t>;
  static constexpr int per_word = static_cast<int>(sizeof(word) / sizeof(T));
  static constexpr int words = V / per_word;
  word w[words];

  /// A word holding `fill` in every element.
  __device__ static word fill_word(T fill) {
    if constexpr (per_word == 1) {
      return bits_as<word>(fill);
    } else {
      const std::uint32_t f = bits_as<std::uint16_t>(fill);
      return f | (f << 16);
    }
  }

  /// Element `l` (a compile-time constant where it is used: the shifts fold away).
  __device__ T get(int l) const {
    if constexpr (per_word == 1) {
      return bits_as<T>(w[l]);
    } else {
      return bits_as<T>(static_cast<std::uint16_t>(w[l / 2] >> (16 * (l % 2))));
    }
  }
  __device__ float at(int l) const {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      // A bf16 is the high half of a float: its bits put there (one instruction for either
      // half of a word; the conversion of get(l) shifted the high half down and up again).
      const std::uint32_t x = w[l / per_word];
      return __uint_as_float(per_word == 2 && l % 2 == 1 ? x & 0xffff0000u : x << 16);
    } else {
      return to_float(get(l));
    }
  }

  /// Max over the elements as float (fmaxf's NaN rule); 16-bit pairs compared packed.
  __device__ float max() const { return extreme<true>(); }
  /// Min over the elements as float (fminf's NaN rule), as `max`: the max of the logits s * x
  /// of a vector where s < 0 (the fused ops).
  __device__ float min() const { return extreme<false>(); }

  /// max (`Max`) or min over the elements.
  template <bool Max>
  __device__ float extreme() const {
    const auto pick = [](float a, float b) { return Max ? fmaxf(a, b) : fminf(a, b); };
    if constexpr (per_word == 1) {
      float m = at(0);
#pragma unroll
      for (int l = 1; l < V; ++l) m = pick(m, at(l));
      return m;
    } else {
      std::uint32_t m = w[0];
#pragma unroll
      for (int i = 1; i < words; ++i) {
        if constexpr (std::is_same_v<T, __half>) {
          if constexpr (Max) {
            asm("max.f16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i]));
          } else {
            asm("min.f16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i]));
          }
        } else if constexpr (Max) {
          asm("max.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i]));
        } else {
          asm("min.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(w[i]));
        }
      }
      return pick(to_float(bits_as<T>(static_cast<std::uint16_t>(m))),
                  to_float(bits_as<T>(static_cast<std::uint16_t>(m >> 16))));
    }
  }

  /// The vector of the elements `x`.
  __device__ static vec_t of(T const (&x)[V]) {
    vec_t r;
#pragma unroll
    for (int i = 0; i < words; ++i) {
      if constexpr (per_word == 1) {
        r.w[i] = bits_as<word>(x[i]);
      } else {
        r.w[i] = bits_as<std::uint16_t>(x[2 * i]) |
                 (std::uint32_t{bits_as<std::uint16_t>(x[2 * i + 1])} << 16);
      }
    }
    return r;
  }

  /// The vector of `y` rounded to T (16-bit pairs with one packed conversion).
  __device__ static vec_t round(float const (&y)[V]) {
    vec_t r;
#pragma unroll
    for (int i = 0; i < words; ++i) {
      if constexpr (per_word == 1) {
        r.w[i] = bits_as<word>(from_float<T>(y[i]));
      } else if constexpr (std::is_same_v<T, __half>) {
        r.w[i] = bits_as<std::uint32_t>(__floats2half2_rn(y[2 * i], y[2 * i + 1]));
      } else {
        r.w[i] = bits_as<std::uint32_t>(__floats2bfloat162_rn(y[2 * i], y[2 * i + 1]));
      }
    }
    return r;
  }

  /// Writes the vector to global memory at `p` (aligned to the vector) in one store (two for 32
  /// bytes). An assignment through a vector pointer is copied word by word and left to the
  /// compiler to merge, which it does not always do (in the staged and split kernels' loops: four
  /// 4-byte stores a 16-byte window; tuning log, row I/O and ragged windows). Besides the plans'
  /// widths (16 bytes, or one element: the scalar fallback), the output windows of ops whose
  /// output type is not their input's: 32 bytes (16-bit in, fp32 out) and 8 (fp32 in, 16-bit).
  __device__ void store(T* p) const {
    if constexpr (sizeof(vec_t) == 32) {
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3])
                   : "memory");
      asm volatile("st.global.v4.b32 [%0+16], {%1, %2, %3, %4};" ::"l"(p), "r"(w[4]), "r"(w[5]),
                   "r"(w[6]), "r"(w[7])
                   : "memory");
    } else if constexpr (sizeof(vec_t) == 16) {
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3])
                   : "memory");
    } else if constexpr (sizeof(vec_t) == 8) {
      asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
    } else if constexpr (sizeof(vec_t) == 4) {
      asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(w[0]) : "memory");
    } else {
      static_assert(sizeof(vec_t) == 2, "vectors of 32, 16, 8 or 4 bytes, or one element");
      asm volatile("st.global.b16 [%0], %1;" ::"l"(p), "h"(w[0]) : "memory");
    }
  }

  /// Reads the vector at `p` (aligned to the vector): a plain load, or one 16-byte load with
  /// the L2 hint (vectors of other sizes load plainly).
  __device__ static vec_t load(T const* p, no_hint) {
    return *reinterpret_cast<vec_t const*>(p);
  }
  __device__ static vec_t load(T const* p, l2_hint h) {
    if constexpr (sizeof(vec_t) == 16) {
      vec_t v;
      asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                   : "l"(p), "l"(h.policy));
      return v;
    } else {
      return *reinterpret_cast<vec_t const*>(p);
    }
  }

  /// `store` with the L2 hint: one 16-byte store (vectors of other sizes store plainly).
  __device__ void store(T* p, l2_hint h) const {
    if constexpr (sizeof(vec_t) == 16) {
      asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p),
                   "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "l"(h.policy)
                   : "memory");
    } else {
      store(p);
    }
  }

  /// Hides the value from the optimizer (emits no instruction): elements converted to float
  /// for a reduction are converted again after it instead of being kept alive as floats, which
  /// would double a 16-bit row's registers.
  __device__ void opaque() {
#pragma unroll
    for (int i = 0; i < words; ++i) {
      if constexpr (sizeof(word) == 4) {
        asm volatile("" : "+r"(w[i]));
      } else {
        asm volatile("" : "+h"(w[i]));
      }
    }
  }
};

}  // namespace rowsoftmax::detail
