"""Convolution's im2col / col2im as eager kernels (``_kernels_loader.im2col`` / ``col2im``; issue
29, fourth slice): the columns bit for bit the NumPy path's strided copies (wide, plain and
per-image layouts, unfold), col2im's sums bit for bit its one add per tap (fold, the input
gradient); large convolutions in row chunks of one image (``convolution._chunk_*``): forward and
input gradient as the NumPy path's, weight gradient within rounding; against PyTorch; the same at
any thread count.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember.ops.nn import _conv_chunks as chunks
from ember.ops.nn import _kernels as kern
from ember.ops.nn import convolution as conv
from helpers import HAVE_TORCH, check_op, count_calls, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")

# (N, C, H, W, O, kernel, stride, padding, dilation, groups): wide (stride 1), plain (strided,
# dilated, rectangular), per-image (few taps), grouped; conv1d-like (H 1)
SHAPES = [
    (2, 3, 9, 11, 4, 3, 1, 1, 1, 1),
    (3, 4, 12, 12, 6, 3, 2, 1, 1, 2),
    (2, 5, 15, 13, 3, (3, 2), (2, 3), (2, 1), (1, 2), 1),
    (2, 2, 20, 20, 2, 5, 1, 2, 1, 1),
    (2, 6, 11, 10, 6, 3, 1, (0, 2), 2, 3),
    (2, 1, 30, 30, 4, 3, 1, 1, 1, 1),
    (3, 4, 1, 40, 5, (1, 5), (1, 2), (0, 3), 1, 1),
]

# (not per image: more taps per output)
CHUNK_SHAPES = [
    (2, 16, 17, 15, 8, 3, 1, 1, 1, 1),
    (2, 10, 12, 12, 6, 3, 2, 1, 1, 2),
    (2, 12, 15, 13, 6, (3, 2), (2, 3), (2, 1), (1, 2), 1),
    (2, 24, 11, 10, 12, 3, 1, (0, 2), 2, 3),
    (3, 16, 1, 40, 5, (1, 5), (1, 2), (0, 3), 1, 1),
]


def _conv_grads(m, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, gy_seed: int,
                *args) -> tuple:
    xt = m.tensor(x, requires_grad=True)
    wt = m.tensor(w, requires_grad=True)
    bt = None if b is None else m.tensor(b, requires_grad=True)
    y = m.nn.functional.conv2d(xt, wt, bt, *args)
    gy = np.random.default_rng(gy_seed).standard_normal(tuple(y.shape)).astype(x.dtype)
    y.backward(m.tensor(gy))
    out = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    return tuple(out + ([] if b is None else [bt.grad.numpy()]))


def _arrays(shape: tuple, dtype: type, seed: int) -> tuple:
    N, C, H, W, O, k, s, p, d, g = shape
    k2 = (k, k) if isinstance(k, int) else k
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((O, C // g) + k2).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    return x, w, b, (s, p, d, g)


@pytest.fixture
def one_thread():
    """The kernels (and so the row chunks) at one thread, restored after."""
    threads = L.active.get_num_threads()
    L.set_num_threads(1)
    yield
    L.set_num_threads(threads)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_conv_columns_kernels_are_the_numpy_path_bit_for_bit(shape, dtype, monkeypatch) -> None:
    """Small convolutions (no row chunks): the kernels' columns and col2im sums change nothing."""
    monkeypatch.setattr(kern, "_DIRECT_MAX_K", 0)  # (the direct kernel: test_direct_conv_*)
    x, w, b, args = _arrays(shape, dtype, 1)
    calls = {"im2col": 0, "col2im": 0}
    for name in calls:
        orig = getattr(L, name)

        def spy(*a, _orig=orig, _name=name):
            calls[_name] += 1
            return _orig(*a)

        monkeypatch.setattr(L, name, spy)
    with L.enabled():
        on = _conv_grads(ember, x, w, b, 2, *args)
    assert calls["col2im"] >= 1  # the input gradient went through the kernel
    with L.disabled():
        off = _conv_grads(ember, x, w, b, 2, *args)
    for a, c in zip(on, off):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, c)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geom", [(3, 1, 1, 1), ((2, 3), (1, 2), (1, 0), (2, 1)),
                                  (1, 1, 4, 5), ((1, 2), (1, 3), (2, 4), (3, 5))])
