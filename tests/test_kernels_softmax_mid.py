"""The float32 softmax family over a middle dim (``_kernels.c``'s ``softmax_mid``): softmax,
log_softmax, their backward and cross_entropy's statistics over dim 1 of an (N, C, H, W) image
and the like, against the row kernels on the same data with the dim moved last (the same
per-element operations; the sums over C in another order, which the tests' data never shows
in the bits), against float64, at any thread count, and through the public functions."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, count_calls, torch

pytestmark = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")

SHAPES = [((8, 21, 16, 16), 1), ((3, 5, 7), 1), ((4, 70), 0), ((5, 6, 7, 300), 2),
          ((4, 3, 2), 0), ((2, 1000, 9), 1), ((2, 1, 5), 1)]


def _x(shape: tuple, seed: int = 0, scale: float = 4.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _rows(fn, x: np.ndarray, ax: int, *more: np.ndarray):
    """fn over rows: the arrays with ``ax`` moved last (C-ordered), the results moved back."""
    moved = [np.ascontiguousarray(np.moveaxis(a, ax, -1)) for a in (x, *more)]
    res = fn(*moved)
    if isinstance(res, tuple):
        return tuple(None if r is None else np.moveaxis(r, -1, ax) for r in res)
    return np.moveaxis(res, -1, ax)


@pytest.mark.parametrize("shape,ax", SHAPES)
def test_middle_dim_forward_equals_the_row_kernels(shape: tuple, ax: int) -> None:
    x = _x(shape)
    for log in (False, True):
        got = L.softmax(x, log, ax)
        assert got.tobytes() == _rows(lambda a, log=log: L.softmax(a, log), x, ax).tobytes(), log
    p, lse = L.softmax_lse(x, True, ax)
    rp, rlse = _rows(lambda a: L.softmax_lse(a, True), x, ax)
    assert lse.shape == shape[:ax] + (1,) + shape[ax + 1:]
    assert p.tobytes() == rp.tobytes() and lse.tobytes() == np.ascontiguousarray(rlse).tobytes()
    assert L.softmax_lse(x, False, ax)[0] is None
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(ax, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(ax, keepdims=True), rtol=3e-6, atol=1e-37)
    np.testing.assert_allclose(lse, np.log(e.sum(ax, keepdims=True)) + x64.max(ax, keepdims=True),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,ax", SHAPES)
def test_middle_dim_backward_equals_the_row_kernels(shape: tuple, ax: int) -> None:
    x, g = _x(shape), _x(shape, 1, 1.0)
    for log in (False, True):
        y = L.softmax(x, log, ax)
        got = L.softmax_backward(y, g, log, ax)
        want = _rows(lambda a, b, log=log: L.softmax_backward(a, b, log), y, ax, g)
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), log
        y64, g64 = y.astype(np.float64), g.astype(np.float64)
        exact = (g64 - np.exp(y64) * g64.sum(ax, keepdims=True) if log
                 else y64 * (g64 - (g64 * y64).sum(ax, keepdims=True)))
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6)


def test_middle_dim_non_finite_values() -> None:
    """A column of -inf gives NaN (softmax) and -inf (logsumexp), an inf NaN/inf as the rows do,
    a NaN its column's NaN; cross_entropy's statistics take the max as 0 where it is not finite."""
    x = _x((2, 4, 70))
    x[0, :, 1] = -np.inf
    x[1, 2, 3] = np.nan
    x[0, 1, 2] = np.inf
    x[1, :, 5] = np.inf
    for log in (False, True):
        np.testing.assert_array_equal(L.softmax(x, log, 1), _rows(lambda a, log=log: L.softmax(a, log), x, 1))
    p, lse = L.softmax_lse(x, True, 1)
    rp, rlse = _rows(lambda a: L.softmax_lse(a, True), x, 1)
    np.testing.assert_array_equal(p, rp)
    np.testing.assert_array_equal(lse, rlse)
    assert lse[0, 0, 1] == -np.inf and np.isnan(lse[1, 0, 3]) and lse[0, 0, 2] == np.inf


def test_middle_dim_results_do_not_depend_on_the_thread_count() -> None:
    x, g = _x((16, 21, 64, 64), 3, 1.0), _x((16, 21, 64, 64), 4, 1.0)
    saved = L.active.get_num_threads()
    outs = []
    try:
        for n in (1, 2, 3):
            L.set_num_threads(n)
            y, ly = L.softmax(x, False, 1), L.softmax(x, True, 1)
            outs.append([y, ly, L.softmax_backward(y, g, False, 1),
                         L.softmax_backward(ly, g, True, 1), *L.softmax_lse(x, True, 1)])
    finally:
        L.set_num_threads(saved)
    for o in outs[1:]:
        for a, b in zip(o, outs[0]):
            assert a.tobytes() == b.tobytes()


def test_public_ops_over_dim_1_take_the_kernel(monkeypatch) -> None:
    """F.softmax / F.log_softmax over dim 1 of an image and cross_entropy on (N, C, H, W)
    logits run the middle-dim kernel, forward and backward, and agree with the NumPy formulas
    (kernels off) and PyTorch."""
    calls = count_calls(monkeypatch, L.active, "softmax_mid")
    x0 = _x((4, 7, 9, 11), 5, 2.0)
    t0 = np.random.default_rng(6).integers(0, 7, (4, 9, 11))

    def run():
        out = []
        for f in (lambda x: F.softmax(x, 1), lambda x: F.log_softmax(x, 1),
                  lambda x: F.cross_entropy(x, ember.tensor(t0))):
            x = ember.tensor(x0, requires_grad=True)
            y = f(x)
            (y * ember.tensor(_x(tuple(y.shape), 7, 1.0))).sum().backward()
            out += [y.detach().numpy(), x.grad.numpy()]
        return out

    on = run()
    assert calls["n"] == 5  # softmax f+b, log_softmax f+b, cross_entropy's statistics
    with L.disabled():
        off = run()
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    if HAVE_TORCH:
        tx = torch.tensor(x0, requires_grad=True)
        torch.nn.functional.cross_entropy(tx, torch.tensor(t0)).backward()
        np.testing.assert_allclose(on[4], torch.nn.functional.cross_entropy(
            torch.tensor(x0), torch.tensor(t0)).numpy(), rtol=1e-6)
        tx2 = torch.tensor(x0)
        np.testing.assert_allclose(on[0], torch.softmax(tx2, 1).numpy(), rtol=2e-6, atol=1e-7)
