"""The channel-norm eager kernels (issue 29, third slice): batch_norm's training and evaluation
forward and backward and group_norm's, against float64 ground truth, against the NumPy formulas
they replace (the kernels off in the same process: ``_kernels_loader.disabled()``) and against
PyTorch, forward and backward; the result does not depend on the thread count; the formula
still runs for what the kernels refuse (strided inputs, float16, create_graph).

Tolerances: the kernels' statistics are float64 sums rounded once (mean, var and rstd within
0.52 float32 ulp (one rounding of a float64 sum) of the float64 ground truth of their own definitions); the outputs are the
formula's elementwise operations in its order from those statistics, so they differ from the
formula (whose float32 sums round along the way) within a few float32 ulps of the result's
scale: 4e-6 relative to the largest |value| here. batch_norm's evaluation forward and its
grad_x are the formula's operations exactly (bit for bit).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")

SHAPES = [(8, 16, 5, 7), (4, 6), (3, 5, 40), (2, 3, 1, 1), (40, 37)]  # (hw == 1: by columns)
GN_SHAPES = [((3, 12, 9), 4), ((2, 8, 4, 4), 8), ((5, 24), 3), ((2, 32, 17), 1)]


def _run(m, x: np.ndarray, w, b, g: np.ndarray, kind: str, groups: int = 1):
    """(y, grad_x, grad_w, grad_b, running_mean, running_var) of ``kind`` ("train", "eval",
    "group") on module ``m``, with w/b None for the affine-free form."""
    C = x.shape[1]
    r = np.random.default_rng(1)
    rm = m.tensor(r.standard_normal(C).astype(x.dtype))
    rv = m.tensor(r.uniform(0.5, 2, C).astype(x.dtype))
    xt = m.tensor(x, requires_grad=True)
    wt = None if w is None else m.tensor(w, requires_grad=True)
    bt = None if b is None else m.tensor(b, requires_grad=True)
    if kind == "group":
        y = F.group_norm(xt, groups, wt, bt) if m is ember else m.nn.functional.group_norm(
            xt, groups, wt, bt)
    else:
        fn = F.batch_norm if m is ember else m.nn.functional.batch_norm
        y = fn(xt, rm, rv, wt, bt, training=kind == "train")
    y.backward(m.tensor(g))
    grads = [None if t is None or t.grad is None else t.grad.numpy() for t in (xt, wt, bt)]
    return [y.detach().numpy(), *grads, rm.numpy(), rv.numpy()]


def _case(shape, dtype, affine: bool, seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    w = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    b = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    g = rng.standard_normal(shape).astype(dtype)
    return x, w, b, g


def _close(a, b, dtype) -> None:
    assert a.dtype == b.dtype == dtype and a.shape == b.shape
    rtol = 4e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * max(1.0, float(np.abs(b).max())))


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("kind", ["train", "eval"])
@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_kernel_matches_the_formula_and_torch(shape, kind, affine, dtype) -> None:
    x, w, b, g = _case(shape, dtype, affine, 7)
    with L.enabled():
        on = _run(ember, x, w, b, g, kind)
    with L.disabled():
        off = _run(ember, x, w, b, g, kind)
    for a, f in zip(on, off):
        if a is None:
            assert f is None
            continue
        _close(a, f, dtype)
    if kind == "eval":  # x * scale + shift and grad * scale: the formula's operations, exactly
        np.testing.assert_array_equal(on[0], off[0])
        np.testing.assert_array_equal(on[1], off[1])
    if HAVE_TORCH:
        for a, t in zip(on, _run(torch, x, w, b, g, kind)):
            if a is not None:
                _close(a, t, dtype)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,groups", GN_SHAPES)
def test_group_norm_kernel_matches_the_formula_and_torch(shape, groups, affine, dtype) -> None:
    x, w, b, g = _case(shape, dtype, affine, 8)
    with L.enabled():
        on = _run(ember, x, w, b, g, "group", groups)
    with L.disabled():
        off = _run(ember, x, w, b, g, "group", groups)
    for a, f in zip(on, off):
        if a is None:
            assert f is None
            continue
        _close(a, f, dtype)
    if HAVE_TORCH:
        for a, t in zip(on, _run(torch, x, w, b, g, "group", groups)):
            if a is not None:
                _close(a, t, dtype)


def _ulps32(got: np.ndarray, exact: np.ndarray) -> float:
    """max |got - exact| in float32 ulps of exact (normal range)."""
    return float(np.max(np.abs(got.astype(np.float64) - exact)
                        / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)))


@needs_kernels
def test_channel_statistics_against_float64() -> None:
    """mean, biased var and rstd: float64 sums rounded once (within 0.52 ulp of the float64
    ground truth of their definitions: var of x - mean computed in float32, as the formula's
    x - mu); the kernels' arrays directly."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((16, 24, 13, 11)) * 3 + 5).astype(np.float32)
    y, mean, var, rstd = L.batch_norm(x, None, None, 1e-5)
    x64 = x.astype(np.float64)
    m64 = x64.mean(axis=(0, 2, 3))
    assert _ulps32(mean, m64) <= 0.52
    d = (x - mean[:, None, None]).astype(np.float64)  # (x - mean in float32: the formula's)
    v64 = (d * d).mean(axis=(0, 2, 3))
    assert _ulps32(var, v64) <= 0.52
    assert _ulps32(rstd, 1 / np.sqrt(v64 + 1e-5)) <= 0.52
    yg, gmean, grstd = L.group_norm(x, None, None, 6, 1e-5)
    x3 = x64.reshape(16, 6, -1)
    gm64 = x3.mean(axis=2, keepdims=True)
    assert gmean.shape == grstd.shape == (16, 6, 1)
    assert _ulps32(gmean, gm64) <= 0.52
    d3 = (x.reshape(16, 6, -1) - gmean).astype(np.float64)
    assert _ulps32(grstd, 1 / np.sqrt((d3 * d3).mean(axis=2, keepdims=True) + 1e-5)) <= 0.52
    # y: (x - mean) * rstd in float32 from the float32 statistics, the formula's order
    np.testing.assert_array_equal(y, (x - mean[:, None, None]) * rstd[:, None, None])
    np.testing.assert_array_equal(yg, ((x.reshape(16, 6, -1) - gmean) * grstd).reshape(x.shape))