def test_unfold_fold_kernels_bit_for_bit(geom, dtype) -> None:
    k, d, p, s = geom
    x = np.random.default_rng(3).standard_normal((2, 3, 10, 9)).astype(dtype)
    F = ember.nn.functional
    res = []
    for ctx in (L.enabled(), L.disabled()):
        with ctx:
            cols = F.unfold(ember.tensor(x), k, d, p, s)
            res.append((cols.numpy(), F.fold(cols, (10, 9), k, d, p, s).numpy()))
    for a, c in zip(*res):
        assert a.dtype == dtype and a.flags.c_contiguous
        np.testing.assert_array_equal(a, c)


def _blas_columns_alike(dtype: np.dtype) -> bool:
    """Whether NumPy's BLAS gives a product's columns the same bits whatever the product's width
    (OpenBLAS's SkylakeX kernels do; its Haswell ones, on an AVX2-only CPU, do not: a 576 x 64
    @ 64 x 1024 product's first 64 columns differ from the 64-column product's in the last bit).
    Row chunks give the NumPy path's bits only where they do."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((576, 64)).astype(dtype)
    b = rng.standard_normal((64, 1024)).astype(dtype)
    return np.array_equal((a @ b)[:, :64], a @ b[:, :64])


def _equal_or_rounding(a: np.ndarray, c: np.ndarray, **tol: float) -> None:
    """a == c bit for bit where the BLAS sums a column alike in any width, else within ``tol``."""
    if _blas_columns_alike(a.dtype):
        np.testing.assert_array_equal(a, c)
    else:
        np.testing.assert_allclose(a, c, **tol)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", CHUNK_SHAPES)
def test_row_chunks_against_the_numpy_path(shape, dtype, monkeypatch, one_thread) -> None:
    """Chunks of a few output rows (a tiny ``_CHUNK_BYTES``): the input gradient bit for bit
    where the BLAS sums a column alike in any width (the chunks run last to first, so each
    pixel's taps are added in the same order), forward and weight gradient within rounding
    (OpenBLAS may sum a small product's terms otherwise)."""
    x, w, b, args = _arrays(shape, dtype, 4)
    with L.disabled():
        off = _conv_grads(ember, x, w, b, 5, *args)
    ow = off[0].shape[3]  # chunks of 2 output rows
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 2 * x.shape[1] * w[0, 0].size * ow * x.itemsize)
    monkeypatch.setattr(kern, "_IMAGE_MAX_K_SMALL", 0)  # (small images of 144 taps: per image)
    calls = count_calls(monkeypatch, conv, "_chunk_forward")
    tcalls = count_calls(monkeypatch, conv, "_chunk_transpose")
    wcalls = count_calls(monkeypatch, conv, "_chunk_weight_grad")
    with L.enabled():
        on = _conv_grads(ember, x, w, b, 5, *args)
    assert calls["n"] == tcalls["n"] == wcalls["n"] == 1
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for i, (a, c) in enumerate(zip(on, off)):
        assert a.dtype == dtype
        if i == 1:
            _equal_or_rounding(a, c, **tol)
        else:
            np.testing.assert_allclose(a, c, **tol)
    if HAVE_TORCH:
        ref = _conv_grads(torch, x, w, b, 5, *args)
        for a, c in zip(on, ref):
            np.testing.assert_allclose(a, c, **tol)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", CHUNK_SHAPES)
def test_row_chunks_are_alike_at_one_and_two_threads(shape, dtype, monkeypatch) -> None:
    """Row chunks with the images over two threads: output and every gradient bit for bit
    those of one thread (strided, dilated, grouped and 1-D-like geometries)."""
    x, w, b, args = _arrays(shape, dtype, 8)
    with L.disabled():
        ow = _conv_grads(ember, x, w, b, 9, *args)[0].shape[3]
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 2 * x.shape[1] * w[0, 0].size * ow * x.itemsize)
    monkeypatch.setattr(kern, "_IMAGE_MAX_K_SMALL", 0)
    calls = count_calls(monkeypatch, conv, "_chunk_weight_grad")
    threads = L.active.get_num_threads()
    res = []
    try:
        for n in (1, 2):
            L.set_num_threads(n)
            if n == 2 and ember._threads.split_parts(x.shape[0]) is None:
                pytest.skip("no OpenBLAS whose thread count ember can set")
            res.append(_conv_grads(ember, x, w, b, 9, *args))
    finally:
        L.set_num_threads(threads)
    assert calls["n"] == 2
    for a, c in zip(*res):
        assert a.dtype == c.dtype == dtype
        np.testing.assert_array_equal(a, c)


