"""Max pooling as eager kernels (``_kernels_loader.max_pool`` / ``max_pool_backward``; issue 29):
the maxima and indices PyTorch's rule gives (ties keep the first, NaN reports the last NaN, a
window of only -inf or padding its first element), bit for bit the NumPy path's (values up to a
NaN's payload), the input gradient bit for bit the NumPy path's scatter (assignment where windows
do not overlap, NumPy's float64 bincount where they do); against PyTorch (values, indices,
gradients; padding, dilation, ceil_mode, channels_last, float64, 1-D); the same at 1 and 2 threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember.ops.nn import pooling as P
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")

# (shape, kernel_size, stride, padding, dilation, ceil_mode)
CASES = [
    ((4, 5, 24, 24), 2, 2, 0, 1, False),  # the CNN's pool (windows apart)
    ((3, 4, 9, 8), 3, 2, 1, 1, False),  # overlapping, padded (ResNet's stem pool)
    ((2, 3, 11, 13), 3, 2, 1, 2, True),  # dilated, ceil_mode
    ((2, 3, 9, 7), (3, 2), (2, 1), (1, 1), (1, 2), True),  # rectangular
    ((2, 2, 7, 9), 5, 1, 2, 1, False),  # 25 taps, stride 1
    ((1, 2, 5, 6), 2, 3, 0, 1, True),  # stride > kernel, a window hanging off the edge
]


def _geom(x: np.ndarray, k, s, p, d, ceil) -> tuple:
    _, _, g = P._pool_args("max_pool2d", 2, ember.tensor(x), k, s, p, d, ceil)
    return g


def _special(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x[0, 0, 0, :3] = np.nan  # NaNs, two in a window
    x[0, 1] = 1.0  # ties everywhere
    x[-1, -1, :4, :4] = -np.inf  # windows of only -inf
    return x


def _search(x: np.ndarray, g) -> tuple:
    return P._max_pool_search(x, g, 2, True)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_max_pool_kernel_is_the_numpy_path(case, dtype) -> None:
    shape, k, s, p, d, ceil = case
    x = _special(np.random.default_rng(0).standard_normal(shape).astype(dtype))
    g = _geom(x, k, s, p, d, ceil)
    with L.disabled():
        y0, i0 = _search(x, g)
        y0n, i0n = P._max_pool_search(x, g, 2, False)
    geom = (g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
    y1, i1 = L.max_pool(x, geom, True)
    assert y1.dtype == dtype and i1.dtype == np.int64
    np.testing.assert_array_equal(y1, y0)  # (NaN equals NaN here)
    np.testing.assert_array_equal(i1, i0)
    y2, i2 = L.max_pool(x, geom, False)
    assert i2 is None and i0n is None
    np.testing.assert_array_equal(y2, y0n)
    # the gradient: the kernel's scatter against the NumPy path's (assignment or bincount)
    gy = np.random.default_rng(1).standard_normal(y0.shape).astype(dtype)
    rows, n = x.shape[0] * x.shape[1], x.shape[2] * x.shape[3]
    unique = P._windows_apart(g)
    got = L.max_pool_backward(gy, i0, (rows, n), unique)
    with L.disabled():
        want = P.IndexScatter.apply(ember.tensor(gy), i0, x.shape, 2, unique).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.reshape(x.shape), want)
    if not unique:  # the overlapping scatter sums in float64 and rounds once, as bincount
        flat = (i0.reshape(rows, -1) + (np.arange(rows) * n)[:, None]).ravel()
        ref = np.bincount(flat, weights=gy.ravel(), minlength=rows * n).astype(dtype)
        np.testing.assert_array_equal(got.ravel(), ref)


@needs_kernels
@pytest.mark.parametrize("threads", [1, 2])
def test_max_pool_kernel_same_at_any_thread_count(threads) -> None:
    x = np.random.default_rng(2).standard_normal((16, 32, 24, 24)).astype(np.float32)
    g = _geom(x, 3, 2, 1, 1, False)
    geom = (g.H, g.W, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.OH, g.OW)
    before = L.active.get_num_threads()
    try:
        L.set_num_threads(1)
        y1, i1 = L.max_pool(x, geom, True)
        gy = np.random.default_rng(3).standard_normal(y1.shape).astype(np.float32)
        g1 = L.max_pool_backward(gy, i1, (16 * 32, 24 * 24), False)
        L.set_num_threads(threads)
        y2, i2 = L.max_pool(x, geom, True)
        g2 = L.max_pool_backward(gy, i2, (16 * 32, 24 * 24), False)
    finally:
        L.set_num_threads(before)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(g1, g2)


@needs_kernels
@pytest.mark.parametrize("where", [0, 1, 4097, 12_345, -1])
@pytest.mark.parametrize("value", [16, -1, 2**63 - 1, -(2**63)])
def test_max_pool_backward_finds_one_bad_index_anywhere(where: int, value: int) -> None:
    # the range check is one vectorised unsigned comparison over every index: a single bad one,
    # at a vector's start, inside, or in the loop's tail, in either direction, is caught
    gy = np.ones((3089, 4), np.float32)
    idx = np.tile(np.arange(0, 16, 4, dtype=np.int64), (3089, 1))
    gx = np.zeros((3089, 16), np.float32)
    L.active.max_pool_backward(gy, idx, gx, True, 16)  # every index fine: no error
    assert gx.sum() == gy.size
    idx.reshape(-1)[where] = value
    with pytest.raises(ValueError, match="out of range"):
        L.active.max_pool_backward(gy, idx, gx, True, 16)


@needs_kernels
def test_max_pool_kernels_refuse_bad_arguments() -> None:
    x = np.zeros((1, 1, 4, 4), np.float32)
    y = np.zeros((1, 1, 2, 2), np.float32)
    idx = np.zeros((1, 1, 2, 2), np.int64)
    with pytest.raises(ValueError):
        L.active.max_pool(x, y, idx, (4, 4, 2, 2, 2, 2, 0, 0, 1, 1, 3, 2))  # y too small
    with pytest.raises(TypeError):
        L.active.max_pool(x, y, idx.astype(np.int32), (4, 4, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2))
    with pytest.raises(ValueError):  # an index outside the plane
        L.active.max_pool_backward(y, idx + 16, x, True, 16)
    assert L.max_pool(x.astype(np.float16), (4, 4, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2), True) is None
    strided = np.zeros((1, 2, 4, 4), np.float32).transpose(0, 1, 3, 2)
    assert L.max_pool(strided, (4, 4, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2),
                      True) is None  # (not C-contiguous: the NumPy path)


@needs_torch
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_max_pool_against_torch(case, dtype, channels_last) -> None:
    shape, k, s, p, d, ceil = case
    x = _special(np.random.default_rng(4).standard_normal(shape).astype(dtype))
    kw = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    et, tt = ember.tensor(x), torch.tensor(x)
    if channels_last:
        et = et.contiguous(memory_format=ember.channels_last)
        tt = tt.contiguous(memory_format=torch.channels_last)
    et.requires_grad_(True)
    tt.requires_grad_(True)
    a, ai = ember.nn.functional.max_pool2d(et, return_indices=True, **kw)
    b, bi = torch.nn.functional.max_pool2d(tt, return_indices=True, **kw)
    assert a.dtype == getattr(ember, np.dtype(dtype).name)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())
    gy = np.random.default_rng(5).standard_normal(tuple(a.shape)).astype(dtype)
    a.backward(ember.tensor(gy))
    b.backward(torch.tensor(gy))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(et.grad.numpy(), tt.grad.numpy(), rtol=tol, atol=tol)
    # without return_indices (MaxPool's own op) and 1-D
    e2 = ember.tensor(x, requires_grad=True)
    t2 = torch.tensor(x, requires_grad=True)
    ember.nn.functional.max_pool2d(e2, **kw).backward(ember.tensor(gy))
    torch.nn.functional.max_pool2d(t2, **kw).backward(torch.tensor(gy))
    np.testing.assert_allclose(e2.grad.numpy(), t2.grad.numpy(), rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1,
                                                            ceil_mode=True, dilation=2)])
def test_max_pool1d_kernel_against_torch(kw) -> None:
    x = np.random.default_rng(6).standard_normal((3, 4, 17)).astype(np.float32)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    a, ai = ember.nn.functional.max_pool1d(e, return_indices=True, **kw)
    b, bi = torch.nn.functional.max_pool1d(t, return_indices=True, **kw)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
