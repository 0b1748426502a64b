// SPDX-License-Identifier: Apache-2.0
// The options of the fused launchers (fused.cuh): runtime values that the kernels read, so one
// compiled kernel serves every scale, per-row scale array, log-sum-exp output and empty-row
// policy, and a CUDA graph replayed with new device-side values sees them.
#pragma once

#include <cstdint>

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

/// Strides, in elements, of an operand broadcast over the rows of an attention tensor: a row
/// is read as (batch, head, query) (masked_softmax_options::heads, ::queries), and its value is
/// element batch * batch + head * head + query * query of the operand. 0 broadcasts.
struct broadcast_strides {
  std::int64_t batch = 1;  ///< default: one value a batch (a row where heads = queries = 1)
  std::int64_t head = 0;
  std::int64_t query = 0;
};

/// @brief softmax_options with the masks that keep a prefix of each row: a valid length per row
/// and a causal mask, in any combination. The values of the columns they remove are never used,
/// and they are not read past the 16-byte vector that holds a row's kept end (nor past the row's
/// last vector); forward writes them as 0 (log-softmax: -inf), backward writes their dx as 0.
/// A row with no column kept is an empty row (softmax_options::empty).
///
/// Rows are read as the rows of an attention tensor (batch, heads, queries, cols), row r being
/// batch r / (heads * queries), head (r / queries) % heads, query r % queries; rows must be a
/// multiple of heads * queries. With the defaults (heads = queries = 1), each row is its own
/// batch. Taken by the overloads of the fused launchers with this type, whose kernels are
/// compiled apart from the unmasked ones (a program that never passes it compiles none of them).
///
/// Backward: a kept column's log-softmax gradient sums dy over the kept columns only (the dy of
/// masked columns is not used), the gradient of the masked function; autograd through
/// `log_softmax(x.masked_fill(~keep, -inf))` sums every column's dy instead, the same where the
/// masked columns' dy is 0 (as it is behind a gather, a loss or a mask).
struct masked_softmax_options : softmax_options {
  std::int64_t heads = 1;    ///< heads a batch (>= 1)
  std::int64_t queries = 1;  ///< queries a head (>= 1): rows of one head's score matrix
  /// Optional, device memory: the valid length of each row, an int32 read at
  /// `lengths_strides` (4-byte aligned): row r keeps columns j < length, the length clamped to
  /// [0, cols]. Read by the kernel when it runs (a replayed graph sees new values). nullptr:
  /// none.
  int const* lengths = nullptr;
  broadcast_strides lengths_strides{};  ///< where row r's length is; strides >= 0
  /// Causal: row r keeps columns j <= query + diagonal. diagonal = 0 aligns the mask top-left
  /// (as Apex's upper-triangular softmax); diagonal = cols - queries aligns it bottom-right (as
  /// FlashAttention with fewer queries than keys). Any value; one that keeps no column of a
  /// row makes it empty.
  bool causal = false;
  std::int64_t diagonal = 0;
};

/// @brief masked_softmax_options with a boolean mask: one byte an element, per row or broadcast
/// over the rows as the lengths are (an attention mask of shape (batch, heads, queries, cols),
/// or any of its broadcasts: a key-padding mask (batch, 1, 1, cols), one mask for every head
/// (batch, 1, queries, cols)). A column is kept where the prefix masks keep it and its mask byte
/// is not 0; the other columns are masked as the prefix masks' are: forward writes them as 0
/// (log-softmax: -inf), backward writes their dx as 0 and does not use their dy or y. Their values
/// (x, dy, y) may be read but are never used.
///
/// Taken by the overloads of the fused launchers that take masked_softmax_options (and, being
/// one, it may be passed where those are taken); its kernels are compiled apart from the
/// prefix-masked ones (a program that never passes one compiles none of them).
struct bool_masked_softmax_options : masked_softmax_options {
  /// Device memory: the mask, one byte a column of a row (a `bool` array), any alignment. 0 masks
  /// the element, any other value keeps it: `true` takes part, as in PyTorch's
  /// scaled_dot_product_attention. Row r (read as (batch, head, query), see masked_softmax_options)
  /// reads bytes [o, o + cols) with
  /// o = batch * keep_strides.batch + head * keep_strides.head + query * keep_strides.query;
  /// bytes of columns the prefix masks remove are not read. Read by the kernel when it runs (a
  /// replayed graph sees new values). nullptr: every column kept (the prefix masks alone).
  bool const* keep = nullptr;
  /// Where row r's mask starts, in bytes (elements of `keep`), strides >= 0; 0 broadcasts. A
  /// contiguous mask of one row a row (batch, heads, queries, cols): {heads * queries * cols,
  /// queries * cols, cols}; a key-padding mask (batch, cols): {cols, 0, 0}.
  broadcast_strides keep_strides{0, 0, 0};
};

/// The element type of biased_softmax_options::bias.
enum class bias_type : unsigned char {
  input,  ///< the launch's element type T (float, __half or __nv_bfloat16)
  f32,    ///< float, whatever T is
};

/// @brief bool_masked_softmax_options with an additive bias: the logit of element j of row i is
/// z = s_i * x[i, j] + bias[i, j], the bias not scaled, in float (the product rounded, then the
/// sum): ALiBi and relative-position biases, float masks (a bias of -inf removes the element).
/// An element whose s_i * x is -inf (one the masks remove, or an x of -inf under a positive
/// scale) stays -inf whatever its bias. The masks work as in bool_masked_softmax_options (keep
/// may be nullptr, and the prefix masks may keep every column): a masked element's bias is not
/// used (nor read, past a prefix mask's end).
///
/// Forward only reads the bias. Backward takes the same options and ignores the bias (the
/// gradient with respect to x is the unbiased one's, times s_i, over the masks' columns; the
/// bias's own gradient, where one is wanted, is the gradient with respect to z, backward with a
/// scale of 1): it runs the bool_masked_softmax_options kernels. Its kernels are compiled apart
/// (a program that never passes one compiles none of them).
struct biased_softmax_options : bool_masked_softmax_options {
  /// Device memory: the bias, one element a column of a row, of type `bias_dtype`, aligned to its
  /// element size (4 or 2 bytes); per row or broadcast over the rows as the masks are: row r
  /// reads elements [o, o + cols) with
  /// o = batch * bias_strides.batch + head * bias_strides.head + query * bias_strides.query.
  /// Read by the kernel when it runs (a replayed graph sees new values). nullptr: no bias.
  void const* bias = nullptr;
  bias_type bias_dtype = bias_type::input;  ///< the bias's element type
  /// Where row r's bias starts, in elements of the bias, strides >= 0; 0 broadcasts. A bias of
  /// one row a row (batch, heads, queries, cols): {heads * queries * cols, queries * cols, cols};
  /// one a head, shared by the queries and batches (ALiBi, (1, heads, 1, cols)): {0, cols, 0}.
  broadcast_strides bias_strides{0, 0, 0};
};

}  // namespace rowsoftmax