@needs_kernels
def test_row_chunks_leave_an_empty_batch_to_the_numpy_path(monkeypatch, one_thread) -> None:
    """An empty batch's weight gradient is zeros (row chunks would sum no products)."""
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 64)
    calls = count_calls(monkeypatch, conv, "_chunk_weight_grad")
    x = ember.zeros(0, 16, 9, 9, requires_grad=True)
    w = ember.randn(8, 16, 3, 3, requires_grad=True)
    ember.nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert calls["n"] == 0
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((8, 16, 3, 3), np.float32))
    assert tuple(x.grad.shape) == (0, 16, 9, 9)


@needs_kernels
def test_large_conv_takes_row_chunks_at_every_thread_count(monkeypatch) -> None:
    """A ResNet-sized convolution (64 -> 64 3x3 on 32 x 32 maps) runs in row chunks at the
    default chunk size at one thread and at two (the images in one part per thread, each part's
    products on one BLAS thread; the weight gradient summed in image blocks fixed by the
    shapes): all three gradients bit for bit alike at both counts, the input gradient bit for
    bit the NumPy path's where the BLAS allows it, the others within rounding of it and of
    PyTorch."""
    if ember._threads.split_parts(4) is None and ember._threads.get_num_threads() > 1:
        pytest.skip("no OpenBLAS whose thread count ember can set")
    x, w, b, args = _arrays((4, 64, 32, 32, 64, 3, 1, 1, 1, 1), np.float32, 6)
    calls = count_calls(monkeypatch, conv, "_chunk_forward")
    tcalls = count_calls(monkeypatch, conv, "_chunk_transpose")
    wcalls = count_calls(monkeypatch, conv, "_chunk_weight_grad")
    parts = []
    split = ember._threads.split
    monkeypatch.setattr(ember._threads, "split", lambda f, p: parts.append(p) or split(f, p))
    threads = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = _conv_grads(ember, x, w, b, 7, *args)
        assert calls["n"] == tcalls["n"] == wcalls["n"] == 1 and not parts
        ember.set_num_threads(2)
        if ember._threads.split_parts(4) is None:
            pytest.skip("no OpenBLAS whose thread count ember can set")
        two = _conv_grads(ember, x, w, b, 7, *args)
        assert calls["n"] == tcalls["n"] == wcalls["n"] == 2
        assert parts == [[(0, 2), (2, 4)]] * 3  # images, images, the weight's 4 blocks
        with L.disabled():
            off = _conv_grads(ember, x, w, b, 7, *args)
    finally:
        ember.set_num_threads(threads)
    for a, c, d in zip(one, two, off):
        assert a.dtype == c.dtype == np.float32
        np.testing.assert_array_equal(a, c)
        np.testing.assert_allclose(a, d, rtol=1e-5, atol=1e-4)
    _equal_or_rounding(one[1], off[1], rtol=1e-5, atol=1e-4)  # the input gradient
    if HAVE_TORCH:
        for a, c in zip(one, _conv_grads(torch, x, w, b, 7, *args)):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=2e-3)


