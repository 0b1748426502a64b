# SPDX-License-Identifier: Apache-2.0
"""pytest: rowsoftmax_torch against torch.softmax and autograd, on the GPU.

    cd examples/pytorch && python -m pytest -q test_rowsoftmax_torch.py
"""
import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: rowsoftmax_torch tests skipped", allow_module_level=True)

import rowsoftmax_torch as rs  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Normwise tolerance against float64: one unit roundoff of the dtype plus float32 arithmetic,
# plus, per element, the spacing of the dtype's smallest numbers (fp16 outputs near 1e-6 are
# subnormal; torch.softmax rounds them the same way).
TOL = {torch.float32: 2e-5, torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}
ABS = {torch.float32: 1e-37, torch.float16: 6e-8, torch.bfloat16: 1e-37}
SHAPES = [(1,), (7,), (3, 5), (2, 3, 1000), (4, 4097), (2, 16385), (3, 50257), (2, 131072),
          (8, 12, 64, 64), (5, 1), (1, 300001)]


def close(out, ref, dtype, scale=None):
    """||out - ref|| <= TOL ||scale|| + ABS sqrt(n), scale defaulting to ref."""
    out, ref = out.double(), ref.double()
    scale = ref if scale is None else scale
    err = (out - ref).norm().item()
    bound = TOL[dtype] * scale.norm().item() + ABS[dtype] * math.sqrt(ref.numel())
    assert err <= bound, f"error {err:.3g} > bound {bound:.3g}"
    return True


def make(shape, dtype, seed, scale=6.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).mul_(scale).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_gradient_match_float64(shape, dtype):
    x = make(shape, dtype, seed=sum(shape))
    y = rs.softmax(x)
    ref = torch.softmax(x.double(), dim=-1)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert not torch.isnan(y).any()
    assert close(y, ref, dtype)
    # Gradient of sum(w * softmax(x)) against float64 autograd.
    w = make(shape, dtype, seed=7 + sum(shape), scale=1.0)
    xg = x.clone().requires_grad_(True)
    (rs.softmax(xg) * w).sum().backward()
    xd = x.double().requires_grad_(True)
    (torch.softmax(xd, dim=-1) * w.double()).sum().backward()
    assert xg.grad.dtype == dtype
    scale = ref * (w.double().abs() + (w.double() * ref).abs().sum(-1, keepdim=True))
    assert close(xg.grad, xd.grad, dtype, scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_views_are_read_in_place(dtype):
    base = make((64, 1030), dtype, seed=3)
    for view in (base[:, :1000], base[::2, 5:1005], base[3:4, 7:]):
        ref = torch.softmax(view.double(), dim=-1)
        assert close(rs.softmax(view), ref, dtype)
    # Not expressible with one row stride: transposed; made contiguous first.
    t = base[:, :64].t()
    assert close(rs.softmax(t), torch.softmax(t.double(), dim=-1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_gradient(dtype):
    x = make((4, 333), dtype, seed=11).requires_grad_(True)
    rs.softmax(x).sum().backward()  # dy is an expanded tensor of ones (stride 0)
    assert x.grad.abs().max().item() <= 1e-2  # d/dx sum(softmax) = 0 up to rounding


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), (2, 0, 3)])
def test_empty_tensors(shape, dtype):
    x = torch.empty(shape, device="cuda", dtype=dtype)
    y = rs.softmax(x)
    assert y.shape == x.shape
    xg = x.clone().requires_grad_(True)
    rs.softmax(xg).sum().backward()
    assert xg.grad.shape == x.shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [1, 33, 4097, 50257])
def test_special_values_match_torch(cols, dtype):
    inf, nan = math.inf, math.nan
    x = make((6, cols), dtype, seed=cols)
    x[0, cols // 2] = nan           # NaN in a row
    x[1, cols // 3] = inf           # +inf in a row
    x[2, :] = -inf                  # fully masked row
    x[3, : max(1, cols // 2)] = -inf  # partly masked row (unless cols == 1)
    x[4, :] = -2.5                  # constant row
    ours, theirs = rs.softmax(x), torch.softmax(x, dim=-1)
    assert torch.equal(torch.isnan(ours), torch.isnan(theirs))
    finite = ~torch.isnan(theirs)
    assert torch.allclose(ours[finite].float(), theirs[finite].float(), rtol=4 * TOL[dtype], atol=1e-6)


def test_clear_errors():
    with pytest.raises(ValueError, match="CUDA"):
        rs.softmax(torch.randn(4, 4))
    with pytest.raises(TypeError, match="float32"):
        rs.softmax(torch.ones(4, 4, device="cuda", dtype=torch.float64))
    with pytest.raises(TypeError, match="float32"):
        rs.softmax(torch.ones(4, 4, device="cuda", dtype=torch.int32))
    with pytest.raises(ValueError, match="last dimension"):
        rs.softmax(torch.randn(4, 4, device="cuda"), dim=0)


def test_runs_on_the_current_stream():
    x = make((256, 4096), torch.bfloat16, seed=5)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = rs.softmax(x)
    s.synchronize()
    assert close(y, torch.softmax(x.double(), dim=-1), torch.bfloat16)
