"""The CNN step's fast paths, each forced on small shapes and compared with PyTorch (forward and
every gradient, float32 and float64) and with finite differences: the per-image convolution
layout (``_kernels._IMAGE_MAX_K`` / ``_IMAGE_MIN_PIXELS``), ReLU's bitwise-masked backward and
max pooling over non-overlapping windows."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops.nn import _kernels, convolution
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch
    import torch.nn.functional as TF

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")


@pytest.fixture(params=[1, 12000, 1 << 19], ids=["chunk1", "chunk-some", "chunk-all"])
def per_image(request, monkeypatch):
    """Every convolution takes the per-image layout; its forward runs one image at a time, a
    few (the last chunk shorter) or all at once."""
    monkeypatch.setattr(_kernels, "_IMAGE_MAX_K", 10**9)
    monkeypatch.setattr(_kernels, "_IMAGE_MIN_PIXELS", 1)
    monkeypatch.setattr(_kernels, "_IMAGE_CHUNK_BYTES", request.param)


def _parity(e_fn, t_fn, arrays, dtype, atol):
    arrays = [a.astype(dtype) for a in arrays]
    e_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    eo, to = e_fn(*e_in), t_fn(*t_in)
    assert tuple(eo.shape) == tuple(to.shape)
    assert str(eo.dtype) == str(to.dtype)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=atol)
    v = np.random.default_rng(7).standard_normal(tuple(to.shape)).astype(dtype)
    eo.backward(ember.tensor(v))
    to.backward(torch.tensor(v))
    for a, b in zip(e_in, t_in):
        assert str(a.grad.dtype) == str(b.grad.dtype)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=atol)


def test_per_image_layout_is_chosen_for_few_taps():
    g = _kernels._Geom((28, 28), (5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), n=64, cin=1)
    assert g.image and not g.wide and not g.batch
    g = _kernels._Geom((12, 12), (5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), n=64, cin=16)
    assert not g.image


CONV2D = [
    ((2, 3, 7, 8), (4, 3, 3, 3), {}),
    ((2, 3, 7, 8), (4, 3, 3, 2), dict(stride=2)),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1))),
    ((2, 4, 7, 7), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ((2, 6, 6, 7), (6, 1, 3, 3), dict(groups=6, stride=2, padding=1)),  # depthwise
    ((2, 3, 7, 8), (4, 3, 4, 2), dict(padding="same")),
    ((3, 1, 12, 12), (5, 1, 5, 5), {}),  # the CNN's first layer, small
    ((5, 2, 13, 12), (4, 2, 5, 5), dict(padding=2)),
]


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("xs,ws,kw", CONV2D)
def test_per_image_conv2d_matches_torch(per_image, xs, ws, kw, dtype, atol):
    args = [randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2)]
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args, dtype, atol)


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
def test_per_image_conv1d_and_transpose_match_torch(per_image, dtype, atol):
    args = [randn(2, 4, 11), randn(6, 2, 3, seed=1), randn(6, seed=2)]
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    _parity(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), args, dtype, atol)
    args = [randn(2, 4, 5, 4), randn(4, 3, 3, 2, seed=1), randn(6, seed=2)]
    kw = dict(stride=2, padding=1, output_padding=1, groups=2)
    _parity(lambda *a: F.conv_transpose2d(*a, **kw), lambda *a: TF.conv_transpose2d(*a, **kw),
            args, dtype, atol)


def test_per_image_conv_gradcheck_and_double_backward(per_image):
    check_op(lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=1,
                                                       groups=2),
             randn(2, 4, 5, 5), randn(4, 2, 3, 2, seed=1), randn(4, seed=2), gradgrad=True)
    check_op(lambda m, x, w: m.nn.functional.conv_transpose2d(x, w, stride=2, padding=1),
             randn(2, 2, 3, 3), randn(2, 3, 3, 3, seed=1), gradgrad=True)


def test_per_image_weight_grad_owns_its_memory(per_image):
    x = ember.randn(2, 1, 9, 9)
    conv = ember.nn.Conv2d(1, 4, 3)
    conv(x).sum().backward()
    assert conv.weight.grad._data.base is None
    assert conv.weight.grad._data.flags.c_contiguous


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("conv", ["conv2d", "conv1d"])
def test_per_image_bias_grad_rides_in_the_weight_grad(per_image, monkeypatch, conv, dtype):
    """Weight and bias both needing a gradient (no create_graph): one ``_image_weight_grad``
    call with a row of ones gives both; the bias's is the sum of the output gradient (float64
    reference), the weight's the same as without the bias."""
    calls = []
    orig = _kernels._image_weight_grad

    def spy(*a, **k):
        calls.append(k.get("bias", False))
        return orig(*a, **k)

    monkeypatch.setattr(convolution, "_image_weight_grad", spy)
    fn = getattr(F, conv)
    shape = (3, 4, 7, 9) if conv == "conv2d" else (3, 4, 9)
    k = (3, 2) if conv == "conv2d" else 3
    x = ember.tensor(randn(*shape).astype(dtype))
    w = ember.tensor(randn(6, 2, *np.atleast_1d(k), seed=1).astype(dtype), requires_grad=True)
    b = ember.tensor(randn(6, seed=2).astype(dtype), requires_grad=True)
    y = fn(x, w, b, padding=1, groups=2)
    gy = randn(*y.shape, seed=3).astype(dtype)
    y.backward(ember.tensor(gy))
    assert calls == [True]
    axes = (0, 2, 3) if conv == "conv2d" else (0, 2)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(b.grad.numpy(), gy.astype(np.float64).sum(axis=axes), rtol=tol,
                               atol=tol)
    assert b.grad.dtype == w.grad.dtype == ember.tensor(gy).dtype
    w2 = ember.tensor(w.detach().numpy(), requires_grad=True)
    fn(x, w2, ember.tensor(b.detach().numpy()), padding=1, groups=2).backward(ember.tensor(gy))
    assert calls == [True, False]
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_relu_backward_masks_inf_and_nan_like_torch(dtype):
    x = randn(4, 5, 6).astype(dtype)
    x[0, 0, :3] = 0.0
    x[0, 1, 0] = -0.0
    g = randn(4, 5, 6, seed=1).astype(dtype)
    g[0, 0, 0] = np.inf
    g[0, 2, :] = np.nan
    g[1, :, 1] = -np.inf
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    F.relu(xe).backward(ember.tensor(g))
    TF.relu(xt).backward(torch.tensor(g))
    assert str(xe.grad.dtype) == str(xt.grad.dtype)
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