def test_weight_grad_blocks_depend_on_the_shapes_alone() -> None:
    """The chunked weight gradient's image blocks: contiguous, covering the batch, at most
    _WGRAD_BLOCKS of them and their partial sums within _WGRAD_BLOCK_BYTES (at least one)."""
    assert chunks._wgrad_blocks(4, 1000) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert chunks._wgrad_blocks(32, 1000) == [(4 * i, 4 * i + 4) for i in range(8)]
    assert chunks._wgrad_blocks(32, 512 * 4608 * 4) == [(0, 10), (10, 21), (21, 32)]
    assert chunks._wgrad_blocks(5, 1 << 30) == [(0, 5)]
    assert chunks._wgrad_blocks(1, 10) == [(0, 1)]


@needs_kernels
def test_conv_kernels_refuse_bad_geometry() -> None:
    x = np.zeros((1, 2, 5, 5), np.float32)
    g = kern._Geom((5, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), None, wide=False)
    geom = kern._kgeom(g, 1, 2, True)
    cols = np.empty((1, 18, 25), np.float32)
    L.active.im2col(x, cols, geom)  # fine
    with pytest.raises(ValueError):
        L.active.im2col(x, cols[:, :17], geom)  # too few columns for the strides
    with pytest.raises(ValueError):
        L.active.im2col(x, cols, geom[:4] + (0,) + geom[5:])  # a zero kernel height
    with pytest.raises(ValueError):
        L.active.col2im(cols, np.empty((1, 2, 5, 4), np.float32), geom, False)  # wrong image
    with pytest.raises(TypeError):
        L.active.col2im(cols, np.empty((1, 2, 5, 5), np.float64), geom, False)  # mixed dtypes


@needs_kernels
def test_unfold_kernel_with_taps_wholly_in_the_padding() -> None:
    """A 1 x 1 image, kernel 3 dilated 2, padding 2: tap 0's windows all lie in the padding
    (the kernel writes zeros for exactly the one window, not past it)."""
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3, 1, 1)
    F = ember.nn.functional
    res = []
    for ctx in (L.enabled(), L.disabled()):
        with ctx:
            cols = F.unfold(ember.tensor(x), 3, 2, 2, 1)
            res.append((cols.numpy(), F.fold(cols, (1, 1), 3, 2, 2, 1).numpy()))
    assert res[0][0].shape == (2, 27, 1)
    for a, c in zip(*res):
        np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(res[0][1], x)


