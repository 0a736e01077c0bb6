"""The float32 softmax family's kernels (ember/_kernels.c): softmax by the reciprocal of its
float64 row sum, the exp for x <= 0 (k_expf_neg: k_expf_fma's bits with one scaling), the row
max by integer keys, and softmax_lse's paths for long rows; against float64 ground truth, the
NumPy formulas, and themselves at 1 and 2 threads (the instruction-set variants:
tests/test_kernels_fma.py)."""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels import ulps

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from ember.ops.nn._common import _softmax_stats

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _x(dist: str, rows: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = {"normal": lambda: rng.standard_normal((rows, n)),
         "uniform": lambda: rng.random((rows, n)),
         "normal3": lambda: rng.standard_normal((rows, n)) * 3}[dist]()
    return x.astype(np.float32)


@needs_kernels
@pytest.mark.parametrize("n", [7, 16, 17, 100, 1000, 4096, 32768])
@pytest.mark.parametrize("dist", ["normal", "uniform", "normal3"])
def test_softmax_against_float64(n: int, dist: str) -> None:
    """exp within 1 ulp, the reciprocal of the float64 sum rounded once and the product: measured
    at worst 2.62 ulp over 4M-element sweeps (the division it replaced: 2.61)."""
    x = _x(dist, max(4, (1 << 18) // n), n, n)
    shifted = (x - x.max(-1, keepdims=True)).astype(np.float64)
    e = np.exp(shifted)
    s = e.sum(-1, keepdims=True)
    assert ulps(L.softmax(x), e / s) < 2.75
    p, lse = L.softmax_lse(x, True)
    assert p.tobytes() == L.softmax(x).tobytes()  # one computation, two entry points
    _, lse_only = L.softmax_lse(x, False)
    assert lse_only.tobytes() == lse.tobytes()
    # each exp within an ulp (so log(s) within about an ulp of log(s)'s size: as much absolute
    # error where log(s) + max cancels), their float64 sum, log(s) + max rounded once
    m = x.max(-1, keepdims=True)
    exact = np.log(s) + m
    tol = np.spacing(np.log(s).astype(np.float32)) + 0.5 * np.spacing(np.abs(exact).astype(np.float32))
    assert np.all(np.abs(lse - exact) <= tol)
    got = L.softmax(x, log=True)
    exact = shifted - np.log(s)
    assert np.all(np.abs(got - exact) <= 1.01 * np.spacing(np.abs(exact).astype(np.float32))
                  + np.spacing(np.log(s).astype(np.float32)))


@needs_kernels
def test_exp_of_log_probabilities_has_the_general_exps_bits() -> None:
    """log_softmax's backward takes exp(y) for y <= 0 by k_expf_neg; a row with a y > 0 takes
    k_expf_fma: over every 64th float32 in [-120, 0] both give the same bits."""
    lo = np.float32(-120).view(np.uint32)
    y = np.arange(0x80000000, lo, 64, dtype=np.uint32).view(np.float32)
    y = y[: y.size - y.size % 4096].reshape(-1, 4096)
    g = np.ones_like(y)
    g[:, 5] = 0.0  # the slot the other copy marks (its gradient adds +0.0 to the sum either way)
    marked = y.copy()
    marked[:, 5] = 1.0  # y > 0: the whole row by the general exp
    fast = L.softmax_backward(y, g, log=True)
    slow = L.softmax_backward(marked, g, log=True)
    fast[:, 5] = slow[:, 5] = 0
    assert fast.tobytes() == slow.tobytes()
    e = np.exp(y.astype(np.float64))
    e[:, 5] = 0
    exact = 1.0 - e * 4095.0
    exact[:, 5] = 0  # (zeroed in both above)
    # exp within an ulp (up to 2^-23 of e relative), times the sum, less from 1: each rounded once
    tol = 2 * np.spacing((e * 4095).astype(np.float32)) + np.spacing(
        np.abs(exact).astype(np.float32))
    assert np.all(np.abs(fast - exact) <= tol)


@needs_kernels
def test_non_finite_rows_as_the_formula() -> None:
    """Long rows (the lane path) with +inf, NaN of either sign, -inf only, and huge finite values:
    softmax, log_softmax and softmax_lse as the NumPy formulas (kernels off)."""
    inf, nan = np.inf, np.nan
    x = np.random.default_rng(5).standard_normal((8, 40)).astype(np.float32)
    x[0, 3] = inf
    x[1, 7] = nan
    x[2, 9] = -np.float32(nan)  # sign bit set: sorts below -inf by key, still reaches the sum
    x[3] = -inf
    x[4, :20] = -inf
    x[5, 11] = 3e38
    x[6, ::2] = -1e30
    x[7, 1] = -0.0
    with L.disabled(), np.errstate(all="ignore"):
        t = ember.tensor(x)
        ref = [ember.softmax(t, -1).numpy(), ember.log_softmax(t, -1).numpy(),
               *_softmax_stats(np, x, 1, True)]  # cross_entropy's: the max taken as 0 if not finite
    for got, r in zip([L.softmax(x), L.softmax(x, log=True), *L.softmax_lse(x, True)], ref):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(r))
        np.testing.assert_allclose(got, r, rtol=1e-6, atol=0)
    assert np.isnan(ref[0][:4]).all() and np.isfinite(ref[0][4:]).all()


@needs_kernels
@pytest.mark.parametrize("uniform", [False, True])
def test_ops_give_the_same_bits_at_1_and_2_threads(uniform: bool) -> None:
    """Rows split over threads whole: softmax, log_softmax and cross_entropy, forward and backward,
    on 1024 x 4096 logits, the same bits at 1 and 2 threads."""
    rng = np.random.default_rng(8)
    x = (rng.random((1024, 4096)) if uniform else rng.standard_normal((1024, 4096)) * 4)
    x = x.astype(np.float32)
    g = rng.standard_normal((1024, 4096)).astype(np.float32)
    target = ember.tensor(rng.integers(0, 4096, 1024))
    before = ember.get_num_threads()
    res = []
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            out = []
            for fn in (lambda t: ember.softmax(t, -1), lambda t: ember.log_softmax(t, -1)):
                t = ember.tensor(x, requires_grad=True)
                y = fn(t)
                y.backward(ember.tensor(g))
                out += [y.detach().numpy().tobytes(), t.grad.numpy().tobytes()]
            t = ember.tensor(x, requires_grad=True)
            loss = F.cross_entropy(t, target)
            loss.backward()
            out += [loss.detach().numpy().tobytes(), t.grad.numpy().tobytes()]
            res.append(out)
    finally:
        ember.set_num_threads(before)
    assert res[0] == res[1]


@needs_kernels
def test_the_ops_take_the_kernels() -> None:
    x = np.random.default_rng(6).standard_normal((64, 300)).astype(np.float32)
    g = np.random.default_rng(7).standard_normal((64, 300)).astype(np.float32)
    t = ember.tensor(x, requires_grad=True)
    y = ember.softmax(t, -1)
    y.backward(ember.tensor(g))
    assert y.detach().numpy().tobytes() == L.softmax(x).tobytes()
    assert t.grad.numpy().tobytes() == L.softmax_backward(L.softmax(x), g).tobytes()
    with L.disabled():  # the NumPy formula: the same values within its rounding
        t2 = ember.tensor(x, requires_grad=True)
        y2 = ember.softmax(t2, -1)
        y2.backward(ember.tensor(g))
    np.testing.assert_allclose(y2.detach().numpy(), y.detach().numpy(), rtol=4e-7, atol=1e-30)
    np.testing.assert_allclose(t2.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


@needs_kernels
@pytest.mark.parametrize("rows,classes", [(1, 1), (64, 2), (33, 10), (8, 1000), (300, 17)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_rows_kernel_equals_the_plain_path(rows, classes, dtype, reduction,
                                                         monkeypatch) -> None:
    """cross_entropy's common call in one kernel call each way (cross_entropy_rows and its
    backward) gives the plain NumPy-glue path's bits: loss, gradient, and the general path's
    results where a target is ignore_index; against PyTorch too where it is installed."""
    rng = np.random.default_rng(rows * classes)
    x = (rng.standard_normal((rows, classes)) * 3).astype(dtype)
    t = rng.integers(0, classes, rows)
    g = rng.standard_normal(rows).astype(dtype) if reduction == "none" else None

    def run(mod, target=t):
        xt = mod.tensor(x, requires_grad=True)
        loss = mod.nn.functional.cross_entropy(xt, mod.tensor(target), reduction=reduction)
        loss.backward(mod.tensor(g) if g is not None else None)
        return loss.detach().numpy(), xt.grad.numpy()

    calls = []
    for name in ("cross_entropy_rows", "cross_entropy_rows_backward"):
        real = getattr(L, name)
        monkeypatch.setattr(L, name, lambda *a, real=real, name=name: (
            calls.append(name), real(*a))[1])
    fast = run(ember)
    assert calls == ["cross_entropy_rows", "cross_entropy_rows_backward"]
    monkeypatch.setattr(L, "cross_entropy_rows", lambda *a: None)
    monkeypatch.setattr(L, "cross_entropy_rows_backward", lambda *a: None)
    slow = run(ember)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a, b)
    try:
        import torch
    except ImportError:
        return
    ref = run(torch)
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-12)
    if rows > 2:  # an ignored row: the kernel declines, the general path answers
        monkeypatch.undo()
        t2 = t.copy()
        t2[1] = -100
        got, want = run(ember, t2), run(torch, t2)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