def test_relu_backward_of_a_broadcast_gradient_and_double_backward():
    x = ember.tensor(randn(3, 4), requires_grad=True)
    (gx,) = ember.autograd.grad(F.relu(x).sum(), x)  # sum's gradient is a broadcast view
    np.testing.assert_array_equal(gx.numpy(), (x.detach().numpy() > 0).astype(np.float32))
    check_op(lambda m, x: m.relu(x) * x, randn(3, 4), gradgrad=True)


WEIGHT_GRAD = [
    # (x shape, weight shape, kwargs): N * L long against C / groups * kh * kw (the weight
    # gradient's product runs transposed), then short (it runs as written)
    ((4, 2, 10, 10), (3, 2, 3, 3), {}),
    ((9, 4, 6, 6), (6, 2, 3, 3), dict(groups=2, padding=1)),  # batch-inner columns
    ((3, 4, 11, 9), (6, 2, 3, 2), dict(groups=2, stride=2, dilation=(1, 2))),
    ((2, 8, 4, 4), (4, 8, 3, 3), dict(padding=1)),
]

BATCH_INNER_TALL = [
    # batch-inner columns (<= 64 output pixels, batch >= 8) with a kernel tall enough for
    # col2im to sum each kernel column's taps first
    ((9, 4, 10, 10), (6, 2, 5, 5), dict(groups=2, padding=1)),
    ((8, 2, 12, 12), (3, 2, 5, 5), dict(stride=2, dilation=(1, 2))),
    ((8, 3, 11, 9), (4, 3, 6, 2), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1))),
]


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("xs,ws,kw", BATCH_INNER_TALL)
def test_batch_inner_column_sums_match_torch(xs, ws, kw, dtype, atol):
    x = ember.zeros(*xs)
    w = ember.zeros(*ws)
    y = F.conv2d(x, w, **kw)
    g = _kernels._Geom(xs[2:], ws[2:], _pair(kw.get("stride", 1)),
                       tuple((p, p) for p in _pair(kw.get("padding", 0))),
                       _pair(kw.get("dilation", 1)), tuple(y.shape[2:]), n=xs[0],
                       cin=ws[1])
    assert g.batch and g.kh >= _kernels._COLUMN_SUM_MIN_KH
    args = [randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2)]
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args, dtype, atol)