@needs_kernels
def test_channel_norm_kernels_do_not_depend_on_the_thread_count() -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((8, 32, 30, 30)).astype(np.float32)
    w, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    saved = L.active.get_num_threads()
    outs = []
    try:
        for n in (1, 2, 3):
            L.set_num_threads(n)
            y, mean, var, rstd = L.batch_norm(x, w, b, 1e-5)
            bwd = L.batch_norm_backward(x, w, mean, rstd, g, (True, True, True))
            yg, gm, gr = L.group_norm(x, w, b, 8, 1e-5)
            gbwd = L.group_norm_backward(x, w, gm, gr, g, 8, (True, True, True))
            x1, g1 = x.reshape(-1, 32 * 30)[:, :960].copy(), g.reshape(-1, 960)  # hw == 1
            y1, m1, v1, r1 = L.batch_norm(x1, None, None, 1e-5)
            bwd1 = L.batch_norm_backward(x1, None, m1, r1, g1, (True, False, True))
            outs.append((y, mean, var, rstd, *bwd, yg, gm, gr, *gbwd,
                         L.channel_affine(x, w, b), y1, m1, v1, r1, bwd1[0], bwd1[2]))
    finally:
        L.set_num_threads(saved)
    for o in outs[1:]:
        for a, ref in zip(o, outs[0]):
            np.testing.assert_array_equal(a, ref)


