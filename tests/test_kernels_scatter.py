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
    # other layouts are read as a C-ordered copy; one row repeated (a sum's gradient) is taken
    # for every index without a copy
    half = np.zeros((100, 150), np.float32)
    np.add.at(half, idx, src[:, ::2])
    np.testing.assert_array_equal(L.scatter_rows(100, idx, src[:, ::2]), half)
    rep = np.broadcast_to(src[7], src.shape)
    same = np.zeros((100, 300), np.float32)
    np.add.at(same, idx, np.ascontiguousarray(rep))
    np.testing.assert_array_equal(L.scatter_rows(100, idx, rep), same)
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


# -- gather and scatter_add along a dim (gather_dim, scatter_add_dim) --------------------------

_GS_SHAPES = [((40, 30), 0), ((40, 30), 1), ((5, 6, 70), 2), ((5, 6, 70), 1), ((5, 6, 70), 0),
              ((300,), 0)]


@needs_kernels
@pytest.mark.parametrize("shape,dim", _GS_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
def test_gather_kernel_equals_the_numpy_path(shape, dim, dtype) -> None:
    """gather through the eager kernel: the NumPy path's values (take_along_axis) and its
    gradient, for strided and flipped inputs and an index smaller than the input off dim."""
    rng = np.random.default_rng(len(shape) * 7 + dim)
    base = rng.standard_normal(shape) * 10
    x = (base > 0) if dtype == "bool" else base.astype(dtype)
    ishape = tuple(max(1, s - (d != dim) * (s // 3)) for d, s in enumerate(shape))
    ishape = tuple(s * 2 if d == dim else s for d, s in enumerate(ishape))
    idx = rng.integers(0, shape[dim], ishape)
    grad = dtype.startswith("float") and dtype != "float16"
    for strided in (False, True):  # (strided: x's values as a transposed view)
        def run(strided=strided):
            arr = np.ascontiguousarray(np.swapaxes(x, 0, -1)) if strided else x
            leaf = ember.tensor(arr, requires_grad=grad)
            t = leaf.transpose(0, -1) if strided else leaf
            out = ember.gather(t, dim, ember.tensor(idx))
            if grad:
                out.backward(ember.ones_like(out))
            return out.detach().numpy(), (leaf.grad.numpy() if grad else None)

        fast = run()
        with L.disabled():
            slow = run()
        assert fast[0].dtype == slow[0].dtype
        np.testing.assert_array_equal(fast[0], slow[0])
        if grad:
            np.testing.assert_array_equal(fast[1], slow[1])
    assert L.gather_dim(np.swapaxes(np.swapaxes(x, 0, -1).copy(), 0, -1), idx, dim) is not None


@needs_kernels
@pytest.mark.parametrize("shape,dim", _GS_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_kernel_adds_in_numpys_order(shape, dim, dtype) -> None:
    """scatter_add through the eager kernel: bit for bit the NumPy path's add.at (many values
    onto few positions, where the order of the additions shows in the bits), onto a base,
    against PyTorch too."""
    rng = np.random.default_rng(11 + dim)
    ishape = tuple(s * 3 if d == dim else s for d, s in enumerate(shape))
    idx = rng.integers(0, max(1, shape[dim] // 4), ishape)
    src = (rng.standard_normal(ishape) * 1e3).astype(dtype)
    base = rng.standard_normal(shape).astype(dtype)

    def run(mod):
        out = mod.tensor(base).scatter_add(dim, mod.tensor(idx), mod.tensor(src))
        return out.numpy()

    fast = run(ember)
    with L.disabled():
        slow = run(ember)
    assert fast.dtype == dtype
    np.testing.assert_array_equal(fast, slow)
    if HAVE_TORCH:
        np.testing.assert_array_equal(fast, run(torch))
    # a strided source (a transposed view) takes the same path
    srcT = np.ascontiguousarray(np.swapaxes(src, 0, -1)).swapaxes(0, -1)
    out = base.copy()
    assert L.scatter_add_dim(out, idx, srcT, dim)
    np.testing.assert_array_equal(out, slow)


@needs_kernels
def test_gather_and_scatter_add_kernels_leave_bad_indices_to_numpy() -> None:
    x = np.arange(200, dtype=np.float32).reshape(10, 20)
    idx = np.zeros((10, 20), np.int64)
    idx[3, 4] = 20
    assert L.gather_dim(x, idx, 1) is None  # (the NumPy path raises its error)
    assert not L.scatter_add_dim(np.zeros((10, 20), np.float32), idx, x, 1)
    with pytest.raises((IndexError, RuntimeError)):
        ember.tensor(x).gather(1, ember.tensor(idx))
    idx[3, 4] = -1
    assert L.gather_dim(x, idx, 1) is None
    assert not L.scatter_add_dim(np.zeros((10, 20), np.float32), idx.astype(np.int32), x, 1)
