"""Embedding's backward scatter-add as an eager kernel (``_kernels_loader.scatter_rows``; issue
29, third slice): bit for bit the NumPy path's add.at (rows summed per index in index order),
with padding_idx and scale_grad_by_freq (grad * scale rounded first, as the formula), and
embedding_bag's sum/mean backward; against PyTorch; the same at any thread count.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _grads(m, idx: np.ndarray, w: np.ndarray, g: np.ndarray, **kw) -> np.ndarray:
    wt = m.tensor(w, requires_grad=True)
    y = m.nn.functional.embedding(m.tensor(idx), wt, **kw)
    y.backward(m.tensor(g))
    return wt.grad.numpy()


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, dict(padding_idx=3), dict(scale_grad_by_freq=True),
                                dict(padding_idx=0, scale_grad_by_freq=True)])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_embedding_backward_kernel_is_the_numpy_path_bit_for_bit(kw, dtype, itype) -> None:
    rng = np.random.default_rng(60)
    V, d = 37, 19
    idx = rng.integers(0, V, (13, 29)).astype(itype)
    idx[0, :5] = 3  # repeats, and the padding rows
    idx[1, :3] = 0
    w = rng.standard_normal((V, d)).astype(dtype)
    g = (rng.standard_normal((13, 29, d)) * 10.0 ** rng.integers(-3, 4, (13, 29, 1))).astype(dtype)
    with L.enabled():
        on = _grads(ember, idx, w, g, **kw)
    with L.disabled():
        off = _grads(ember, idx, w, g, **kw)
    assert on.dtype == dtype
    np.testing.assert_array_equal(on, off)
    if HAVE_TORCH:
        np.testing.assert_allclose(on, _grads(torch, idx.astype(np.int64), w, g, **kw),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)


@needs_kernels
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_backward_kernel(mode: str) -> None:
    rng = np.random.default_rng(61)
    w = rng.standard_normal((50, 12)).astype(np.float32)
    idx = rng.integers(0, 50, 200)
    offsets = np.sort(rng.choice(np.arange(1, 200), 30, replace=False))
    offsets = np.concatenate([[0], offsets])
    g = rng.standard_normal((31, 12)).astype(np.float32)

    def run(m):
        wt = m.tensor(w, requires_grad=True)
        y = m.nn.functional.embedding_bag(m.tensor(idx), wt, m.tensor(offsets), mode=mode)
        y.backward(m.tensor(g))
        return wt.grad.numpy()
    with L.enabled():
        on = run(ember)
    with L.disabled():
        off = run(ember)
    np.testing.assert_array_equal(on, off)
    if HAVE_TORCH:
        np.testing.assert_allclose(on, run(torch), rtol=1e-5, atol=1e-6)


@needs_kernels
def test_scatter_rows_threads_and_refusals(monkeypatch) -> None:
    rng = np.random.default_rng(62)
    idx = rng.integers(0, 100, 5000)
    src = rng.standard_normal((5000, 300)).astype(np.float32)
    saved = L.active.get_num_threads()
    outs = []
    try:
        for n in (1, 2, 3):
            L.set_num_threads(n)
            outs.append(L.scatter_rows(100, idx, src))
    finally:
        L.set_num_threads(saved)
    ref = np.zeros((100, 300), np.float32)
    np.add.at(ref, idx, src)
    for o in outs:
        np.testing.assert_array_equal(o, ref)
    assert L.scatter_rows(100, idx, src.astype(np.float16)) is None
    assert L.scatter_rows(100, idx, src[:, ::2]) is None  # strided
    assert L.scatter_rows(100, idx.astype(np.float64), src) is None
    with pytest.raises(ValueError, match="out of range"):  # the C side checks, never writes past
        L.scatter_rows(99, idx, src)
    with pytest.raises(ValueError, match="out of range"):
        L.scatter_rows(100, -idx - 1, src)
    calls = []
    real = L.scatter_rows
    monkeypatch.setattr(L, "scatter_rows", lambda *a, **k: calls.append(1) or real(*a, **k))
    _grads(ember, idx[:10], src[:100], src[:10])
    assert calls