@needs_kernels
def test_channel_norm_kernels_refuse_what_they_do_not_take() -> None:
    x = np.ones((4, 3, 5), np.float32)
    assert L.batch_norm(x.transpose(1, 0, 2), None, None, 1e-5) is None  # strided
    assert L.batch_norm(x.astype(np.float16), None, None, 1e-5) is None
    assert L.batch_norm(x, np.ones(3), None, 1e-5) is None  # weight of another dtype
    assert L.batch_norm(x, np.ones(4, np.float32), None, 1e-5) is None  # not C elements
    assert L.batch_norm(np.ones(3, np.float32), None, None, 1e-5) is None  # 1-d
    assert L.group_norm(x, None, None, 2, 1e-5) is None  # 3 channels in 2 groups
    assert L.group_norm(x[:, :, 0].copy(), None, None, 3, 1e-5) is None  # (N, C): the formula's
    assert L.channel_affine(x, None, None) is None
    with L.disabled():
        assert L.batch_norm(x, None, None, 1e-5) is None


@needs_kernels
@pytest.mark.parametrize("kind", ["train", "eval", "group"])
def test_the_ops_take_the_kernels(kind, monkeypatch) -> None:
    """the ops call the kernels for float32 (not for a channels-last view or under
    create_graph), and double backward still holds (gradgradcheck, float64)"""
    calls = []
    names = {"train": ("batch_norm", "batch_norm_backward"),
             "eval": ("channel_affine", "batch_norm_backward"),
             "group": ("group_norm", "group_norm_backward")}[kind]
    for fn in names:
        real = getattr(L, fn)
        def taken(*a, real=real, fn=fn):
            res = real(*a)
            if res is not None:
                calls.append(fn)
            return res
        monkeypatch.setattr(L, fn, taken)
    x, w, b, g = _case((4, 6, 3, 3), np.float32, True, 11)
    _run(ember, x, w, b, g, "group" if kind == "group" else kind, 2)
    assert set(calls) == set(names), calls
    calls.clear()
    xs = ember.tensor(x.transpose(0, 2, 3, 1).copy(), requires_grad=True)
    xs_view = xs.permute(0, 3, 1, 2)  # channels last: strided
    if kind == "group":
        y = F.group_norm(xs_view, 2, ember.tensor(w), ember.tensor(b))
    else:
        y = F.batch_norm(xs_view, ember.zeros(6), ember.ones(6), ember.tensor(w),
                         ember.tensor(b), training=kind == "train")
    y.backward(ember.tensor(g))
    # (group_norm copies x, as PyTorch; eval's grad * scale reads the contiguous grad)
    assert not {"batch_norm", "batch_norm_backward", "group_norm_backward"} & set(calls)
    assert xs.grad.shape == (4, 3, 3, 6)
    rng = np.random.default_rng(12)
    x64 = ember.tensor(rng.standard_normal((3, 4, 2)), requires_grad=True)
    w64 = ember.tensor(rng.standard_normal(4), requires_grad=True)
    b64 = ember.tensor(rng.standard_normal(4), requires_grad=True)
    rm, rv = ember.tensor(rng.standard_normal(4)), ember.tensor(rng.uniform(0.5, 2, 4))

    def fn(a, wt, bt):
        if kind == "group":
            return F.group_norm(a, 2, wt, bt)
        return F.batch_norm(a, rm, rv, wt, bt, training=kind == "train")
    assert ember.autograd.gradcheck(fn, (x64, w64, b64))
    assert ember.autograd.gradgradcheck(fn, (x64, w64, b64))


@needs_kernels
@needs_torch
def test_batch_norm_eval_node_and_running_stats_as_torch() -> None:
    """evaluation mode is one node, PyTorch's name; the running statistics are left alone and
    get no gradient; training updates them from the kernel's mean and unbiased var"""
    x, w, b, g = _case((6, 5, 4), np.float32, True, 13)
    outs = []
    for m in (ember, torch):
        bn = m.nn.BatchNorm1d(5)
        with m.no_grad():
            bn.weight.copy_(m.tensor(w))
            bn.bias.copy_(m.tensor(b))
        bn(m.tensor(x))
        bn(m.tensor(x * 2))
        bn.eval()
        xt = m.tensor(x, requires_grad=True)
        y = bn(xt)
        y.backward(m.tensor(g))
        outs.append((type(y.grad_fn).__name__ if m is torch else y.grad_fn.name(),
                     bn.running_mean.numpy(), bn.running_var.numpy(), xt.grad.numpy(),
                     bn.weight.grad.numpy(), bn.running_mean.grad))
    assert outs[0][0] == outs[1][0] == "NativeBatchNormBackward0"
    for a, t in zip(outs[0][1:5], outs[1][1:5]):
        _close(a, t, np.float32)
    assert outs[0][5] is None


