# SPDX-License-Identifier: Apache-2.0
"""rowsoftmax for PyTorch: softmax and log-softmax over the last dimension with autograd.

    import rowsoftmax_torch
    y = rowsoftmax_torch.softmax(x)            # x: CUDA float32/float16/bfloat16, any rank
    y, lse = rowsoftmax_torch.log_softmax(x, scale=0.5, row_scale=r, return_lse=True)

softmax and log_softmax run the library's fused launchers through two torch.library custom ops,
rowsoftmax::fused_forward and rowsoftmax::fused_backward (with fake implementations and autograd),
so they run under torch.compile(fullgraph=True) as one opaque node each.

Installed with `pip install --no-build-isolation ./examples/pytorch` (setup.py), the extension
was compiled ahead of time (rowsoftmax_torch._C). Used from the source tree instead, it is
compiled on first use (torch.utils.cpp_extension.load, cached by torch) from the rowsoftmax
headers in this repository (or ROWSOFTMAX_INCLUDE_DIR for an installed copy).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Optional

import torch
from torch.utils.cpp_extension import load

_HERE = Path(__file__).resolve().parent
_CSRC = _HERE.parent / "csrc"
_INCLUDE = os.environ.get("ROWSOFTMAX_INCLUDE_DIR", str(_HERE.parents[2] / "include"))

_ext = None

# The extension's sources in csrc/ (setup.py builds the same list).
_SOURCES = ("binding.cpp", "launch_float.cu", "launch_half.cu", "launch_bf16.cu",
           "launch_fused_float.cu", "launch_fused_half.cu", "launch_fused_bf16.cu",
           "launch_masked_float.cu", "launch_masked_half.cu", "launch_masked_bf16.cu",
           "launch_bool_masked_float.cu", "launch_bool_masked_half.cu", "launch_bool_masked_bf16.cu",
           "launch_biased_float.cu", "launch_biased_half.cu", "launch_biased_bf16.cu",
           "launch_out_bf16_float.cu", "launch_out_half_float.cu", "launch_out_float_bf16.cu",
           "launch_out_float_half.cu")


def _extension():
    """The ahead-of-time module, else builds (once, cached by torch in its extensions
    directory) and returns the module."""
    global _ext
    if _ext is None:
        try:
            from . import _C  # built by setup.py

            _ext = _C
            return _ext
        except ImportError:
            pass
        if "TORCH_CUDA_ARCH_LIST" not in os.environ and torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"
        _ext = load(
            name="rowsoftmax_torch_ext",
            sources=[str(_CSRC / f) for f in _SOURCES],
            extra_include_paths=[_INCLUDE],
            extra_cflags=["-O3", "-std=c++17"],
            extra_cuda_cflags=["-O3", "-std=c++17"],
            verbose=False,
        )
    return _ext


_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _check(x: torch.Tensor, dim: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"rowsoftmax: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        raise ValueError(f"rowsoftmax: x must be a CUDA tensor, got device {x.device}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"rowsoftmax: x must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError("rowsoftmax: x must have at least one dimension")
    if dim not in (-1, x.dim() - 1):
        raise ValueError(f"rowsoftmax: only the last dimension is supported (dim=-1), got dim={dim}")


def softmax_forward(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, no autograd. Returns a new contiguous tensor."""
    _check(x, -1)
    if x.numel() == 0:
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    return _extension().forward(x)