def _pair(v):
    return tuple(v) if isinstance(v, tuple) else (v, v)


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("xs,ws,kw", WEIGHT_GRAD)
def test_weight_gradient_orientations_match_torch(xs, ws, kw, dtype, atol):
    args = [randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2)]
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args, dtype, atol)


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
def test_bias_gradient_matches_torch(dtype, atol):
    # conv1d, conv2d, conv_transpose2d, an empty batch and a broadcast (sum's) gradient
    for fn, tfn, xs, ws, nb in [(F.conv1d, TF.conv1d, (3, 2, 9), (4, 2, 3), 4),
                                (F.conv2d, TF.conv2d, (3, 2, 7, 6), (4, 2, 3, 2), 4),
                                (F.conv_transpose2d, TF.conv_transpose2d, (3, 4, 5, 4),
                                 (4, 3, 3, 3), 3),
                                (F.conv2d, TF.conv2d, (0, 2, 7, 6), (4, 2, 3, 2), 4)]:
        args = [randn(*xs), randn(*ws, seed=1), randn(nb, seed=2)]
        _parity(fn, tfn, args, dtype, atol)
    b = ember.tensor(randn(4).astype(dtype), requires_grad=True)
    F.conv2d(ember.tensor(randn(2, 2, 5, 5).astype(dtype)),
             ember.tensor(randn(4, 2, 3, 3).astype(dtype)), b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 2 * 3 * 3, dtype=dtype))
    assert b.grad.dtype == ember.tensor(np.zeros(1, dtype=dtype)).dtype


ROWS = [
    # batch-inner convolutions whose forward takes the row-major columns (forced on small
    # shapes): plain, padded, strided and dilated, a non-square kernel, conv1d
    ((9, 3, 7, 7), (4, 3, 3, 3), {}),
    ((8, 2, 6, 5), (3, 2, 3, 2), dict(padding=(1, 2))),
    ((8, 3, 9, 8), (5, 3, 3, 3), dict(stride=(2, 1), padding=1, dilation=(1, 2))),
    ((10, 4, 8, 8), (6, 4, 5, 5), dict(padding=2, stride=2)),
]


@pytest.fixture
def rows_layout(monkeypatch):
    """Every batch-inner convolution of one group builds row-major forward columns."""
    monkeypatch.setattr(_kernels, "_ROWS_MIN_RATIO", 0)


def test_rows_layout_is_chosen_for_the_cnn_conv2():
    g = _kernels._Geom((12, 12), (5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), n=64, cin=16)
    assert g.batch and g.rows
    g = _kernels._Geom((8, 8), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), n=32, cin=64)
    assert g.batch and not g.rows  # (ResNet's first stage: the GEMM is not long enough)


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("xs,ws,kw", ROWS)
def test_rows_conv2d_matches_torch(rows_layout, xs, ws, kw, dtype, atol):
    y = F.conv2d(ember.zeros(*xs), ember.zeros(*ws), **kw)
    g = _kernels._Geom(xs[2:], ws[2:], _pair(kw.get("stride", 1)),
                       tuple((p, p) for p in _pair(kw.get("padding", 0))),
                       _pair(kw.get("dilation", 1)), tuple(y.shape[2:]), n=xs[0], cin=ws[1])
    assert g.rows
    args = [randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2)]
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args, dtype, atol)
    # without a bias, and with the input's gradient not needed (the weight's alone)
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args[:2], dtype,
            atol)
    x = ember.tensor(args[0].astype(dtype))
    w = ember.tensor(args[1].astype(dtype), requires_grad=True)
    F.conv2d(x, w, **kw).sum().backward()
    wt = torch.tensor(args[1].astype(dtype), requires_grad=True)
    TF.conv2d(torch.tensor(args[0].astype(dtype)), wt, **kw).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), atol=atol, rtol=atol)
    assert w.grad._data.base is None and w.grad._data.flags.c_contiguous


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
def test_rows_conv1d_and_grouped_fallback_match_torch(rows_layout, dtype, atol):
    args = [randn(9, 3, 11), randn(4, 3, 3, seed=1), randn(4, seed=2)]
    kw = dict(stride=2, padding=1, dilation=2)
    _parity(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), args, dtype, atol)
    args = [randn(9, 4, 6, 6), randn(6, 2, 3, 3, seed=1), randn(6, seed=2)]  # two groups
    kw = dict(groups=2, padding=1)
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), args, dtype, atol)


def test_rows_conv_gradcheck_and_double_backward(rows_layout):
    check_op(lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=1),
             randn(8, 2, 5, 6), randn(3, 2, 3, 2, seed=1), randn(3, seed=2), gradgrad=True)


@needs_torch
@pytest.mark.parametrize("dtype,atol", [(np.float32, 2e-5), (np.float64, 1e-10)])
def test_rows_conv_transpose2d_matches_torch(rows_layout, dtype, atol):
    # its weight gradient is ConvWeight over (grad, input): the row-major columns again
    args = [randn(9, 4, 3, 3), randn(4, 3, 3, 3, seed=1), randn(3, seed=2)]
    kw = dict(stride=1, padding=1)
    _parity(lambda *a: F.conv_transpose2d(*a, **kw), lambda *a: TF.conv_transpose2d(*a, **kw),
            args, dtype, atol)