def _lanes_total(s: np.ndarray, hw: int) -> np.ndarray:
    """The kernels' lanes_total per channel of (C, hw) float64 lane sums, zero lanes past hw:
    pairwise halving of 16 lanes."""
    a = np.zeros((s.shape[0], 16))
    a[:, :hw] = s
    for w in (8, 4, 2, 1):
        a[:, :w] += a[:, w:2 * w]
    return a[:, 0]


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(32, 256, 2, 2), (3, 17, 4, 4), (5, 3, 1, 16), (2, 40, 3),
                                   (7, 1, 2, 3), (40, 37), (6, 5, 1, 1), (1, 9, 4)])
@pytest.mark.parametrize("threads", [1, 3])
def test_batch_norm_short_blocks_bit_for_bit(shape, dtype, threads) -> None:
    """Channel blocks of 1 to 16 elements (BatchNorm1d, a ResNet's 4 x 4 and 2 x 2 maps) are
    summed by columns of the (N, C hw) matrix, each column's rows in order: lane k of a channel's
    sums is column k, then the lanes' pairwise total. The statistics, y and both backward outputs
    equal that definition in NumPy, bit for bit, at any thread count."""
    T = dtype
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(T)
    g = rng.standard_normal(shape).astype(T)
    w, b = rng.standard_normal(shape[1]).astype(T), rng.standard_normal(shape[1]).astype(T)
    N, C = shape[:2]
    hw = x.size // (N * C)
    cnt, eps = float(N * hw), 1e-5
    xs, gs = x.reshape(N, C, hw), g.reshape(N, C, hw)
    acc = np.zeros((C, hw))
    for n in range(N):
        acc += xs[n].astype(np.float64)
    mu = (_lanes_total(acc, hw) / cnt).astype(T)
    acc = np.zeros((C, hw))
    for n in range(N):
        d = (xs[n] - mu[:, None]).astype(np.float64)
        acc += d * d
    vb = _lanes_total(acc, hw) / cnt
    rs = (1.0 / np.sqrt(vb + eps)).astype(T)
    xh = (xs - mu[:, None]) * rs[:, None]
    y = xh * w[:, None] + b[:, None]
    sg, sgx = np.zeros((C, hw)), np.zeros((C, hw))
    for n in range(N):
        sg += gs[n].astype(np.float64)
        sgx += gs[n].astype(np.float64) * xh[n].astype(np.float64)
    sg, sgx = _lanes_total(sg, hw), _lanes_total(sgx, hw)
    wd = w.astype(np.float64)
    mg, mgx = (sg * wd / cnt).astype(T), (sgx * wd / cnt).astype(T)
    gx = (gs * w[:, None] - (xh * mgx[:, None] + mg[:, None])) * rs[:, None]
    saved = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        got = L.batch_norm(x, w, b, eps)
        back = L.batch_norm_backward(x, w, got[1], got[3], g, (True, True, True))
    finally:
        ember.set_num_threads(saved)
    for a, e in zip((got[0], got[1], got[2], got[3]), (y.reshape(shape), mu, vb.astype(T), rs)):
        assert a.dtype == T
        np.testing.assert_array_equal(a, e)
    for a, e in zip(back, (gx.reshape(shape), sgx.astype(T), sg.astype(T))):
        assert a.dtype == T
        np.testing.assert_array_equal(a, e)
