// SPDX-License-Identifier: Apache-2.0
// The options of the fused launchers (fused.cuh): runtime values that the kernels read, so one
// compiled kernel serves every scale, per-row scale array, log-sum-exp output and empty-row
// policy, and a CUDA graph replayed with new device-side values sees them.
#pragma once

namespace rowsoftmax {

/// What a fused call writes for an empty row: one whose every element is -inf after scaling
/// (the row's sum of exponentials is 0).
enum class empty_rows : unsigned char {
  nan,   ///< NaN in every element, as torch.softmax and torch.log_softmax give
  zero,  ///< softmax 0 in every element (log-softmax -inf), as torch._safe_softmax gives
};

/// @brief The options of the fused launchers (softmax_forward / log_softmax_forward and their
/// backward with a `softmax_options` argument). A default-constructed value is plain softmax
/// (or plain log-softmax).
///
/// The logit of element j of row i is z = s_i * x[i, j], rounded to float, with
/// s_i = scale (scale * row_scale[i] where `row_scale` is given, the product rounded to float),
/// except that an element of -inf stays -inf whatever the scale: a masked element stays masked
/// under a negative or zero scale (where s * -inf would be +inf or NaN).
/// Forward: softmax y = exp(z - M) / S, log-softmax y = (z - M) - ln S, with M the row's max of
/// z and S the sum of exp(z - M). Backward takes the same options as its forward and returns the
/// gradient with respect to x: softmax dx = s_i * y * (dy - sum(dy * y)), log-softmax
/// dx = s_i * (dy - exp(y) * sum(dy)).
struct softmax_options {
  /// The scale s (1 / temperature): any finite value, negative (the max of s * x is then s times
  /// the row's min) and 0 (uniform over the row's elements that are not -inf) included.
  /// Non-finite values are refused.
  float scale = 1.0f;
  /// Optional, device memory: one float a row (rows elements, 4-byte aligned), multiplied into
  /// the scale of its row: a per-request temperature. Read by the kernel when it runs (so a
  /// replayed graph sees new values); a row scale of 0 gives a uniform row. nullptr: none.
  float const* row_scale = nullptr;
  /// Optional, device memory, forward only: receives M + ln S (the natural log-sum-exp of the
  /// row's logits z) for each row, one float a row (rows elements, 4-byte aligned): -inf for an
  /// empty row, NaN for a row the softmax makes NaN. Must not overlap the tensors. Backward
  /// ignores it. nullptr: not written.
  float* row_lse = nullptr;
  /// What an empty row becomes (see empty_rows). A row holding a NaN is NaN either way.
  empty_rows empty = empty_rows::nan;
};

}  // namespace rowsoftmax
