"""Tiled kernels that bound their working memory: flash-style ``scaled_dot_product_attention``
and convolution over batch tiles of its im2col columns. Each tiled result must equal the untiled
one (tile sizes forced tiny through the modules' constants) and PyTorch's."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember import _kernels_loader
from ember.ops.nn import _kernels as kern
from ember.ops.nn import attention as attn
from ember.ops.nn import convolution as conv
from helpers import HAVE_TORCH, check, randn


def _tiled(y) -> bool:
    """Whether ``y`` came from the tiled attention op (both ops carry PyTorch's node name)."""
    return type(y.grad_fn) is attn.ScaledDotProductFlashAttention._node_cls


def F(m):
    return m.nn.functional


@pytest.fixture
def tiny_tiles(monkeypatch):
    """Tiles of 3 query rows x 4 keys, and a batch loop down to one (batch, head) per tile."""
    monkeypatch.setattr(attn, "_Q_TILE", 3)
    monkeypatch.setattr(attn, "_K_TILE", 4)
    monkeypatch.setattr(attn, "_TILE_ELEMS", 30)


def _untiled(fn, *arrays):
    """fn's output and gradients (float64) on the single-tile path."""
    saved = attn._Q_TILE, attn._K_TILE
    attn._Q_TILE = attn._K_TILE = 1 << 30
    try:
        return _run(fn, *arrays)
    finally:
        attn._Q_TILE, attn._K_TILE = saved


def _run(fn, *arrays):
    ts = [ember.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    y = fn(ember, *ts)
    cot = np.cos(np.arange(y.numel())).reshape(tuple(y.shape))
    y.backward(ember.tensor(cot))
    return y, [y.detach().numpy()] + [t.grad.numpy() for t in ts if t.requires_grad]


Q, K, V = randn(2, 3, 10, 5), randn(2, 3, 11, 5, seed=1), randn(2, 3, 11, 4, seed=2)
_BM = np.random.default_rng(0).random((10, 11)) > 0.4
_BM[2] = False  # a row with nothing to attend: zeros, as the untiled op and PyTorch

ATTENTION_FORMS = {
    "plain": (lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v), (Q, K, V)),
    "causal": (lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
               (Q, K, V)),
    "causal_long_query": (
        lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, is_causal=True,
                                                             scale=0.3),
        (randn(2, 11, 5), randn(2, 7, 5, seed=1), randn(2, 7, 3, seed=2))),
    "bool_mask": (lambda m, q, k, v: F(m).scaled_dot_product_attention(
        q, k, v, attn_mask=m.tensor(_BM)), (Q, K, V)),
    "bool_mask_heads": (lambda m, q, k, v: F(m).scaled_dot_product_attention(
        q, k, v, attn_mask=m.tensor(np.random.default_rng(1).random((3, 1, 11)) > 0.3)),
        (Q, K, V)),
    "float_mask": (lambda m, q, k, v: F(m).scaled_dot_product_attention(
        q, k, v, attn_mask=m.tensor(randn(2, 1, 10, 11, seed=4))), (Q, K, V)),
    "float_mask_with_inf": (lambda m, q, k, v: F(m).scaled_dot_product_attention(
        q, k, v, attn_mask=m.tensor(np.where(_BM, 0.0, -np.inf))), (Q, K, V)),
    "broadcast_batch": (lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
                        (randn(2, 1, 10, 5), randn(1, 3, 11, 5, seed=1),
                         randn(3, 11, 4, seed=2))),
    "unbatched": (lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v),
                  (randn(10, 5), randn(11, 5, seed=1), randn(11, 2, seed=2))),
    "gqa": (lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, enable_gqa=True),
            (randn(2, 6, 10, 5), randn(2, 2, 11, 5, seed=1), randn(2, 2, 11, 4, seed=2))),
    "gqa_causal_mask": (lambda m, q, k, v: F(m).scaled_dot_product_attention(
        q, k, v, attn_mask=m.tensor(np.random.default_rng(2).random((6, 10, 11)) > 0.2),
        enable_gqa=True),
        (randn(2, 6, 10, 5), randn(2, 2, 11, 5, seed=1), randn(2, 2, 11, 4, seed=2))),
}


@pytest.mark.parametrize("form", sorted(ATTENTION_FORMS))
def test_tiled_attention_equals_untiled(form, tiny_tiles):
    fn, arrays = ATTENTION_FORMS[form]
    want_y, want = _untiled(fn, *arrays)
    got_y, got = _run(fn, *arrays)
    assert not _tiled(want_y) and _tiled(got_y)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("form", ["causal", "bool_mask", "float_mask", "gqa_causal_mask",
                                  "broadcast_batch"])
def test_tiled_attention_against_torch(form, tiny_tiles):
    """Forward against PyTorch, float64 gradcheck and gradient parity, on smaller inputs
    (still several tiles each way)."""
    fn, arrays = ATTENTION_FORMS[form]
    # one batch row (one head for the float mask, which has a batch dim of its own)
    small = tuple(a[:, :1] if form == "float_mask" else a[:1] for a in arrays)
    check(fn, *small, gradgrad=form == "causal")


