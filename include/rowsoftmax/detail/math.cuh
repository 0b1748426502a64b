// SPDX-License-Identifier: Apache-2.0
// Numerics shared by every tier and both directions: the online (max, sum) partial and its
// combine, the plain-sum partial, exp2 and the rescale e^(m - shift), and element conversions.
// Host and device, so the algebra is unit-tested on the CPU.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nv/target>

#include <cmath>
#include <limits>
#include <type_traits>

namespace rowsoftmax::detail {

inline constexpr float log2e = 1.4426950408889634f;
inline constexpr float neg_inf = -std::numeric_limits<float>::infinity();

/// 2^x. On the device one `ex2.approx.ftz` (rel. error ~2^-22); -inf gives +0, NaN gives NaN.
__host__ __device__ inline float exp2_fast(float x) {
  NV_IF_ELSE_TARGET(NV_IS_DEVICE,
                    (float y; asm("ex2.approx.ftz.f32 %0, %1;"
                                  : "=f"(y)
                                  : "f"(x));
                     return y;),
                    (return std::exp2(x);))
}

// Round-to-nearest product and sum that the compiler may not contract into an FMA: keeps
// `combine(a, b)` and `combine(b, a)` bitwise equal, so every lane of a butterfly reduction,
// and every CTA of a cluster, ends with the same totals.
__host__ __device__ inline float mul_rn(float a, float b) {
  NV_IF_ELSE_TARGET(NV_IS_DEVICE, (return __fmul_rn(a, b);), (return a * b;))
}
__host__ __device__ inline float add_rn(float a, float b) {
  NV_IF_ELSE_TARGET(NV_IS_DEVICE, (return __fadd_rn(a, b);), (return a + b;))
}

/// e^(m - shift), as exp2((m - shift) * log2e): the factor that rescales a sum of exps taken
/// relative to a max `m` to one taken relative to `shift` (online softmax), and exp(x - shift)
/// an element.
__host__ __device__ inline float exp_diff(float m, float shift) {
  return exp2_fast((m - shift) * log2e);
}

/// A sum `s` of exps relative to `m` rescaled to `shift`: s * e^(m - shift), each product
/// rounded on its own (mul_rn), so that a combine gives the same bits whichever operand comes
/// first.
__host__ __device__ inline float rescaled(float s, float m, float shift) {
  return mul_rn(s, exp2_fast(mul_rn(m - shift, log2e)));
}

/// A partial reduction over part of a row, 8 bytes so that it travels in one shuffle pair or
/// one `st.async`. Forward: `m` is the running max, `s` the sum of exp(x - m). Backward: `s` is
/// the partial of sum(dy * y) and `m` is unused (0).
struct partial {
  float m;
  float s;
};

/// max(x) with the reference's NaN rule left to the sum: fmaxf ignores NaN, the NaN then
/// reaches `s` through exp2(NaN) and poisons the whole row, as torch.softmax does.
/// The shift used for exp2 is 0 when m is -inf, so a part holding only -inf (or nothing)
/// contributes exactly (−inf, 0) and never exp(-inf - -inf) = NaN.
__host__ __device__ inline float safe_shift(float m) {
  return m == neg_inf ? 0.0f : m;
}

/// exp(x - shift) an element, the two-step way: (x - shift) * log2e, then exp2. `scale`: the
/// factor the caller applies once to what it sums or stores (1 here; see fused_exp).
struct shifted_exp {
  float shift;
  static constexpr float scale = 1.0f;
  __host__ __device__ float operator()(float x) const { return exp_diff(x, shift); }
};

/// exp(x - shift) as exp2(fma(x, log2e, -hi)) * scale: one fma an element where shifted_exp
/// takes a subtract and a multiply. hi is shift * log2e rounded and scale = exp2(-lo) carries
/// its rounding error lo (hi + lo = shift * log2e exactly), so no error is added: the fma rounds
/// once, as the product of shifted_exp does, and exactly where x = shift. `fits(shift)`:
/// |shift| < 2^20, so that |lo| <= 2^-3 (beyond, use shifted_exp; without scale, the error of
/// hi alone would be up to 2^-8 at the largest fp16, 0.3% in every exp). Used where the extra
/// live values cost no occupancy (staged rows): the register tiers spill with it (tuning log,
/// staged rows).
struct fused_exp {
  float hi, scale;
  __host__ __device__ explicit fused_exp(float shift) {
    hi = mul_rn(shift, log2e);
    scale = exp2_fast(-std::fma(shift, log2e, -hi));
  }
  __host__ __device__ static bool fits(float shift) { return std::fabs(shift) < 0x1p20f; }
  __host__ __device__ float operator()(float x) const { return exp2_fast(std::fma(x, log2e, -hi)); }
};

/// `f(e)` with `e` the form of exp(x - shift) the shift allows: fused_exp where it fits, else
/// shifted_exp.
template <class F>
__host__ __device__ inline decltype(auto) with_exp(float shift, F&& f) {
  return fused_exp::fits(shift) ? f(fused_exp(shift)) : f(shifted_exp{shift});
}

/// Online softmax: (m, s) pairs, combined as M = max(m1, m2), s = s1 e^(m1-M) + s2 e^(m2-M).
struct online_reduce {
  __host__ __device__ static partial identity() { return {neg_inf, 0.0f}; }
  __host__ __device__ static partial combine(partial a, partial b) {
    const float m = fmaxf(a.m, b.m);
    const float shift = safe_shift(m);
    return {m, add_rn(rescaled(a.s, a.m, shift), rescaled(b.s, b.m, shift))};
  }
};

/// Plain sum in `s` (backward's sum(dy * y)).
struct sum_reduce {
  __host__ __device__ static partial identity() { return {0.0f, 0.0f}; }
  __host__ __device__ static partial combine(partial a, partial b) {
    return {0.0f, add_rn(a.s, b.s)};
  }
};

/// A divisor d > 0 of exact multiples, made once (by the launcher) so that n / d takes a shift and
/// a multiply: d's factors of two shifted out, then a multiply by the inverse of its odd part
/// modulo 2^32 (Newton's iteration, each step doubling the bits that are right). A division by a
/// value known only at run time takes a float reciprocal and conversions, which wait for the
/// SM's special-function unit behind the other CTAs' exps (tuning log, register clusters).
struct exact_divisor {
  unsigned twos = 0;
  unsigned inverse;

