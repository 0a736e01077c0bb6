"""The CNN's convolutions on the eager kernels (issue 29): the row-major layout's input gradient
(the gradient's rows @ the weight, summed back by ``_kernels_loader.col2im_rows``) and its weight
gradient (gr^T @ rows), whole-batch and in batch tiles (which keep the row-major layout); the
per-image layout's columns from the im2col kernel (forward and weight gradient). Kernels on and
off give the same bits; against PyTorch within float rounding; the same at 1 and 2 threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember.ops.nn import _kernels as kern
from ember.ops.nn import convolution as conv
from helpers import HAVE_TORCH, count_calls, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")

# (N, C, H, W, O, kernel, stride, padding, dilation): each takes the row-major layout
ROWS = [
    (64, 16, 12, 12, 32, 5, 1, 0, 1),  # the CNN's conv2 (batch tiles)
    (32, 4, 10, 10, 6, 3, 2, 1, 1),  # strided, padded
    (16, 4, 9, 9, 5, 3, 1, 1, 2),  # dilated
    (24, 3, 7, 11, 4, (2, 3), (1, 2), (1, 0), 1),  # rectangular
]
# (N, C, H, W, O, kernel, stride, padding, dilation): the per-image layout
IMAGE = [
    (64, 1, 28, 28, 16, 5, 1, 0, 1),  # the CNN's conv1
    (3, 2, 15, 15, 4, 3, 1, 2, 2),
    (2, 3, 20, 18, 5, (3, 2), (1, 2), (1, 0), 1),
]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _geom(shape) -> kern._Geom:
    N, C, H, W, O, k, s, p, d = shape
    p2 = _pair(p)
    return kern._Geom((H, W), _pair(k), _pair(s), ((p2[0], p2[0]), (p2[1], p2[1])), _pair(d),
                      n=N, cin=C)


def _arrays(shape, dtype, seed=0) -> tuple:
    N, C, H, W, O, k, s, p, d = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((O, C) + _pair(k)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    return x, w, b


def _grads(m, shape, x, w, b) -> tuple:
    s, p, d = shape[6:]
    xt = m.tensor(x, requires_grad=True)
    wt = m.tensor(w, requires_grad=True)
    bt = m.tensor(b, requires_grad=True)
    y = m.nn.functional.conv2d(xt, wt, bt, s, p, d)
    gy = np.random.default_rng(9).standard_normal(tuple(y.shape)).astype(x.dtype)
    y.backward(m.tensor(gy))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", ROWS)
def test_row_major_gradients_kernels_on_and_off(shape, dtype, monkeypatch) -> None:
    assert _geom(shape).rows
    x, w, b = _arrays(shape, dtype)
    c2r = count_calls(monkeypatch, L, "col2im_rows")
    rig = count_calls(monkeypatch, conv, "_rows_input_grad")
    with L.enabled():
        on = _grads(ember, shape, x, w, b)
    assert c2r["n"] >= 1 and rig["n"] >= 1  # (the row-major input gradient, batch tiles too)
    with L.disabled():
        off = _grads(ember, shape, x, w, b)
    for a, c in zip(on, off):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, c)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", ROWS + IMAGE)
def test_cnn_layouts_against_torch(shape, dtype) -> None:
    x, w, b = _arrays(shape, dtype, 1)
    got = _grads(ember, shape, x, w, b)
    want = _grads(torch, shape, x, w, b)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for a, c in zip(got, want):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol * max(1.0, float(np.abs(c).max())))


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", IMAGE)
def test_per_image_columns_from_the_kernel(shape, dtype, monkeypatch) -> None:
    assert _geom(shape).image
    monkeypatch.setattr(kern, "_DIRECT_MAX_K", 0)  # (the direct kernel has no columns)
    x, w, b = _arrays(shape, dtype, 2)
    i2c = count_calls(monkeypatch, L, "im2col")
    with L.enabled():
        on = _grads(ember, shape, x, w, b)
    assert i2c["n"] >= 2  # forward and weight gradient
    with L.disabled():
        off = _grads(ember, shape, x, w, b)
    for a, c in zip(on, off):
        np.testing.assert_array_equal(a, c)


@needs_kernels
def test_col2im_rows_is_the_numpy_sum_at_any_thread_count() -> None:
    shape = (32, 4, 10, 10, 6, 3, 2, 1, 1)
    g = _geom(shape)
    N, C = 32, 4
    rows = np.random.default_rng(3).standard_normal(
        (N * g.OH * g.OW, g.kh * g.kw * C)).astype(np.float32)
    with L.disabled():
        want = kern._rows_col2im(rows, g, N, C)
    before = L.active.get_num_threads()
    try:
        for t in (1, 2):
            L.set_num_threads(t)
            np.testing.assert_array_equal(kern._rows_col2im(rows, g, N, C), want)
    finally:
        L.set_num_threads(before)


@needs_kernels
def test_col2im_rows_refuses_bad_arguments() -> None:
    rows = np.zeros((2 * 3 * 3, 2 * 2 * 1), np.float32)
    x = np.zeros((2, 1, 4, 4), np.float32)
    geom = (2, 1, 4, 4, 2, 2, 1, 1, 0, 0, 1, 1, 3, 3)
    L.active.col2im_rows(rows, x, geom)
    with pytest.raises(ValueError):
        L.active.col2im_rows(rows[:-1], x, geom)
    with pytest.raises(ValueError):
        L.active.col2im_rows(rows, x, geom[:12] + (0, 3))
    with pytest.raises(TypeError):
        L.active.col2im_rows(rows, x.astype(np.float64), geom)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", ROWS)
def test_im2row_is_the_numpy_copy(shape, dtype, monkeypatch) -> None:
    g = _geom(shape)
    x = _arrays(shape, dtype, 4)[0]
    with L.disabled():
        want = kern._rows(x, g)
    calls = count_calls(monkeypatch, L, "im2row")
    got = kern._rows(x, g)
    assert calls["n"] == 1 and got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    before = L.active.get_num_threads()
    try:
        L.set_num_threads(2)
        np.testing.assert_array_equal(kern._rows(x, g), want)
    finally:
        L.set_num_threads(before)
    with pytest.raises(ValueError):  # rows of the wrong size
        L.active.im2row(x, np.empty(want.size - 1, dtype), (shape[0], shape[1]) + tuple(
            getattr(g, a) for a in ("H", "W", "kh", "kw", "sh", "sw", "pt", "pl", "dh", "dw",
                                    "OH", "OW")))
