# SPDX-License-Identifier: Apache-2.0
"""rowsoftmax for PyTorch: softmax over the last dimension with autograd.

    import rowsoftmax_torch
    y = rowsoftmax_torch.softmax(x)            # x: CUDA float32/float16/bfloat16, any rank

Installed with `pip install --no-build-isolation ./examples/pytorch` (setup.py), the extension
was compiled ahead of time (rowsoftmax_torch._C). Used from the source tree instead, it is
compiled on first use (torch.utils.cpp_extension.load, cached by torch) from the rowsoftmax
headers in this repository (or ROWSOFTMAX_INCLUDE_DIR for an installed copy).
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
from torch.utils.cpp_extension import load

_HERE = Path(__file__).resolve().parent
_CSRC = _HERE.parent / "csrc"
_INCLUDE = os.environ.get("ROWSOFTMAX_INCLUDE_DIR", str(_HERE.parents[2] / "include"))

_ext = None


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
            sources=[str(_CSRC / f) for f in
                     ("binding.cpp", "launch_float.cu", "launch_half.cu", "launch_bf16.cu")],
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


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = softmax_forward(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return softmax_backward(dy, y)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """torch.softmax(x, dim) for dim = -1, on CUDA float32/float16/bfloat16, with autograd.

    Rows are read with their real stride (slices along leading dimensions are not copied).
    Special values follow torch.softmax: NaN or +inf in a row, or a row of only -inf, gives NaN.
    Raises TypeError/ValueError for CPU tensors, other dtypes and other dims.
    """
    _check(x, dim)
    return _Softmax.apply(x)