def softmax_backward(dy: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """dx = y * (dy - sum(dy * y, -1)) over the last dimension, no autograd."""
    _check(y, -1)
    _check(dy, -1)
    if y.numel() == 0:
        return torch.empty_like(y, memory_format=torch.contiguous_format)
    return _extension().backward(dy, y)


# The custom ops. The kernels' outputs are new contiguous tensors (y: the input's shape, its dtype
# or `dtype`; dx: y's shape, its dtype or `dx_dtype`; lse: float32, the input's shape without its
# last dimension, or empty where not asked for), and the fake implementations say the same, so
# torch.compile traces them as one node each.
@torch.library.custom_op(
    "rowsoftmax::fused_forward", mutates_args=(), device_types="cuda",
    schema="(Tensor x, float scale, Tensor? row_scale, bool log, bool zero_empty, "
           "bool return_lse, Tensor? lengths, bool causal, int diagonal, Tensor? mask, "
           "Tensor? bias, ScalarType? dtype) -> (Tensor, Tensor)")
def _fused_forward(x, scale, row_scale, log, zero_empty, return_lse, lengths, causal, diagonal,
                   mask, bias, dtype):
    return _extension().fused_forward(x, scale, row_scale, log, zero_empty, return_lse, lengths,
                                      causal, diagonal, mask, bias, dtype)


@_fused_forward.register_fake
def _(x, scale, row_scale, log, zero_empty, return_lse, lengths, causal, diagonal, mask, bias,
      dtype):
    lse_shape = x.shape[:-1] if return_lse else (0,)
    return (x.new_empty(x.shape, dtype=dtype or x.dtype),
            x.new_empty(lse_shape, dtype=torch.float32))


@torch.library.custom_op(
    "rowsoftmax::fused_backward", mutates_args=(), device_types="cuda",
    schema="(Tensor dy, Tensor y, float scale, Tensor? row_scale, bool log, Tensor? lengths, "
           "bool causal, int diagonal, Tensor? mask, ScalarType? dx_dtype) -> Tensor")
def _fused_backward(dy, y, scale, row_scale, log, lengths, causal, diagonal, mask, dx_dtype):
    return _extension().fused_backward(dy, y, scale, row_scale, log, lengths, causal, diagonal,
                                       mask, dx_dtype)


@_fused_backward.register_fake
def _(dy, y, scale, row_scale, log, lengths, causal, diagonal, mask, dx_dtype):
    return y.new_empty(y.shape, dtype=dx_dtype or y.dtype)


def _setup_context(ctx, inputs, output):
    x, scale, row_scale, log, _, return_lse, lengths, causal, diagonal, mask, bias, _ = inputs
    # x, bias and lse only where the lse's gradient needs them (see _backward).
    ctx.save_for_backward(output[0], row_scale, lengths, mask, x if return_lse else None,
                          output[1] if return_lse else None, bias if return_lse else None)
    ctx.scale, ctx.log, ctx.return_lse = scale, log, return_lse
    ctx.x_dtype = x.dtype
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.causal, ctx.diagonal = causal, diagonal
    # Unused outputs give None, not zeros: no backward kernel for a y used only through lse,
    # no extra pass for an lse returned but unused.
    ctx.set_materialize_grads(False)


def _backward(ctx, dy, dlse):
    """The gradients with respect to x and, where it needs one, the bias (row_scale and the other
    arguments get none)."""
    y, row_scale, lengths, mask, x, lse, bias = ctx.saved_tensors
    bias_grad = ctx.bias_dtype is not None and ctx.needs_input_grad[10]
    dx = dz = None
    if dy is not None:
        # dy of y's dtype (autograd gives it so); dx of x's.
        dx_dtype = None if ctx.x_dtype == y.dtype else ctx.x_dtype
        dx = _fused_backward(dy, y, ctx.scale, row_scale, ctx.log, lengths, ctx.causal,
                             ctx.diagonal, mask, dx_dtype)
        if bias_grad:  # the gradient with respect to z = s * x + bias: the scale 1
            dz = _fused_backward(dy, y, 1.0, None, ctx.log, lengths, ctx.causal, ctx.diagonal,
                                 mask, None).float()
    if ctx.return_lse and dlse is not None:
        # d lse / dz = softmax(z), z = s * x (+ bias), one elementwise pass outside the kernel,
        # in float32; d lse / dx = s * softmax(z). softmax(z) = exp(z - lse) from x, not from y:
        # a 16-bit log-softmax output holds |y| * 2^-11 (fp16) of absolute error, which exp(y)
        # makes relative. It is 0 where y says the column is masked or its exp underflows (y 0,
        # log-softmax -inf).
        s = ctx.scale if row_scale is None else (row_scale * ctx.scale).unsqueeze(-1)
        z = x.float() * s if bias is None else x.float() * s + bias.float()
        p = torch.exp(z - lse.unsqueeze(-1))
        p = torch.where(y == (-math.inf if ctx.log else 0.0), 0.0, p)
        extra = p * dlse.unsqueeze(-1)
        dx = ((extra * s).to(ctx.x_dtype) if dx is None
              else (dx.float() + extra * s).to(ctx.x_dtype))
        if bias_grad:
            dz = extra if dz is None else dz + extra
    db = None if dz is None else dz.to(ctx.bias_dtype)
    return dx, None, None, None, None, None, None, None, None, None, db, None


_fused_forward.register_autograd(_backward, setup_context=_setup_context)

_EMPTY = {"nan": False, "zero": True}
_FLOAT32_MAX = torch.finfo(torch.float32).max


def _check_broadcast(t: torch.Tensor, x: torch.Tensor, shape, name: str, target: str) -> None:
    """Raises unless `t` is on x's device and broadcasts to `shape` (`target` names it)."""
    if t.device != x.device:
        raise ValueError(f"rowsoftmax: {name} must be on {x.device}, got {t.device}")
    fits = t.dim() <= len(shape)
    for a, b in zip(reversed(t.shape), reversed(shape)):
        fits = fits and (a == 1 or a == b)
    if not fits:
        raise ValueError(f"rowsoftmax: {name} of shape {tuple(t.shape)} does not broadcast to "
                         f"{target}")


def _broadcast_rows(t: torch.Tensor, x: torch.Tensor, name: str) -> None:
    """Raises unless `t` is on x's device and broadcasts to x's rows (x.shape[:-1])."""
    rows = x.shape[:-1]
    _check_broadcast(t, x, rows, name, f"x's rows {tuple(rows)} (x.shape[:-1])")


def _row_scale(row_scale, x: torch.Tensor) -> torch.Tensor:
    """row_scale checked and broadcast to x's rows (x.shape[:-1]), detached (it gets no
    gradient)."""
    if not isinstance(row_scale, torch.Tensor):
        raise TypeError("rowsoftmax: row_scale must be a torch.Tensor, "
                        f"got {type(row_scale).__name__}")
    if row_scale.dtype != torch.float32:
        raise TypeError(f"rowsoftmax: row_scale must be float32, got {row_scale.dtype}")
    _broadcast_rows(row_scale, x, "row_scale")
    return row_scale.detach().expand(x.shape[:-1])


def _lengths(lengths, x: torch.Tensor) -> torch.Tensor:
    """lengths checked, clamped to [0, cols], as int32 broadcast to x's rows (x.shape[:-1])."""
    if not isinstance(lengths, torch.Tensor):
        raise TypeError(f"rowsoftmax: lengths must be a torch.Tensor, got {type(lengths).__name__}")
    if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool:
        raise TypeError(f"rowsoftmax: lengths must be an integer tensor, got {lengths.dtype}")
    _broadcast_rows(lengths, x, "lengths")
    if lengths.dtype != torch.int32:  # values past cols or below 0 mean the same clamped
        lengths = lengths.clamp(0, x.shape[-1]).to(torch.int32)
    return lengths.detach().expand(x.shape[:-1])


def _broadcast_elements(t: torch.Tensor, x: torch.Tensor, name: str) -> torch.Tensor:
    """Raises unless `t` is on x's device and broadcasts to x's shape; returns it broadcast."""
    _check_broadcast(t, x, x.shape, name, f"x's shape {tuple(x.shape)}")
    return t.expand(x.shape)


def _mask(mask, x: torch.Tensor) -> torch.Tensor:
    """mask checked (bool, on x's device, broadcasting to x's shape) and broadcast to x.shape."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"rowsoftmax: mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"rowsoftmax: mask must be bool (True takes part), got {mask.dtype}")
    return _broadcast_elements(mask.detach(), x, "mask")


def _bias(bias, x: torch.Tensor) -> torch.Tensor:
    """bias checked (float32 or x's dtype, on x's device, broadcasting to x's shape) and
    broadcast to x.shape (its gradient flows back through the broadcast)."""
    if not isinstance(bias, torch.Tensor):
        raise TypeError(f"rowsoftmax: bias must be a torch.Tensor, got {type(bias).__name__}")
    if bias.dtype not in (torch.float32, x.dtype):
        raise TypeError(f"rowsoftmax: bias must be float32 or x's dtype ({x.dtype}), "
                        f"got {bias.dtype}")
    return _broadcast_elements(bias, x, "bias")


_OUT_DTYPES = {torch.float32: (torch.float16, torch.bfloat16),
               torch.float16: (torch.float32,), torch.bfloat16: (torch.float32,)}


def _dtype(dtype, x: torch.Tensor, masked: bool):
    """The output dtype to ask for: None where it is x's, else `dtype` checked (float32 from a
    16-bit x, float16 or bfloat16 from float32; not with masks or a bias)."""
    if dtype is None or dtype == x.dtype:
        return None
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"rowsoftmax: dtype must be a torch.dtype, got {type(dtype).__name__}")
    if dtype not in _OUT_DTYPES[x.dtype]:
        raise TypeError(f"rowsoftmax: dtype must be x's ({x.dtype}), float32 for float16 or "
                        f"bfloat16 x, or float16 or bfloat16 for float32 x; got {dtype}")
    if masked:
        raise ValueError("rowsoftmax: dtype other than x's is not supported with lengths, causal, "
                         "mask or bias")
    return dtype


def _fused(x, dim, scale, row_scale, empty, return_lse, log, lengths=None, causal=False,
           diagonal=0, mask=None, bias=None, dtype=None):
    _check(x, dim)
    if isinstance(scale, torch.Tensor):
        raise TypeError("rowsoftmax: scale must be a Python number (per-row tensors: row_scale)")
    scale = float(scale)
    if not abs(scale) <= _FLOAT32_MAX:  # the kernels take it as a float
        raise ValueError(f"rowsoftmax: scale must be finite in float32, got {scale}")
    if empty not in _EMPTY:
        raise ValueError(f"rowsoftmax: empty must be 'nan' or 'zero', got {empty!r}")
    if row_scale is not None:
        row_scale = _row_scale(row_scale, x)
    if lengths is not None:
        lengths = _lengths(lengths, x)
    if mask is not None:
        mask = _mask(mask, x)
    if bias is not None:
        bias = _bias(bias, x)
    if not isinstance(causal, bool):
        raise TypeError(f"rowsoftmax: causal must be a bool, got {type(causal).__name__}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"rowsoftmax: diagonal must be an int, got {type(diagonal).__name__}")
    diagonal = max(min(diagonal, 2**62), -2**62)  # beyond any row's reach: the same mask
    dtype = _dtype(dtype, x, lengths is not None or causal or mask is not None or bias is not None)
    y, lse = _fused_forward(x, scale, row_scale, log, _EMPTY[empty], bool(return_lse), lengths,
                            causal, diagonal, mask, bias, dtype)
    return (y, lse) if return_lse else y


def softmax(x: torch.Tensor, dim: int = -1, *, scale: float = 1.0,
            row_scale: Optional[torch.Tensor] = None, empty: str = "nan",
            return_lse: bool = False, lengths: Optional[torch.Tensor] = None,
            causal: bool = False, diagonal: int = 0, mask: Optional[torch.Tensor] = None,
            bias: Optional[torch.Tensor] = None, dtype: Optional[torch.dtype] = None):
    """softmax(s * x + bias) over the last dimension, s = scale * row_scale[row], on CUDA
    float32/float16/bfloat16, with autograd. torch.softmax(x, dim) with the defaults.

    dtype: y's dtype, as torch.softmax(x, dim, dtype=...): x's (None), float32 for float16 or
      bfloat16 x, or float16 or bfloat16 for float32 x, computed in float32 and rounded once
      (one read of x, one write of y; not with lengths, causal, mask or bias). The gradient
      reaching x is of x's dtype.

    scale: a finite Python number (1 / temperature; 0 and negative values allowed, -inf elements
      stay -inf).
    row_scale: optional float32 tensor on x's device, of shape x.shape[:-1] (or broadcasting to
      it), one factor a row (a per-request 1 / temperature); it gets no gradient.
    empty: what a row of only -inf (after scaling) gives, "nan" (as torch.softmax) or "zero".
    return_lse: also return the float32 log-sum-exp of each row's logits s * x, of shape
      x.shape[:-1] (differentiable too).
    lengths: optional integer tensor on x's device broadcasting to x.shape[:-1]: row i keeps
      its columns j < lengths[i] (padding, varlen batches; clamped to [0, cols]).
    causal: row i keeps its columns j <= q + diagonal, q its index along x's second-to-last
      dimension (x of shape (..., queries, keys)); diagonal 0 aligns top-left (torch.tril),
      keys - queries bottom-right.
    mask: optional bool tensor on x's device broadcasting to x's shape, True where the element
      takes part (as torch.nn.functional.scaled_dot_product_attention's boolean attn_mask): an
      attention mask (batch, heads, queries, keys) or any broadcast of it, such as a key-padding
      mask (batch, 1, 1, keys); with lengths and causal, an element is kept where all keep it.
      It gets no gradient. Read in place where its broadcast rows have one stride a batch, head
      and query and its columns are contiguous, else copied contiguous first.
    bias: optional float32 (or x's dtype) tensor on x's device broadcasting to x's shape, added
      to the scaled logits, not scaled: z = s * x + bias (ALiBi, relative positions, float masks:
      -inf removes an element). Read in place as mask is. A masked element stays masked whatever
      its bias. Differentiable: its gradient is the gradient with respect to z, summed over its
      broadcast dimensions (one more backward kernel where it requires grad).
    Masked columns' values are not used (those lengths and causal remove are not read); they are
    written as 0 (log-softmax -inf) and get no gradient; a row
    with no column kept is empty (see `empty`). log_softmax's gradient sums dy over the kept
    columns only (the same as through x.masked_fill(~keep, -inf) where dy is 0 in the others).

    Returns y (a new contiguous tensor of x's shape and dtype, or `dtype`), or (y, lse). Rows are read with
    their real stride (slices along leading dimensions are not copied). Special values follow
    torch.softmax: NaN or +inf in a row gives NaN. Raises TypeError/ValueError for CPU tensors,
    other dtypes, other dims and bad options.
    """
    return _fused(x, dim, scale, row_scale, empty, return_lse, log=False, lengths=lengths,
                  causal=causal, diagonal=diagonal, mask=mask, bias=bias, dtype=dtype)


def log_softmax(x: torch.Tensor, dim: int = -1, *, scale: float = 1.0,
                row_scale: Optional[torch.Tensor] = None, empty: str = "nan",
                return_lse: bool = False, lengths: Optional[torch.Tensor] = None,
                causal: bool = False, diagonal: int = 0, mask: Optional[torch.Tensor] = None,
                bias: Optional[torch.Tensor] = None, dtype: Optional[torch.dtype] = None):
    """log_softmax(s * x + bias) over the last dimension, as softmax (the same options, dtype
    included: torch.log_softmax(x, dim, dtype=...)); empty="zero" gives -inf for a row of only
    -inf. torch.log_softmax(x, dim) with the defaults."""
    return _fused(x, dim, scale, row_scale, empty, return_lse, log=True, lengths=lengths,
                  causal=causal, diagonal=diagonal, mask=mask, bias=bias, dtype=dtype)