def test_tiled_attention_float32_within_rounding_of_untiled(tiny_tiles):
    fn, arrays = ATTENTION_FORMS["causal"]
    arrays = tuple(a.astype(np.float32) for a in arrays)
    want_y, want = _untiled(fn, *arrays)
    got_y, got = _run(fn, *arrays)
    assert got_y.dtype == ember.float32 and _tiled(got_y)
    for a, b in zip(got, want):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _dropout_attention(q, k, v, seed=3):  # several 3 x 4 tiles of a 7 x 9 attention
    ember.manual_seed(seed)
    return EF.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True)


def test_tiled_attention_dropout_same_seed_same_mask(tiny_tiles):
    q, k, v = (ember.tensor(a[:1, :2, :9 if a is not Q else 7], requires_grad=True)
               for a in (Q, K, V))
    a, b, c = _dropout_attention(q, k, v), _dropout_attention(q, k, v), \
        _dropout_attention(q, k, v, seed=4)
    assert _tiled(a)
    assert bool((a == b).all()) and not bool((a == c).all())
    # the backward redraws each tile's mask: with the seed fixed the function is deterministic,
    # so finite differences see the very mask backward uses
    assert ember.autograd.gradcheck(_dropout_attention, (q, k, v))
    assert ember.autograd.gradgradcheck(_dropout_attention, (q, k, v))


def test_tiled_attention_dropout_rate():
    # uniform attention over ones: each output is (kept keys) / (keys * (1 - p)), mean 1
    q, k = ember.zeros(2, 2, 600, 8), ember.zeros(2, 2, 700, 8)
    v = ember.ones(2, 2, 700, 3, requires_grad=True)
    y = EF.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert _tiled(y)
    assert abs(y.mean().item() - 1.0) < 0.01
    y.sum().backward()  # grad_v[j] = sum over rows of P_d[:, j]: the same total
    assert abs(v.grad.sum().item() / (2 * 2 * 600 * 3) - 1.0) < 0.01


def test_tiled_attention_output_is_saved_as_in_pytorch():
    q = ember.randn(1, 1, 300, 8, requires_grad=True)
    for n in (300, 6):  # tiled and single-tile: PyTorch's kernel saves its output in both
        y = EF.scaled_dot_product_attention(q[..., :n, :], q[..., :n, :], q[..., :n, :])
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tiled_attention_peak_memory(monkeypatch):
    """1 x 4 x 1024 x 32 causal: one probability matrix is 16 MB in float32; the tiled path holds
    the output, the log-sum-exp, the gradients (0.5 MB each) and a tile's scores and their
    gradient (2 MB each)."""
    q, k, v = (ember.randn(1, 4, 1024, 32, requires_grad=True) for _ in range(3))

    def step():
        y = EF.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.backward(ember.ones_like(y))

    step()
    assert _peak(step) < 12 << 20
    monkeypatch.setattr(attn, "_Q_TILE", 1 << 30)  # the single-tile op needs more: the test bites
    monkeypatch.setattr(attn, "_K_TILE", 1 << 30)
    monkeypatch.setattr(attn, "_FLASH_MIN_SCORES", 1 << 40)
    assert _peak(step) > 16 << 20


def test_a_batch_of_one_tile_each_keeps_no_probabilities_when_its_scores_are_large():
    """16 x 4 x 256 x 256 (one tile per head, 16 MB of scores): backward keeps the log-sum-exp,
    not the probabilities, as PyTorch's CPU kernel; a small batch keeps the single-tile op."""
    q, k, v = (ember.randn(16, 4, 256, 16, requires_grad=True) for _ in range(3))
    y = EF.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert isinstance(y.grad_fn, attn.ScaledDotProductFlashAttention._node_cls)
    kept = sum(b for _, arrs in ember.autograd.graph.saved_tensors(y) for *_, b in arrs)
    assert kept < 4 * 16 * 4 * 256 * 16 * 4 + (1 << 20)  # q, k, v, out and the lse
    small = EF.scaled_dot_product_attention(*(t[:1, :1] for t in (q, k, v)), is_causal=True)
    assert not isinstance(small.grad_fn, attn.ScaledDotProductFlashAttention._node_cls)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_tiled_attention_large_against_torch():
    import torch

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 2, 700, 16)).astype(np.float32) for _ in range(3))
    res = []
    for m in (ember, torch):
        ts = [m.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = m.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
        y.backward(m.ones_like(y))
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# convolution over batch tiles

CONV_FORMS = {
    "conv2d": (lambda m, x, w, b: F(m).conv2d(x, w, b, padding=1), (5, 4, 9, 9), (6, 4, 3, 3)),
    "conv2d_stride_dilation": (
        lambda m, x, w, b: F(m).conv2d(x, w, b, stride=2, padding=2, dilation=2),
        (5, 4, 11, 9), (6, 4, 3, 3)),
    "conv2d_groups": (lambda m, x, w, b: F(m).conv2d(x, w, b, padding=(1, 0), groups=2),
                      (5, 4, 9, 9), (6, 2, 3, 2)),
    "conv2d_batch_inner": (lambda m, x, w, b: F(m).conv2d(x, w, b, padding=1),
                           (20, 8, 6, 6), (4, 8, 3, 3)),
    "conv2d_per_image": (lambda m, x, w, b: F(m).conv2d(x, w, b), (5, 1, 16, 16), (6, 1, 5, 5)),
    "conv1d": (lambda m, x, w, b: F(m).conv1d(x, w, b, padding=2, stride=2), (5, 3, 20),
               (4, 3, 5)),
    "conv3d": (lambda m, x, w, b: F(m).conv3d(x, w, b, padding=1), (3, 2, 5, 6, 6),
               (4, 2, 3, 3, 3)),
    "conv_transpose2d": (lambda m, x, w, b: F(m).conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1), (5, 4, 7, 7), (4, 3, 3, 3)),
    "conv_transpose2d_groups": (lambda m, x, w, b: F(m).conv_transpose2d(
        x, w, b, stride=2, groups=2, dilation=2), (5, 4, 7, 7), (4, 3, 3, 3)),
    "conv_transpose1d": (lambda m, x, w, b: F(m).conv_transpose1d(x, w, b, stride=3),
                         (5, 4, 9), (4, 3, 4)),
    "conv_transpose3d": (lambda m, x, w, b: F(m).conv_transpose3d(x, w, b, stride=2),
                         (3, 2, 4, 4, 4), (2, 3, 3, 3, 3)),
}