  __host__ __device__ explicit exact_divisor(unsigned d) {
    for (; (d & 1u) == 0; d >>= 1) ++twos;
    inverse = d;  // d * d == 1 modulo 8 for odd d: 3 bits
    for (int i = 0; i < 4; ++i) inverse *= 2u - d * inverse;  // 6, 12, 24, 48 bits
  }
  /// n / d for a multiple n of d.
  __host__ __device__ unsigned divide(unsigned n) const { return (n >> twos) * inverse; }
};

/// A divisor d > 0 of any unsigned 32-bit n, made once (by the launcher): n / d as the high half
/// of a multiply, an add and a shift (the round-up method: l = ceil(log2 d), m = floor(2^32 (2^l -
/// d) / d) + 1, n / d = (mulhi(n, m) + n) >> l, exact for every n < 2^32), for the same reason as
/// exact_divisor. The masked ops divide a row index by the queries and heads with it.
struct fast_divider {
  unsigned d = 1;
  unsigned m = 1;
  int l = 0;

  fast_divider() = default;
  __host__ __device__ explicit fast_divider(unsigned divisor) : d(divisor) {
    while ((std::uint64_t{1} << l) < d) ++l;
    m = static_cast<unsigned>((std::uint64_t{1} << 32) * ((std::uint64_t{1} << l) - d) / d + 1);
  }
  __host__ __device__ unsigned divide(unsigned n) const {
#ifdef __CUDA_ARCH__
    const std::uint64_t hi = __umulhi(n, m);
#else
    const std::uint64_t hi = (std::uint64_t{n} * m) >> 32;
#endif
    return static_cast<unsigned>((hi + n) >> l);
  }
};

template <class T>
__host__ __device__ inline float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}

template <class T>
__host__ __device__ inline T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else {
    return __float2bfloat16_rn(v);
  }
}

}  // namespace rowsoftmax::detail