# (N, C, H, W, O, kernel, stride, padding, dilation, groups): per-image convolutions the direct
# kernel runs (16 to 32 taps, rows of whole vectors): the CNN's conv1 (whole tiles of 24 pixels),
# a row of a tile and a vector, channels off its blocks of 3, row stride, dilation, rectangular
# kernels and asymmetric ('same') padding
DIRECT_SHAPES = [
    (6, 1, 28, 28, 16, 5, 1, 0, 1, 1),
    (2, 2, 14, 32, 5, 3, 1, 1, 1, 1),
    (3, 3, 17, 40, 7, 3, (2, 1), (2, 1), 1, 1),
    (2, 1, 16, 40, 4, (4, 5), 1, 2, (2, 3), 1),
    (2, 4, 15, 16, 1, 2, 1, "same", 1, 1),
]


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", DIRECT_SHAPES)
def test_direct_conv_against_the_numpy_path(shape, dtype, monkeypatch) -> None:
    """The direct kernel (no columns): its forward within rounding of the NumPy path's (its sums
    run one fma per tap), against a float64 reference, and the gradients (other ops) unchanged."""
    x, w, b, args = _arrays(shape, dtype, 11)
    calls = count_calls(monkeypatch, L, "conv_direct")
    with L.enabled():
        on = _conv_grads(ember, x, w, b, 12, *args)
    assert calls["n"] == 1
    with L.disabled():
        off = _conv_grads(ember, x, w, b, 12, *args)
        ref = ember.nn.functional.conv2d(*(ember.tensor(a.astype(np.float64)) for a in (x, w, b)),
                                         *args).numpy()
    tol = 1e-5 if dtype == np.float32 else 1e-13
    assert on[0].dtype == dtype and on[0].flags.c_contiguous
    np.testing.assert_allclose(on[0], off[0], rtol=tol, atol=tol * np.abs(ref).max())
    np.testing.assert_allclose(on[0], ref, rtol=tol, atol=tol * np.abs(ref).max())
    for a, c in zip(on[1:], off[1:]):
        np.testing.assert_array_equal(a, c)
    if HAVE_TORCH:
        want = _conv_grads(torch, x, w, b, 12, *args)[0]
        np.testing.assert_allclose(on[0], want, rtol=tol, atol=tol * np.abs(ref).max())


@needs_kernels
def test_direct_conv_same_at_any_thread_count_and_without_bias() -> None:
    x, w, b, args = _arrays((7, 2, 19, 24, 8, 3, 1, 1, 1, 1), np.float32, 13)
    F = ember.nn.functional
    before = L.active.get_num_threads()
    try:
        res = []
        for t in (1, 2):
            L.set_num_threads(t)
            res.append([F.conv2d(ember.tensor(x), ember.tensor(w), bias, *args[:3]).numpy()
                        for bias in (ember.tensor(b), None)])
    finally:
        L.set_num_threads(before)
    for a, c in zip(*res):
        np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(res[0][1] + b.reshape(1, -1, 1, 1), res[0][0], rtol=1e-5,
                               atol=1e-5)  # (the bias starts each sum; here added after)


@needs_kernels
@pytest.mark.parametrize("kernels", [True, False])
def test_direct_conv_gradcheck(kernels, monkeypatch) -> None:
    """float64 gradcheck and gradgradcheck of a convolution the direct kernel runs (kernels on;
    off: the NumPy path), its double backward running it again."""
    monkeypatch.setattr(kern, "_IMAGE_MIN_PIXELS", 1)
    calls = count_calls(monkeypatch, L, "conv_direct")
    rng = np.random.default_rng(14)
    x, w, b = rng.standard_normal((2, 2, 6, 8)), rng.standard_normal((4, 2, 3, 3)), \
        rng.standard_normal(4)
    with L.enabled() if kernels else L.disabled():
        check_op(lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1),
                 x, w, b, gradgrad=True)
    assert (calls["n"] > 0) == kernels


@needs_kernels
def test_direct_conv_kernel_refuses_bad_geometry() -> None:
    x = np.zeros((1, 2, 5, 12), np.float32)
    wt, bp = np.zeros((1, 18, 3), np.float32), np.zeros(3, np.float32)
    y = np.empty((1, 3, 5, 12), np.float32)
    geom = (1, 2, 5, 12, 3, 3, 1, 1, 1, 1, 1, 1, 5, 12, 3)
    L.active.conv_direct(x, wt, bp, y, geom)  # fine
    with pytest.raises(ValueError):
        L.active.conv_direct(x, wt[:, :17], bp, y, geom)  # too few weights
    with pytest.raises(ValueError):
        L.active.conv_direct(x, wt, bp, y, geom[:7] + (2,) + geom[8:])  # a column stride
    with pytest.raises(ValueError):
        L.active.conv_direct(x, wt, bp, y[:, :2], geom)  # a short output
    with pytest.raises(TypeError):
        L.active.conv_direct(x, wt.astype(np.float64), bp, y, geom)  # mixed dtypes
