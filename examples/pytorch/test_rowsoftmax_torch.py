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


# ---- Fused softmax / log_softmax: scale, per-row scale, log-sum-exp, empty rows, autograd,
# torch.compile and the custom ops. References are computed in float32 (float64 for gradients)
# from the same logits z = x.float() * s, which the kernels round the same way.

FUSED_SHAPES = [(1,), (5, 1), (3, 1000), (2, 3, 4097), (1, 300001)]
FUSED = {False: (rs.softmax, torch.softmax), True: (rs.log_softmax, torch.log_softmax)}


def row_scales(shape, seed):
    """A float32 scale a row of x.shape[:-1]: random in [-2, 2) with 0, a negative and 1 among
    them where there are enough rows."""
    r = make(shape[:-1], torch.float32, seed, scale=2.0)
    flat = r.view(-1)
    flat[:3] = torch.tensor([0.0, -1.5, 1.0], device="cuda")[: flat.numel()]
    return r


def positive_row_scales(shape, seed):
    """Row scales in [0.25, 2.25): for the tests of the torch integration, whose outputs have no
    NaN to compare."""
    return make(shape[:-1], torch.float32, seed, scale=1.0) + 1.25


def scales_of(x, scale, row_scale):
    """s as the kernels form it (scale * row_scale rounded to float), shaped to multiply x."""
    if row_scale is None:
        return torch.tensor(scale, dtype=torch.float32, device=x.device)
    return (row_scale * scale).unsqueeze(-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", FUSED_SHAPES)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("scale,per_row", [(1.0, False), (0.37, False), (-2.5, False), (0.5, True)])
def test_fused_forward_and_lse(shape, dtype, log, scale, per_row):
    ours, theirs = FUSED[log]
    x = make(shape, dtype, seed=sum(shape) + int(log))
    r = row_scales(shape, seed=len(shape)) if per_row else None
    y, lse = ours(x, scale=scale, row_scale=r, return_lse=True)
    z = x.float() * scales_of(x, scale, r)
    ref = theirs(z, dim=-1)
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    assert lse.shape == x.shape[:-1] and lse.dtype == torch.float32
    assert not torch.isnan(y).any()
    assert close(y, ref, dtype)
    torch.testing.assert_close(lse, torch.logsumexp(z, dim=-1), rtol=1e-5, atol=1e-5)
    # Without return_lse: the same y.
    assert torch.equal(ours(x, scale=scale, row_scale=r), y)


def grad_bound(p, s, w, v, log):
    """The scale of the gradient's rounding error: |s| times the magnitude of each term of
    dx = s * p * (w - sum(w * p)) (softmax) or s * (w - p * sum(w)) (log-softmax), plus the
    log-sum-exp term s * p * v."""
    if log:
        m = w.abs() + p * w.abs().sum(-1, keepdim=True)
    else:
        m = p * (w.abs() + (w * p).abs().sum(-1, keepdim=True))
    return s.abs() * (m + p * v.abs().unsqueeze(-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", FUSED_SHAPES)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("per_row", [False, True])
def test_fused_gradient(shape, dtype, log, per_row):
    ours, theirs = FUSED[log]
    scale = -0.8
    x = make(shape, dtype, seed=3 * sum(shape) + int(log))
    r = row_scales(shape, seed=5 + len(shape)) if per_row else None
    w = make(shape, dtype, seed=sum(shape) + 1, scale=1.0)
    v = make(shape[:-1], torch.float32, seed=sum(shape) + 2, scale=1.0)
    # Loss through y and the log-sum-exp (a z-loss, say).
    xg = x.clone().requires_grad_(True)
    y, lse = ours(xg, scale=scale, row_scale=r, return_lse=True)
    ((y.float() * w.float()).sum() + (lse * v).sum()).backward()
    xd = x.double().requires_grad_(True)
    s = scales_of(x, scale, r).double()
    zd = xd * s
    loss = (theirs(zd, dim=-1) * w.double()).sum() + (torch.logsumexp(zd, -1) * v.double()).sum()
    loss.backward()
    assert xg.grad.dtype == dtype and xg.grad.shape == x.shape
    p = torch.softmax(zd.detach(), dim=-1)
    assert close(xg.grad, xd.grad, dtype, grad_bound(p, s, w.double(), v.double(), log))
    # Through y alone (no lse term), and through lse alone (no backward kernel).
    for use_y, use_lse in ((True, False), (False, True)):
        xg.grad = xd.grad = None
        y, lse = ours(xg, scale=scale, row_scale=r, return_lse=True)
        zd = xd * s
        if use_y:
            (y.float() * w.float()).sum().backward()
            (theirs(zd, dim=-1) * w.double()).sum().backward()
        else:
            (lse * v).sum().backward()
            (torch.logsumexp(zd, -1) * v.double()).sum().backward()
        bound = grad_bound(p, s, w.double() * use_y, v.double() * use_lse, log)
        assert close(xg.grad, xd.grad, dtype, bound)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_scale_gets_no_gradient_and_broadcasts(dtype):
    x = make((2, 3, 257), dtype, seed=9).requires_grad_(True)
    r = torch.tensor([[0.5], [2.0]], device="cuda", requires_grad=True)  # broadcasts to (2, 3)
    y = rs.softmax(x, row_scale=r)
    ref = torch.softmax(x.float() * r.detach().expand(2, 3).unsqueeze(-1), dim=-1)
    assert close(y, ref, dtype)
    (y.float() * torch.arange(257, device="cuda")).sum().backward()
    assert x.grad is not None and r.grad is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [1, 1000, 4097])
def test_fused_empty_rows(dtype, cols):
    inf = math.inf
    x = make((4, cols), dtype, seed=cols)
    x[1, :] = -inf   # empty: every logit -inf
    x[2, :] = inf    # empty too under a negative scale
    r = torch.tensor([1.0, 2.0, -1.0, 0.5], device="cuda")
    z = x.float() * r.unsqueeze(-1)
    live = [0, 3]
    for empty in ("nan", "zero"):
        p, lse = rs.softmax(x, row_scale=r, empty=empty, return_lse=True)
        lp = rs.log_softmax(x, row_scale=r, empty=empty)
        assert close(p[live], torch.softmax(z[live], -1), dtype)
        assert close(lp[live], torch.log_softmax(z[live], -1), dtype)
        assert torch.equal(lse[1:3], torch.full((2,), -inf, device="cuda"))
        if empty == "nan":
            assert torch.isnan(p[1:3]).all() and torch.isnan(lp[1:3]).all()
        else:
            assert (p[1:3] == 0).all() and (lp[1:3] == -inf).all()
    # Softmax gradient of a zeroed row is 0.
    xg = x.clone().requires_grad_(True)
    (rs.softmax(xg, row_scale=r, empty="zero").float() * 3).sum().backward()
    assert (xg.grad[1:3] == 0).all() and torch.isfinite(xg.grad).all()


@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), (2, 0, 3)])
def test_fused_empty_tensors(shape):
    x = torch.empty(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    y, lse = rs.log_softmax(x, scale=2.0, return_lse=True)
    assert y.shape == x.shape and lse.shape == x.shape[:-1]
    torch.testing.assert_close(lse, torch.logsumexp(x.detach().float(), -1))
    (y.sum() + lse.sum()).backward()
    assert x.grad.shape == x.shape


def test_fused_clear_errors():
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(ValueError, match="empty"):
        rs.softmax(x, empty="none")
    with pytest.raises(ValueError, match="finite"):
        rs.log_softmax(x, scale=math.inf)
    with pytest.raises(ValueError, match="finite"):
        rs.softmax(x, scale=1e39)  # finite in double, not in float32
    with pytest.raises(TypeError, match="Python number"):
        rs.softmax(x, scale=torch.tensor(2.0))
    with pytest.raises(TypeError, match="float32"):
        rs.softmax(x, row_scale=torch.ones(4, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="broadcast"):
        rs.softmax(x, row_scale=torch.ones(8, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        rs.softmax(x, row_scale=torch.ones(4))
    with pytest.raises(ValueError, match="last dimension"):
        rs.log_softmax(x, dim=0)
    with pytest.raises(ValueError, match="CUDA"):
        rs.log_softmax(torch.randn(4, 4))



# Masks: (shape, lengths' shape (None: none), causal, diagonal as a function of (queries, keys)).
MASKS = [
    ((2, 3, 64, 64), None, True, lambda q, k: 0),           # causal top-left
    ((1, 2, 16, 40), None, True, lambda q, k: k - q),       # causal bottom-right
    ((2, 3, 8, 1000), (2, 1, 1), False, None),              # key padding: a length a batch
    ((3, 4097), (3,), False, None),                         # a length a row
    ((2, 2, 5, 50257), (2, 1, 5), True, lambda q, k: 100),  # both, broadcast over heads
    ((4, 6, 33), (4, 6), True, lambda q, k: -3),            # some rows keep nothing
    ((1, 300001), (1,), True, lambda q, k: 200000),         # split rows, a prefix kept
]


def keep_mask(shape, lengths, causal, diagonal):
    """The columns each row keeps, as a boolean tensor of x's shape."""
    cols = shape[-1]
    j = torch.arange(cols, device="cuda")
    keep = torch.ones(shape, dtype=torch.bool, device="cuda")
    if lengths is not None:
        keep &= j < lengths.expand(shape[:-1]).unsqueeze(-1)
    if causal:
        q = torch.arange(shape[-2] if len(shape) >= 2 else 1, device="cuda").unsqueeze(-1)
        keep &= (j <= q + diagonal).expand(shape)
    return keep


def check_masked(x, log, seed, keep, **masks):
    """The fused call with `masks` on x against the torch expression it replaces in float64
    (masked_fill(~keep, -inf)), forward, lse and gradient; empty rows as torch._safe_softmax."""
    ours, theirs = FUSED[log]
    dtype, shape, scale = x.dtype, x.shape, 0.7
    xg = x.clone().requires_grad_(True)
    y, lse = ours(xg, scale=scale, return_lse=True, empty="zero", **masks)
    xd = x.double().requires_grad_(True)
    zd = (xd * scale).masked_fill(~keep, -math.inf)
    ref = theirs(zd, dim=-1)
    live = keep.any(-1)
    ref = torch.where(live.unsqueeze(-1), ref, -math.inf if log else 0.0)
    assert torch.equal(y[~keep].float(), ref[~keep].float())  # 0 or -inf exactly
    assert close(torch.where(keep, y.double(), 0), torch.where(keep, ref, 0).detach(), dtype)
    lse_ref = torch.logsumexp(zd.detach(), -1)
    torch.testing.assert_close(lse, lse_ref.float(), rtol=1e-5, atol=1e-5)
    # Gradient through the kept outputs (the masked ones' dy 0, as behind a loss or a gather).
    w = make(shape, dtype, seed=5 + seed, scale=1.0).double()
    (torch.where(keep, y.double(), 0) * w).sum().backward()
    (torch.where(keep, ref, 0) * w).sum().backward()
    grad_ref = torch.nan_to_num(xd.grad, nan=0.0)
    assert (xg.grad[~keep] == 0).all()
    p = torch.where(keep, torch.softmax(zd.detach(), -1).nan_to_num(0.0), 0)
    bound = grad_bound(p, torch.tensor(scale, dtype=torch.float64, device="cuda"), w * keep,
                       torch.zeros(shape[:-1], dtype=torch.float64, device="cuda"), log)
    assert close(xg.grad, grad_ref, dtype, bound)


def random_lengths(lshape, cols, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lengths = torch.randint(-2, cols + 3, lshape, generator=g, device="cuda")
    lengths.view(-1)[0] = cols // 2
    return lengths


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask", range(len(MASKS)))
@pytest.mark.parametrize("log", [False, True])
def test_masked_forward_and_gradient(mask, dtype, log):
    shape, lshape, causal, diag = MASKS[mask]
    d = diag(shape[-2] if len(shape) >= 2 else 1, shape[-1]) if causal else 0
    x = make(shape, dtype, seed=11 * mask + int(log))
    lengths = None if lshape is None else random_lengths(lshape, shape[-1], mask)
    keep = keep_mask(shape, lengths, causal, d)
    check_masked(x, log, mask, keep, lengths=lengths, causal=causal, diagonal=d)


# Boolean masks: (x's shape, the mask's shape, its layout, lengths' shape, causal, diagonal).
# Layouts: "dense" a contiguous tensor; "slice" a slice at an odd byte address of a wider one;
# "transposed" the transpose of a contiguous tensor (copied contiguous by the extension).
BOOL_MASKS = [
    ((2, 3, 64, 64), (2, 1, 64, 64), "dense", None, False, None),      # one mask for every head
    ((2, 3, 8, 1000), (2, 1, 1, 1000), "dense", None, True, lambda q, k: k - q),  # key padding
    ((4, 4097), (4, 4097), "slice", None, False, None),                # a mask a row
    ((2, 2, 5, 50257), (5, 50257), "dense", (2, 1, 5), False, None),   # every batch and head
    ((3, 5, 33), (3, 5, 33), "slice", (3, 5), True, lambda q, k: 2),   # all three
    ((2, 4, 40, 40), (2, 4, 40, 40), "transposed", None, False, None),
    ((2, 16385), (2, 1), "dense", None, False, None),                  # broadcast over the keys
    ((1, 300001), (300001,), "slice", None, True, lambda q, k: 250000),  # split rows
]


def bool_mask(mshape, layout, seed):
    """A random boolean mask of `mshape` (about 1 in 8 False, every 5th row all False)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    m = torch.rand(mshape, generator=g, device="cuda") >= 0.125
    if m.dim() >= 2:
        m.view(-1, mshape[-1])[::5] = False
    if layout == "slice":
        wide = torch.zeros(mshape[:-1] + (mshape[-1] + 3,), dtype=torch.bool, device="cuda")
        wide[..., 1:-2] = m
        m = wide[..., 1:-2]
    elif layout == "transposed":
        m = m.transpose(-1, -2).contiguous().transpose(-1, -2)
    return m


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(BOOL_MASKS)))
@pytest.mark.parametrize("log", [False, True])
def test_bool_masked_forward_and_gradient(case, dtype, log):
    shape, mshape, layout, lshape, causal, diag = BOOL_MASKS[case]
    d = diag(shape[-2] if len(shape) >= 2 else 1, shape[-1]) if causal else 0
    x = make(shape, dtype, seed=13 * case + int(log))
    m = bool_mask(mshape, layout, seed=case)
    lengths = None if lshape is None else random_lengths(lshape, shape[-1], case)
    keep = keep_mask(shape, lengths, causal, d) & m.expand(shape)
    assert not keep.all(-1).all()  # the mask masks something
    check_masked(x, log, case, keep, lengths=lengths, causal=causal, diagonal=d, mask=m)


def test_bool_mask_is_not_written_and_matches_sdpa_polarity():
    # True takes part: the rows of scaled_dot_product_attention with a value matrix of identity.
    q, k = 6, 24
    x = make((2, 3, q, k), torch.float32, seed=3)
    m = bool_mask((2, 1, q, k), "dense", seed=4)
    m[..., 0] = True  # no empty row, where sdpa gives NaN
    before = m.clone()
    y = rs.softmax(x, mask=m)
    assert torch.equal(m, before)
    eye = torch.eye(k, device="cuda").expand(2, 3, k, k)
    # sdpa(q, k, v) = softmax(q k^T * scale + mask) v with q = x, k = I, v = I, scale = 1.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        ref = torch.nn.functional.scaled_dot_product_attention(x, eye, eye, attn_mask=m, scale=1.0)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)


# Biases: (x's shape, the bias's shape, its dtype (None: x's), layout, masks). Layouts as
# BOOL_MASKS'; "alibi" puts -inf in some elements (a float mask).
BIASES = [
    ((2, 3, 64, 64), (1, 3, 1, 64), torch.float32, "alibi", {}),         # one row a head
    ((2, 2, 8, 1000), (2, 2, 8, 1000), None, "dense", {"causal": True}),  # x's dtype, causal
    ((4, 4097), (4, 4097), torch.float32, "slice", {}),                  # an odd element address
    ((2, 16385), (16385,), None, "dense", {}),                           # one row for every row
    ((2, 3, 5, 33), (2, 3, 5, 33), torch.float32, "transposed", {}),     # copied contiguous
    ((2, 2, 5, 50257), (2, 1, 5, 50257), torch.float32, "dense", {"mask": True}),
    ((1, 300001), (300001,), torch.float32, "dense", {}),                # split rows
]


def bias_tensor(bshape, dtype, layout, seed):
    """A random bias of `bshape` in [-4, 4) (layout as bool_mask's; "alibi": some -inf)."""
    b = make(bshape, torch.float32, seed, scale=4.0)
    if layout == "alibi":
        g = torch.Generator(device="cuda").manual_seed(seed + 1)
        b[torch.rand(bshape, generator=g, device="cuda") < 0.1] = -math.inf
    b = b.to(dtype)
    if layout == "slice":
        wide = torch.zeros(bshape[:-1] + (bshape[-1] + 3,), dtype=dtype, device="cuda")
        wide[..., 1:-2] = b
        b = wide[..., 1:-2]
    elif layout == "transposed":
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    return b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(BIASES)))
@pytest.mark.parametrize("log", [False, True])
def test_biased_forward_and_gradient(case, dtype, log):
    """softmax(s * x + bias) against float64 autograd: y, lse and the gradients of x and of the
    bias (summed over its broadcast), masks as check_masked."""
    shape, bshape, bdtype, layout, masks = BIASES[case]
    ours, theirs = FUSED[log]
    scale = 0.7
    x = make(shape, dtype, seed=17 * case + int(log))
    b = bias_tensor(bshape, bdtype or dtype, layout, seed=case)
    keep = torch.ones(shape, dtype=torch.bool, device="cuda")
    kw = {}
    if masks.get("causal"):
        kw["causal"] = True
        keep &= keep_mask(shape, None, True, 0)
    if masks.get("mask"):
        m = bool_mask(shape[:-1] + (shape[-1],), "dense", seed=case)
        kw["mask"] = m
        keep &= m
    xg, bg = x.clone().requires_grad_(True), b.clone().requires_grad_(True)
    y, lse = ours(xg, scale=scale, bias=bg, return_lse=True, empty="zero", **kw)
    xd, bd = x.double().requires_grad_(True), b.double().requires_grad_(True)
    zd = (xd * scale + bd).masked_fill(~keep, -math.inf)
    live = (zd > -math.inf).any(-1)
    ref = torch.where(live.unsqueeze(-1), theirs(zd, dim=-1), -math.inf if log else 0.0)
    out = zd > -math.inf  # the elements that take part
    assert torch.equal(y[~out].float(), ref[~out].float())  # 0 or -inf exactly
    assert close(torch.where(out, y.double(), 0), torch.where(out, ref, 0).detach(), dtype)
    lse_ref = torch.logsumexp(zd.detach(), -1)
    torch.testing.assert_close(lse, lse_ref.float(), rtol=1e-5, atol=1e-5)
    w = make(shape, dtype, seed=23 + case, scale=1.0).double()
    v = make(shape[:-1], torch.float32, seed=29 + case, scale=1.0).double()
    v = torch.where(live, v, 0.0)  # an empty row's lse is -inf: no gradient through it
    ((torch.where(out, y.double(), 0) * w).sum() + (torch.where(live, lse.double(), 0) * v).sum()
     ).backward()
    lse_d = torch.logsumexp(zd, -1)
    ((torch.where(out, ref, 0) * w).sum() + (torch.where(live, lse_d, 0) * v).sum()).backward()
    p = torch.where(out, torch.softmax(zd.detach(), -1).nan_to_num(0.0), 0)
    one = torch.tensor(1.0, dtype=torch.float64, device="cuda")
    bound = grad_bound(p, one, w * out, v, log)
    assert xg.grad.dtype == dtype and bg.grad.dtype == b.dtype and bg.grad.shape == b.shape
    assert close(xg.grad, torch.nan_to_num(xd.grad, nan=0.0), dtype, bound * scale)
    # The bias's gradient: the gradient with respect to z, summed over the bias's broadcast.
    assert close(bg.grad, torch.nan_to_num(bd.grad, nan=0.0), dtype, bound.sum_to_size(bshape))


def test_bias_is_not_written_and_matches_sdpa():
    # A float mask as sdpa adds it: softmax(x + bias) with scale 1.
    q, k = 6, 24
    x = make((2, 3, q, k), torch.float32, seed=7)
    b = bias_tensor((1, 3, q, k), torch.float32, "alibi", seed=8)
    b[..., 0] = 0.0  # no empty row
    before = b.clone()
    y = rs.softmax(x, bias=b)
    assert torch.equal(b, before)
    eye = torch.eye(k, device="cuda").expand(2, 3, k, k)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        ref = torch.nn.functional.scaled_dot_product_attention(x, eye, eye, attn_mask=b, scale=1.0)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)


def test_bias_clear_errors():
    x = torch.randn(2, 3, 8, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="bias"):
        rs.softmax(x, bias=torch.ones(8, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="broadcast"):
        rs.softmax(x, bias=torch.ones(3, 3, 8, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        rs.softmax(x, bias=torch.ones(8))
    with pytest.raises(TypeError, match="bias"):
        rs.softmax(x, bias=[0.0] * 8)


def test_masked_clear_errors():
    x = torch.randn(2, 3, 8, device="cuda")
    with pytest.raises(TypeError, match="integer"):
        rs.softmax(x, lengths=torch.ones(2, 3, device="cuda"))
    with pytest.raises(ValueError, match="broadcast"):
        rs.softmax(x, lengths=torch.ones(4, dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        rs.softmax(x, lengths=torch.ones(2, 3, dtype=torch.int32))
    with pytest.raises(TypeError, match="causal"):
        rs.softmax(x, causal=1)
    with pytest.raises(TypeError, match="diagonal"):
        rs.softmax(x, causal=True, diagonal=1.5)
    with pytest.raises(TypeError, match="bool"):
        rs.softmax(x, mask=torch.ones(2, 3, 8, dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="broadcast"):
        rs.softmax(x, mask=torch.ones(3, 3, 8, dtype=torch.bool, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        rs.softmax(x, mask=torch.ones(8, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask"):
        rs.softmax(x, mask=[True] * 8)

# Other output dtypes: (x's dtype, y's dtype) as torch.softmax(x, -1, dtype=...) allows them.
OUT_PAIRS = [(torch.bfloat16, torch.float32), (torch.float16, torch.float32),
             (torch.float32, torch.bfloat16), (torch.float32, torch.float16)]


@pytest.mark.parametrize("pair", OUT_PAIRS, ids=lambda p: f"{p[0]}->{p[1]}".replace("torch.", ""))
@pytest.mark.parametrize("shape", [(3, 33), (2, 3, 1000), (4, 4097), (3, 50257), (1, 300001)])
@pytest.mark.parametrize("log", [False, True])
def test_output_dtype_forward_and_gradient(pair, shape, log):
    """y of dtype against torch.softmax(x, -1, dtype=...) (and log_softmax) in float64, with the
    scale, per-row scales and lse; the gradient reaching x of x's dtype, through y and lse."""
    xt, yt = pair
    ours, theirs = FUSED[log]
    x = make(shape, xt, seed=sum(shape) + 11 * int(log))
    r = row_scales(shape, seed=len(shape) + 1)
    y, lse = ours(x, scale=0.6, row_scale=r, return_lse=True, dtype=yt)
    assert y.dtype == yt and y.shape == x.shape and y.is_contiguous()
    z = x.float() * scales_of(x, 0.6, r)
    assert close(y, theirs(z.double(), dim=-1), yt)
    torch.testing.assert_close(lse, torch.logsumexp(z, dim=-1), rtol=1e-5, atol=1e-5)
    # torch's own dtype= path gives the same within y's rounding, each's (twice the bound).
    ref = theirs(x.double(), dim=-1)
    assert close(ours(x, dtype=yt), theirs(x, dim=-1, dtype=yt).double(), yt, 2 * ref)
    w = make(shape, yt, seed=sum(shape) + 1, scale=1.0)
    v = make(shape[:-1], torch.float32, seed=sum(shape) + 2, scale=1.0)
    xg = x.clone().requires_grad_(True)
    y, lse = ours(xg, scale=0.6, row_scale=r, return_lse=True, dtype=yt)
    ((y * w).sum() + (lse * v).sum()).backward()
    assert xg.grad.dtype == xt
    xd = x.double().requires_grad_(True)
    s = scales_of(x, 0.6, r).double()
    zd = xd * s
    ((theirs(zd, dim=-1) * w.double()).sum() + (torch.logsumexp(zd, -1) * v.double()).sum()
     ).backward()
    # dy is of y's dtype, y rounded to it: the gradient's error is the coarser dtype's.
    coarse = xt if TOL[xt] > TOL[yt] else yt
    p = torch.softmax(zd.detach(), dim=-1)
    assert close(xg.grad, xd.grad, coarse, grad_bound(p, s, w.double(), v.double(), log))


def test_output_dtype_errors():
    x = make((2, 8), torch.bfloat16, seed=1)
    with pytest.raises(TypeError, match="dtype must be"):
        rs.softmax(x, dtype=torch.float16)
    with pytest.raises(TypeError, match="dtype must be"):
        rs.softmax(x.float(), dtype=torch.float64)
    with pytest.raises(ValueError, match="not supported with lengths"):
        rs.softmax(x, dtype=torch.float32, causal=True)
    assert rs.softmax(x, dtype=torch.bfloat16).dtype == torch.bfloat16  # x's own: accepted


def test_torch_compile_fullgraph():
    torch._dynamo.reset()

    def f(x, r):
        p = rs.softmax(x, scale=0.5, row_scale=r)
        lp, lse = rs.log_softmax(x, scale=2.0, empty="zero", return_lse=True)
        m = rs.softmax(x, scale=0.25, causal=True, lengths=(r * 300).int(), empty="zero")
        b = rs.log_softmax(x, mask=x > -1, empty="zero")
        c = rs.softmax(x, bias=r.unsqueeze(-1) * 0.5)
        return ((p.float() * lp.float()).sum() + lse.square().sum() + m.float().square().sum() +
                torch.where(x > -1, b.float(), 0).sum() + c.float().square().sum())

    compiled = torch.compile(f, fullgraph=True)
    for shape in ((8, 1000), (3, 5, 4097)):
        x = make(shape, torch.bfloat16, seed=shape[-1])
        r = positive_row_scales(shape, seed=2)
        xe, xc = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        le, lc = f(xe, r), compiled(xc, r)
        le.backward()
        lc.backward()
        torch.testing.assert_close(lc, le, rtol=1e-4, atol=1e-4)
        assert close(xc.grad, xe.grad, torch.bfloat16)


def test_opcheck_custom_ops():
    ops = torch.ops.rowsoftmax
    for shape in ((3, 1000), (2, 3, 1)):
        x = make(shape, torch.float32, seed=1)
        r = positive_row_scales(shape, seed=3)
        for log in (False, True):
            for row_scale, zero_empty, return_lse in ((None, False, False), (r, True, True)):
                xg = x.clone().requires_grad_(True)
                args = (xg, 0.75, row_scale, log, zero_empty, return_lse, None, False, 0, None,
                        None, None)
                torch.library.opcheck(ops.fused_forward.default, args)
                # Another output dtype, and its backward (dx of x's dtype).
                args = args[:-1] + (torch.bfloat16,)
                torch.library.opcheck(ops.fused_forward.default, args)
                y = ops.fused_forward(*args)[0].detach()
                dy = make(shape, torch.bfloat16, seed=2)
                torch.library.opcheck(ops.fused_backward.default,
                                      (dy, y, 0.75, row_scale, log, None, False, 0, None,
                                       torch.float32))
            lengths = torch.full(shape[:-1], shape[-1] // 2 + 1, dtype=torch.int32, device="cuda")
            keep = make(shape, torch.float32, seed=5) > -4
            for masks in ((None, False, 0, None), (lengths, True, 1, None), (None, False, 0, keep),
                          (lengths, True, -1, keep[:1].expand(shape))):
                xg = x.clone().requires_grad_(True)
                args = (xg, 0.75, r, log, True, True) + masks + (None, None)
                torch.library.opcheck(ops.fused_forward.default, args)
                # With a bias that needs a gradient too.
                bias = make(shape, torch.float32, seed=6).requires_grad_(True)
                args = ((x.clone().requires_grad_(True), 0.75, r, log, True, True) + masks +
                        (bias, None))
                torch.library.opcheck(ops.fused_forward.default, args)
                y, _ = ops.fused_forward(x, 0.75, r, log, False, False, *masks, None, None)
                dy = make(shape, torch.float32, seed=4)
                torch.library.opcheck(ops.fused_backward.default,
                                      (dy, y, 0.75, r, log) + masks + (None,))