def _conv_arrays(form):
    fn, xs, ws = CONV_FORMS[form]
    transposed = "transpose" in form
    nb = ws[1] * (2 if "groups" in form else 1) if transposed else ws[0]
    return fn, (randn(*xs), randn(*ws, seed=1), randn(nb, seed=2))


def _with_cap(monkeypatch, cap_min, cap_out):
    monkeypatch.setattr(kern, "_COLS_CAP_MIN", cap_min)
    monkeypatch.setattr(kern, "_COLS_CAP_OUT", cap_out)


def _count_tiles(monkeypatch):
    """Count the per-tile kernel calls (forward, input gradient, weight gradient)."""
    calls = {"n": 0}
    for name in ("_conv_forward", "_conv_transpose_forward", "_weight_grad"):
        orig = getattr(conv, name)

        def spy(*a, _orig=orig):
            calls["n"] += 1
            return _orig(*a)

        monkeypatch.setattr(conv, name, spy)
    return calls


@pytest.mark.parametrize("cap_out", [0.0, 0.3])  # one image per tile; a few, the last short
@pytest.mark.parametrize("form", sorted(CONV_FORMS))
def test_tiled_conv_equals_untiled(form, cap_out, monkeypatch):
    fn, arrays = _conv_arrays(form)
    _with_cap(monkeypatch, 1 << 40, 1.0)
    calls = _count_tiles(monkeypatch)
    _, want = _run(fn, *arrays)
    untiled_calls = calls["n"]
    _with_cap(monkeypatch, 0, cap_out)
    _, got = _run(fn, *arrays)
    assert calls["n"] - untiled_calls > untiled_calls  # more kernel calls: it did tile
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["conv2d_groups", "conv_transpose2d", "conv1d", "conv3d"])
def test_tiled_conv_against_torch(form, monkeypatch):
    _with_cap(monkeypatch, 0, 0.0)
    fn, arrays = _conv_arrays(form)
    check(fn, *arrays, gradgrad=form == "conv2d_groups")


def test_tiled_conv_float32_within_rounding(monkeypatch):
    fn, arrays = _conv_arrays("conv2d")
    arrays = tuple(a.astype(np.float32) for a in arrays)
    _with_cap(monkeypatch, 1 << 40, 1.0)
    _, want = _run(fn, *arrays)
    _with_cap(monkeypatch, 0, 0.0)
    _, got = _run(fn, *arrays)
    for a, b in zip(got, want):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


def test_tiled_conv_peak_memory(monkeypatch):
    """conv2d 32 -> 32 3x3 on 16 x 32 x 32 x 32 (float32): input and output 2 MB each, the
    batch's columns 19 MB, forward and again for the input gradient. With the default cap the
    columns go 8 MB at a time; none are kept for backward at any cap (PyTorch saves x and w)."""
    x = ember.randn(16, 32, 32, 32, requires_grad=True)
    w = ember.randn(32, 32, 3, 3, requires_grad=True)

    def step():
        y = EF.conv2d(x, w, padding=1)
        y.backward(ember.ones_like(y))

    step()
    assert _peak(step) < 24 << 20
    _with_cap(monkeypatch, 1 << 40, 1.0)  # the whole batch's columns: the test bites
    with _kernels_loader.disabled():  # (the eager kernels' row chunks ignore the cap)
        assert _peak(step) > 27 << 20
    if _kernels_loader.active is not None:  # row chunks (one thread): 2 MB of columns at a time
        threads = _kernels_loader.active.get_num_threads()
        _kernels_loader.set_num_threads(1)
        try:
            assert _peak(step) < 12 << 20
        finally:
            _kernels_loader.set_num_threads(threads)
