"""Convolution, pooling, interpolation, fold/unfold: values and gradients against PyTorch
(float64, 1e-6), gradcheck / gradgradcheck, modules (state_dict, repr, init), error messages."""

from __future__ import annotations

import time

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import HAVE_TORCH, check_op, randn

if HAVE_TORCH:
    import torch
    import torch.nn.functional as TF

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")


def _parity(e_fn, t_fn, *arrays, atol=1e-6, grad=True, seed=0):
    """Same inputs through ember and torch: values, dtypes and gradients for a random cotangent."""
    e_in = [ember.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    t_in = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    eo, to = e_fn(*e_in), t_fn(*t_in)
    if isinstance(to, tuple):  # (values, indices)
        for a, b in zip(eo[1:], to[1:]):
            assert str(a.dtype) == str(b.dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        eo, to = eo[0], to[0]
    assert tuple(eo.shape) == tuple(to.shape), (tuple(eo.shape), tuple(to.shape))
    assert str(eo.dtype) == str(to.dtype)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=1e-6)
    if not grad:
        return
    v = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(arrays[0].dtype)
    eo.backward(ember.tensor(v))
    to.backward(torch.tensor(v))
    for a, b in zip(e_in, t_in):
        if b.grad is None:
            assert a.grad is None or not a.grad.numpy().any()
            continue
        assert a.grad is not None
        assert str(a.grad.dtype) == str(b.grad.dtype)
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# convolution

CONV2D = [
    # (x shape, weight shape, kwargs)
    ((2, 3, 7, 8), (4, 3, 3, 3), {}),
    ((2, 3, 7, 8), (4, 3, 3, 2), dict(stride=2)),
    ((2, 3, 7, 8), (4, 3, 3, 3), dict(stride=(2, 1), padding=(1, 2))),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(dilation=(2, 3), padding=2)),
    ((2, 4, 7, 7), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ((1, 6, 6, 7), (6, 1, 3, 3), dict(groups=6, stride=2, padding=1)),  # depthwise
    ((2, 3, 7, 8), (4, 3, 4, 2), dict(padding="same")),  # even kernel: asymmetric padding
    ((2, 3, 7, 8), (4, 3, 4, 4), dict(padding="same", dilation=(1, 2))),
    ((2, 4, 6, 6), (4, 2, 2, 3), dict(padding="same", groups=2, dilation=2)),
    ((2, 3, 7, 8), (4, 3, 3, 3), dict(padding="valid")),
    ((2, 3, 5, 5), (4, 3, 1, 1), {}),
    ((2, 3, 5, 5), (4, 3, 5, 5), {}),  # kernel == input
    ((3, 7, 8), (4, 3, 3, 3), dict(padding=1)),  # unbatched
    ((2, 3, 1, 9), (2, 3, 1, 4), dict(stride=(1, 3))),
    ((0, 3, 5, 5), (4, 3, 3, 3), {}),  # empty batch
]


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONV2D)
def test_conv2d_matches_torch(xs, ws, kw, bias):
    x, w = randn(*xs), randn(*ws, seed=1)
    args = (x, w, randn(ws[0], seed=2)) if bias else (x, w)
    _parity(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), *args)


CONV1D = [
    ((2, 3, 11), (4, 3, 3), {}),
    ((2, 3, 11), (4, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 11), (6, 2, 2), dict(dilation=3, groups=2)),
    ((2, 3, 10), (4, 3, 4), dict(padding="same")),
    ((3, 10), (4, 3, 3), dict(padding="same", dilation=2)),  # unbatched
]


@needs_torch
@pytest.mark.parametrize("xs,ws,kw", CONV1D)
def test_conv1d_matches_torch(xs, ws, kw):
    args = (randn(*xs), randn(*ws, seed=1), randn(ws[0], seed=2))
    _parity(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), *args)


CONVT2D = [
    ((2, 4, 5, 4), (4, 3, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 4), (4, 3, 3, 3), dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2))),
    ((2, 4, 5, 4), (4, 2, 3, 3), dict(groups=2, dilation=2, padding=1)),
    ((2, 4, 5, 4), (4, 2, 2, 2), dict(stride=1, dilation=2, output_padding=1)),
    ((4, 5, 4), (4, 3, 3, 3), dict(stride=2)),  # unbatched
]


@needs_torch
@pytest.mark.parametrize("xs,ws,kw", CONVT2D)
def test_conv_transpose2d_matches_torch(xs, ws, kw):
    groups = kw.get("groups", 1)
    args = (randn(*xs), randn(*ws, seed=1), randn(ws[1] * groups, seed=2))
    _parity(lambda *a: F.conv_transpose2d(*a, **kw), lambda *a: TF.conv_transpose2d(*a, **kw),
            *args)


@needs_torch
@pytest.mark.parametrize("kw", [{}, dict(stride=3, padding=1, output_padding=2),
                                dict(groups=2, dilation=2)])
def test_conv_transpose1d_matches_torch(kw):
    args = (randn(2, 4, 6), randn(4, 3, 3, seed=1), randn(3 * kw.get("groups", 1), seed=2))
    _parity(lambda *a: F.conv_transpose1d(*a, **kw), lambda *a: TF.conv_transpose1d(*a, **kw),
            *args)


def test_conv2d_check_op_and_double_backward():
    check_op(lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=1,
                                                       groups=2),
             randn(2, 4, 5, 5), randn(4, 2, 3, 2, seed=1), randn(4, seed=2), gradgrad=True)
    check_op(lambda m, x, w: m.nn.functional.conv2d(x, w, padding="same", dilation=2),
             randn(1, 2, 5, 6), randn(3, 2, 2, 2, seed=1), gradgrad=True)


def test_conv_transpose_and_1d_check_op():
    check_op(lambda m, x, w, b: m.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                 output_padding=1),
             randn(1, 2, 3, 3), randn(2, 3, 3, 3, seed=1), randn(3, seed=2), gradgrad=True)
    check_op(lambda m, x, w: m.nn.functional.conv1d(x, w, stride=2, padding=1),
             randn(2, 3, 7), randn(2, 3, 3, seed=1), gradgrad=True)
    check_op(lambda m, x, w: m.nn.functional.conv_transpose1d(x, w, stride=2),
             randn(2, 3, 4), randn(3, 2, 3, seed=1))


def test_conv_reference_numpy():
    """Forward against a direct NumPy loop over output positions (not against our im2col)."""
    x, w, b = randn(2, 3, 6, 7), randn(4, 3, 3, 2, seed=1), randn(4, seed=2)
    s, p, d = (2, 1), (1, 2), (1, 2)
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    OH = (xp.shape[2] - d[0] * 2 - 1) // s[0] + 1
    OW = (xp.shape[3] - d[1] * 1 - 1) // s[1] + 1
    ref = np.zeros((2, 4, OH, OW))
    for i in range(OH):
        for j in range(OW):
            patch = xp[:, :, i * s[0]:i * s[0] + 2 * d[0] + 1:d[0],
                       j * s[1]:j * s[1] + d[1] + 1:d[1]]
            ref[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w) + b
    got = F.conv2d(ember.tensor(x), ember.tensor(w), ember.tensor(b), s, p, d)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-12)


def test_conv_float32_stays_float32():
    x = ember.randn(2, 3, 8, 8)
    w = ember.randn(4, 3, 3, 3, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert y.dtype == ember.float32
    y.sum().backward()
    assert w.grad.dtype == ember.float32 and b.grad.dtype == ember.float32
    assert F.conv_transpose2d(x, ember.randn(3, 2, 3, 3), stride=2).dtype == ember.float32
    assert F.conv1d(ember.randn(2, 3, 8), ember.randn(4, 3, 3)).dtype == ember.float32


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_low_precision_dtypes_are_kept(dt):
    dtype = getattr(ember, dt)
    x = ember.randn(2, 3, 8, 8).to(dtype).requires_grad_()
    w = ember.randn(4, 3, 3, 3).to(dtype).requires_grad_()
    y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    outs = [y, F.avg_pool2d(y, 2), F.adaptive_avg_pool2d(y, 3), F.adaptive_max_pool2d(y, 3),
            F.interpolate(y, size=5, mode="bilinear"), F.unfold(y, 2),
            F.conv_transpose2d(y, ember.randn(4, 2, 3, 3).to(dtype))]
    assert all(o.dtype == dtype for o in outs)
    sum(o.float().sum() for o in outs).backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype


def test_conv_no_grad_records_nothing():
    x, w = ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3, requires_grad=True)
    with ember.no_grad():
        y = F.conv2d(x, w)
    assert y.grad_fn is None and not y.requires_grad


def test_conv_integer_forward():
    x = np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5)
    w = np.ones((2, 3, 2, 2), dtype=np.int64)
    got = F.conv2d(ember.tensor(x), ember.tensor(w))
    assert got.dtype == ember.int64
    if HAVE_TORCH:
        np.testing.assert_array_equal(got.numpy(), TF.conv2d(torch.tensor(x),
                                                             torch.tensor(w)).numpy())


# ---------------------------------------------------------------------------------------------
# pooling

MAXPOOL2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=1, padding=(1, 1)),  # overlapping windows
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=1, padding=1, dilation=2),
    dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 3), padding=(1, 0), ceil_mode=True),
    dict(kernel_size=5, stride=1, padding=2),  # 25 taps: the running-search path
]


@needs_torch
@pytest.mark.parametrize("kw", MAXPOOL2D)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 7)])
def test_max_pool2d_matches_torch(kw, shape):
    x = randn(*shape)
    _parity(lambda a: F.max_pool2d(a, **kw), lambda a: TF.max_pool2d(a, **kw), x)
    _parity(lambda a: F.max_pool2d(a, return_indices=True, **kw),
            lambda a: TF.max_pool2d(a, return_indices=True, **kw), x)


@needs_torch
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1,
                                                            ceil_mode=True),
                                dict(kernel_size=2, stride=1, dilation=2, padding=1)])
def test_max_pool1d_matches_torch(kw):
    for shape in [(2, 3, 11), (3, 10)]:
        x = randn(*shape)
        _parity(lambda a: F.max_pool1d(a, return_indices=True, **kw),
                lambda a: TF.max_pool1d(a, return_indices=True, **kw), x)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=2, stride=1, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, dilation=2)])
def test_max_pool_ties_nan_inf_like_torch(kw, dtype):
    x = np.zeros((1, 2, 5, 6), dtype=dtype)  # zeros: ties everywhere
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan  # two NaNs in one window: torch reports the last
    x[0, 0, 2:4, 2:4] = -np.inf
    x[0, 0, 4, :] = -np.inf  # windows of only -inf report their first element
    x[0, 1] = 1.0
    x[0, 1, 1, 1] = np.nan
    a, ai = F.max_pool2d(ember.tensor(x), return_indices=True, **kw)
    b, bi = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())
    a, ai = F.adaptive_max_pool2d(ember.tensor(x), (3, 4), return_indices=True)
    b, bi = TF.adaptive_max_pool2d(torch.tensor(x), (3, 4), return_indices=True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ai.numpy(), bi.numpy())


def test_max_pool_tie_gradient_goes_to_first():
    x = ember.zeros(1, 1, 2, 2, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[1, 0], [0, 0]])


def test_max_pool_check_op():
    check_op(lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
             randn(2, 2, 6, 5), gradgrad=True)
    check_op(lambda m, x: m.nn.functional.max_pool2d(x, 2, 1), randn(2, 2, 4, 5), gradgrad=True)
    check_op(lambda m, x: m.nn.functional.max_pool1d(x, 3, 2), randn(2, 2, 9))


def test_max_pool_integer_and_no_grad():
    x = np.random.default_rng(0).integers(-5, 5, (2, 3, 6, 6))
    a, ai = F.max_pool2d(ember.tensor(x), 3, 2, 1, return_indices=True)
    assert a.dtype == ember.int64 and ai.dtype == ember.int64
    if HAVE_TORCH:
        b, bi = TF.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(ai.numpy(), bi.numpy())
    t = ember.randn(1, 1, 4, 4, requires_grad=True)
    with ember.no_grad():
        y = F.max_pool2d(t, 2)
    assert y.grad_fn is None


AVGPOOL2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5),
    dict(kernel_size=2, stride=3, ceil_mode=True),
]


@needs_torch
@pytest.mark.parametrize("kw", AVGPOOL2D)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 7)])
def test_avg_pool2d_matches_torch(kw, shape):
    _parity(lambda a: F.avg_pool2d(a, **kw), lambda a: TF.avg_pool2d(a, **kw), randn(*shape))


@needs_torch
@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=4, stride=3, padding=2,
                                                            ceil_mode=True),
                                dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                                     count_include_pad=False)])
def test_avg_pool1d_matches_torch(kw):
    for shape in [(2, 3, 11), (3, 10)]:
        _parity(lambda a: F.avg_pool1d(a, **kw), lambda a: TF.avg_pool1d(a, **kw), randn(*shape))


def test_avg_pool_check_op():
    check_op(lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                     count_include_pad=False),
             randn(2, 2, 6, 5), gradgrad=True)


@needs_torch
@pytest.mark.parametrize("out", [(4, 3), (3, 4), 1, (None, 3), (7, 5), (9, 8), (2, None)])
def test_adaptive_pool2d_matches_torch(out):
    x = randn(2, 3, 9, 8)
    _parity(lambda a: F.adaptive_avg_pool2d(a, out), lambda a: TF.adaptive_avg_pool2d(a, out), x)
    _parity(lambda a: F.adaptive_max_pool2d(a, out, return_indices=True),
            lambda a: TF.adaptive_max_pool2d(a, out, return_indices=True), x)
    _parity(lambda a: F.adaptive_avg_pool2d(a, out), lambda a: TF.adaptive_avg_pool2d(a, out),
            randn(3, 9, 8))  # unbatched


@needs_torch
@pytest.mark.parametrize("out", [1, 3, 4, 7, 11, 15])
def test_adaptive_pool1d_matches_torch(out):
    for shape in [(2, 3, 11), (3, 11)]:
        x = randn(*shape)
        _parity(lambda a: F.adaptive_avg_pool1d(a, out), lambda a: TF.adaptive_avg_pool1d(a, out),
                x)
        _parity(lambda a: F.adaptive_max_pool1d(a, out, return_indices=True),
                lambda a: TF.adaptive_max_pool1d(a, out, return_indices=True), x)


def test_adaptive_check_op():
    check_op(lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (3, 2)), randn(2, 2, 5, 5),
             gradgrad=True)
    check_op(lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (3, 2)), randn(2, 2, 5, 5),
             gradgrad=True)


# ---------------------------------------------------------------------------------------------
# interpolate

INTERP = [
    ("nearest", None, dict(size=(13, 5))),
    ("nearest", None, dict(scale_factor=2)),
    ("nearest", None, dict(scale_factor=(1.7, 0.6))),
    ("nearest", None, dict(size=(3, 3))),
    ("nearest", None, dict(size=(7, 11))),
    ("nearest-exact", None, dict(size=(13, 5))),
    ("nearest-exact", None, dict(scale_factor=(1.5, 0.5))),
    ("bilinear", False, dict(size=(13, 5))),
    ("bilinear", False, dict(scale_factor=2)),
    ("bilinear", False, dict(scale_factor=(1.7, 0.6))),
    ("bilinear", False, dict(scale_factor=(1.7, 0.6), recompute_scale_factor=True)),
    ("bilinear", True, dict(size=(13, 5))),
    ("bilinear", True, dict(scale_factor=3)),
    ("bilinear", True, dict(size=(1, 1))),
    ("bilinear", False, dict(size=(6, 5))),  # same size
    ("area", None, dict(size=(4, 3))),
    ("area", None, dict(scale_factor=0.5)),
]


@needs_torch
@pytest.mark.parametrize("mode,ac,kw", INTERP)
def test_interpolate2d_matches_torch(mode, ac, kw):
    x = randn(2, 3, 6, 5)
    _parity(lambda a: F.interpolate(a, mode=mode, align_corners=ac, **kw),
            lambda a: TF.interpolate(a, mode=mode, align_corners=ac, **kw), x)
    x32 = x.astype(np.float32)  # float32 index math follows torch's kernels
    _parity(lambda a: F.interpolate(a, mode=mode, align_corners=ac, **kw),
            lambda a: TF.interpolate(a, mode=mode, align_corners=ac, **kw), x32, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("mode,ac,kw", [("linear", False, dict(size=17)),
                                        ("linear", True, dict(size=17)),
                                        ("linear", False, dict(scale_factor=0.7)),
                                        ("nearest", None, dict(size=4)),
                                        ("nearest", None, dict(scale_factor=2.5)),
                                        ("area", None, dict(size=4))])
def test_interpolate1d_matches_torch(mode, ac, kw):
    _parity(lambda a: F.interpolate(a, mode=mode, align_corners=ac, **kw),
            lambda a: TF.interpolate(a, mode=mode, align_corners=ac, **kw), randn(2, 3, 9))


@needs_torch
def test_nearest_index_math_float32_like_torch():
    """torch computes nearest source indices in float32; many sizes exercise the rounding."""
    for n_in in range(1, 14):
        for n_out in range(1, 30):
            x = np.arange(n_in, dtype=np.float64).reshape(1, 1, n_in)
            a = F.interpolate(ember.tensor(x), size=n_out).numpy()
            b = TF.interpolate(torch.tensor(x), size=n_out).numpy()
            np.testing.assert_array_equal(a, b, err_msg=f"{n_in} -> {n_out}")
    for sf in (0.3, 1.1, 1.3333, 2.5, 3.7):
        x = np.arange(11, dtype=np.float64).reshape(1, 1, 11)
        a = F.interpolate(ember.tensor(x), scale_factor=sf).numpy()
        np.testing.assert_array_equal(a, TF.interpolate(torch.tensor(x), scale_factor=sf).numpy())


def test_interpolate_check_op_and_modules():
    check_op(lambda m, x: m.nn.functional.interpolate(x, size=(7, 4), mode="bilinear"),
             randn(1, 2, 4, 5), gradgrad=True)
    check_op(lambda m, x: m.nn.functional.interpolate(x, scale_factor=2), randn(1, 2, 3, 3),
             gradgrad=True)
    x = ember.randn(1, 2, 4, 4)
    assert nn.Upsample(scale_factor=2)(x).shape == (1, 2, 8, 8)
    np.testing.assert_allclose(nn.UpsamplingBilinear2d(size=7)(x).numpy(),
                               F.interpolate(x, size=7, mode="bilinear",
                                             align_corners=True).numpy())
    np.testing.assert_array_equal(nn.UpsamplingNearest2d(scale_factor=2)(x).numpy(),
                                  np.repeat(np.repeat(x.numpy(), 2, 2), 2, 3))


def test_interpolate_integer_nearest():
    x = ember.tensor(np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4))
    y = F.interpolate(x, scale_factor=2)
    assert y.dtype == ember.uint8
    np.testing.assert_array_equal(y.numpy(), np.repeat(np.repeat(x.numpy(), 2, 2), 2, 3))


# ---------------------------------------------------------------------------------------------
# fold / unfold / pixel shuffle


@needs_torch
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=2,
                                                            padding=1, stride=(2, 1)),
                                dict(kernel_size=3, padding=1, stride=2)])
def test_unfold_fold_match_torch(kw):
    x = randn(2, 3, 7, 6)
    _parity(lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw), x)
    cols = TF.unfold(torch.tensor(x), **kw).numpy()
    _parity(lambda a: F.fold(a, (7, 6), **kw), lambda a: TF.fold(a, (7, 6), **kw), cols)
    _parity(lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw), x[0])  # unbatched
    _parity(lambda a: F.fold(a, (7, 6), **kw), lambda a: TF.fold(a, (7, 6), **kw), cols[0])


def test_fold_unfold_round_trip():
    x = ember.tensor(randn(2, 3, 6, 8))
    # non-overlapping blocks: fold inverts unfold exactly
    np.testing.assert_array_equal(F.fold(F.unfold(x, 2, stride=2), (6, 8), 2, stride=2).numpy(),
                                  x.numpy())
    # overlapping blocks: each pixel is summed once per block that covers it
    kw = dict(kernel_size=3, padding=1)
    ones = ember.ones(1, 1, 6, 8)
    count = F.fold(F.unfold(ones, **kw), (6, 8), **kw).numpy()
    np.testing.assert_allclose(F.fold(F.unfold(x, **kw), (6, 8), **kw).numpy(),
                               x.numpy() * count, atol=1e-12)
    assert count[0, 0, 0, 0] == 4 and count[0, 0, 2, 2] == 9
    check_op(lambda m, a: m.nn.functional.unfold(a, 2, padding=1, stride=2), randn(1, 2, 4, 4),
             gradgrad=True)
    check_op(lambda m, a: m.nn.functional.fold(a, (4, 4), 2), randn(1, 8, 9), gradgrad=True)


def test_pixel_shuffle():
    check_op(lambda m, a: m.nn.functional.pixel_shuffle(a, 2), randn(2, 8, 2, 3), gradgrad=True)
    check_op(lambda m, a: m.nn.functional.pixel_unshuffle(a, 2), randn(2, 2, 4, 6))
    x = ember.tensor(randn(3, 8, 2, 3))  # unbatched-style 3-D input also works
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(), x.numpy())
    assert nn.PixelShuffle(2)(ember.randn(1, 8, 3, 3)).shape == (1, 2, 6, 6)


# ---------------------------------------------------------------------------------------------
# modules


MODULES = [
    "Conv2d(3, 16, 5)", "Conv2d(3, 16, (3, 5), stride=2, padding=1, dilation=2, bias=False)",
    "Conv2d(4, 4, 3, padding='same', groups=2)", "Conv2d(4, 6, 4, padding='same')",
    "ConvTranspose2d(3, 6, 3, stride=2, output_padding=1, groups=3)", "Conv1d(2, 3, 4)",
    "ConvTranspose1d(2, 3, 4, padding=1)", "MaxPool2d(2)",
    "MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True)", "MaxPool1d(2)", "AvgPool2d(2)",
    "AvgPool2d(3, 2, 1, True, False, 2)", "AvgPool1d(3)", "AdaptiveAvgPool2d((None, 3))",
    "AdaptiveAvgPool1d(4)", "AdaptiveMaxPool2d(2, return_indices=True)", "AdaptiveMaxPool1d(3)",
    "Upsample(scale_factor=2)", "Upsample(size=(4, 5), mode='bilinear', align_corners=True)",
    "UpsamplingNearest2d(scale_factor=2)", "UpsamplingBilinear2d(size=3)", "Fold((4, 5), 2)",
    "Unfold(2, stride=2)", "PixelShuffle(2)", "PixelUnshuffle(2)",
    "Conv2d(3, 8, 3, padding_mode='reflect')",
]


@needs_torch
@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_and_state_dict_match_torch(spec):
    e, t = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(e) == repr(t)
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    assert [tuple(v.shape) for v in es.values()] == [tuple(v.shape) for v in ts.values()]


@needs_torch
@pytest.mark.parametrize("spec,shape", [
    ("Conv2d(3, 4, 3, stride=2, padding=1, groups=1)", (2, 3, 7, 7)),
    ("Conv2d(4, 6, (2, 3), padding='same', groups=2, dilation=2)", (2, 4, 6, 7)),
    ("Conv1d(3, 4, 3, padding=1)", (2, 3, 8)),
    ("ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)", (2, 4, 5, 5)),
    ("ConvTranspose1d(3, 2, 4, stride=2)", (2, 3, 5)),
])
def test_module_with_torch_weights_matches(spec, shape):
    t = eval("torch.nn." + spec).double()
    e = eval("nn." + spec).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = randn(*shape)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = e(xe), t(xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-10)
    v = randn(*tuple(yt.shape), seed=3)
    ye.backward(ember.tensor(v))
    yt.backward(torch.tensor(v))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), atol=1e-10, err_msg=n)


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes_match_torch(mode):
    t = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    e = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = randn(2, 2, 5, 6)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), atol=1e-10)


@needs_torch
def test_empty_batch_pools():
    x = randn(0, 2, 6, 6)
    _parity(lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), x)
    _parity(lambda a: F.avg_pool2d(a, 3, 2, 1), lambda a: TF.avg_pool2d(a, 3, 2, 1), x)
    _parity(lambda a: F.adaptive_avg_pool2d(a, 4), lambda a: TF.adaptive_avg_pool2d(a, 4), x)
    _parity(lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"),
            lambda a: TF.interpolate(a, scale_factor=2, mode="bilinear"), x)


def test_conv_module_default_init_bounds():
    ember.manual_seed(0)
    c = nn.Conv2d(16, 32, 5)
    bound = 1 / np.sqrt(16 * 25)
    w, b = c.weight.detach().numpy(), c.bias.detach().numpy()
    assert w.dtype == np.float32 and np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.95 * bound and abs(w.mean()) < 0.1 * bound  # spread over U(-b, b)
    assert np.abs(b).max() <= bound
    ct = nn.ConvTranspose2d(8, 4, 3, groups=2)  # fan_in = weight.size(1) * k * k = 2 * 9
    assert ct.weight.shape == (8, 2, 3, 3)
    assert np.abs(ct.weight.detach().numpy()).max() <= 1 / np.sqrt(18)
    assert nn.Conv2d(2, 2, 3, bias=False).bias is None


def test_conv_transpose_output_size_argument():
    up = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
    x = ember.randn(1, 4, 5, 5)
    assert up(x).shape == (1, 2, 9, 9)
    assert up(x, output_size=[10, 10]).shape == (1, 2, 10, 10)
    assert up(x, output_size=(1, 2, 10, 9)).shape == (1, 2, 10, 9)
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        up(x, output_size=(12, 12))


def test_pool_modules_forward():
    x = ember.randn(2, 3, 8, 8)
    y, i = nn.MaxPool2d(2, return_indices=True)(x)
    assert y.shape == (2, 3, 4, 4) and i.dtype == ember.int64
    assert nn.AvgPool1d(2)(ember.randn(2, 3, 8)).shape == (2, 3, 4)
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 3, 1, 1)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((1, 1))(x).numpy()[..., 0, 0],
                               x.numpy().mean(axis=(2, 3)), atol=1e-6)
    assert nn.AdaptiveMaxPool1d(3)(ember.randn(2, 3, 8)).shape == (2, 3, 3)
    assert nn.Unfold(2)(x).shape == (2, 12, 49)
    assert nn.Fold((8, 8), 2, stride=2)(nn.Unfold(2, stride=2)(x)).shape == (2, 3, 8, 8)


def test_module_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")


# ---------------------------------------------------------------------------------------------
# error messages


def _raises(exc, pattern, fn):
    with pytest.raises(exc, match=pattern):
        fn()


def test_conv_errors():
    x, w = ember.randn(64, 1, 28, 28), ember.randn(16, 3, 5, 5)
    _raises(RuntimeError, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
            r"input of size: \[2, 3\]", lambda: F.conv2d(ember.randn(2, 3), w))
    _raises(RuntimeError, r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d",
            lambda: F.conv1d(ember.randn(1, 2, 3, 4), ember.randn(4, 2, 1)))
    with pytest.raises(RuntimeError) as e:
        F.conv2d(x, w)
    msg = str(e.value)
    assert "weight of size [16, 3, 5, 5]" in msg and "input[64, 1, 28, 28]" in msg
    assert "to have 3 channels, but got 1 channels instead" in msg and "in_channels" in msg
    _raises(RuntimeError, r"input\[1, 1, 28, 28\] to have 3 channels",
            lambda: F.conv2d(ember.randn(1, 28, 28), w))
    _raises(RuntimeError, r"Calculated padded input size per channel: \(4 x 4\). Kernel size: "
            r"\(5 x 5\). Kernel size can't be greater than actual input size",
            lambda: F.conv2d(ember.randn(1, 3, 4, 4), w))
    _raises(RuntimeError, r"padded input size per channel: \(6 x 6\). Kernel size: \(7 x 7\)",
            lambda: F.conv2d(ember.randn(1, 3, 4, 4), ember.randn(2, 3, 4, 4), padding=1,
                             dilation=2))
    _raises(RuntimeError, "expected weight to be divisible by 2 at dimension 0",
            lambda: F.conv2d(ember.randn(1, 4, 5, 5), ember.randn(3, 2, 1, 1), groups=2))
    _raises(RuntimeError, "non-positive stride", lambda: F.conv2d(x, ember.randn(2, 1, 3, 3),
                                                                  stride=0))
    _raises(RuntimeError, "negative padding", lambda: F.conv2d(x, ember.randn(2, 1, 3, 3),
                                                               padding=-1))
    _raises(RuntimeError, "dilation should be greater than zero",
            lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), dilation=0))
    _raises(RuntimeError, "non-positive groups", lambda: F.conv2d(x, ember.randn(2, 1, 3, 3),
                                                                  groups=0))
    _raises(RuntimeError, "padding='same' is not supported for strided convolutions",
            lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), stride=2, padding="same"))
    _raises(RuntimeError, "Invalid padding string: 'foo'",
            lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), padding="foo"))
    _raises(RuntimeError, r"a list of 2 values .* but got stride=\[1, 1, 1\]",
            lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), stride=(1, 1, 1)))
    _raises(RuntimeError, r"Input type \(double\) and weight type \(float\) should be the same",
            lambda: F.conv2d(x.double(), ember.randn(2, 1, 3, 3)))
    _raises(RuntimeError, r"Input type \(float\) and bias type \(double\)",
            lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), ember.randn(2).double()))
    _raises(RuntimeError, "expected bias to be 1-dimensional with 2 elements, but got bias of "
            r"size \[3\]", lambda: F.conv2d(x, ember.randn(2, 1, 3, 3), ember.randn(3)))
    _raises(RuntimeError, "expected a 4-D weight", lambda: F.conv2d(x, ember.randn(2, 1, 3)))
    _raises(TypeError, "must be tuple of ints", lambda: F.conv2d(x, ember.randn(2, 1, 3, 3),
                                                                 stride=1.5))


def test_conv_transpose_errors():
    _raises(RuntimeError, "output padding must be smaller than either stride or dilation",
            lambda: F.conv_transpose2d(ember.randn(1, 3, 5, 5), ember.randn(3, 4, 2, 2),
                                       output_padding=1))
    _raises(RuntimeError, r"Given transposed=1, weight of size \[3, 4, 2, 2\], expected "
            r"input\[1, 2, 5, 5\] to have 3 channels, but got 2 channels instead",
            lambda: F.conv_transpose2d(ember.randn(1, 2, 5, 5), ember.randn(3, 4, 2, 2)))
    _raises(RuntimeError, r"Calculated output size per channel: \(-1 x -1\). Output size is "
            "too small", lambda: F.conv_transpose2d(ember.randn(1, 3, 1, 1),
                                                    ember.randn(3, 4, 1, 1), padding=1))
    _raises(RuntimeError, "input to conv_transpose2d",
            lambda: F.conv_transpose2d(ember.randn(5, 5), ember.randn(3, 4, 2, 2)))


def test_pool_errors():
    _raises(RuntimeError, "non-empty 3D or 4D", lambda: F.max_pool2d(ember.randn(5, 5), 2))
    _raises(RuntimeError, r"max_pool1d: Expected 2D or 3D .* but got:\[5\]",
            lambda: F.max_pool1d(ember.randn(5), 2))
    _raises(RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
            "kernel_size=2", lambda: F.max_pool2d(ember.randn(1, 1, 5, 5), 2, padding=2))
    _raises(RuntimeError, r"Given input size: \(1x1x1\). Calculated output size: \(1x0x0\). "
            "Output size is too small", lambda: F.max_pool2d(ember.randn(1, 1, 1, 1), 2))
    _raises(RuntimeError, "stride should not be zero",
            lambda: F.max_pool2d(ember.randn(1, 1, 5, 5), 2, 0))
    _raises(RuntimeError, "pad should be at most half",
            lambda: F.avg_pool2d(ember.randn(1, 1, 5, 5), 2, padding=2))
    _raises(RuntimeError, "divisor must be not zero",
            lambda: F.avg_pool2d(ember.randn(1, 1, 4, 4), 2, divisor_override=0))
    _raises(RuntimeError, r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5\]",
            lambda: F.adaptive_avg_pool2d(ember.randn(5), 2))
    _raises(RuntimeError, "Expected input to have non-zero size for non-batch dimensions",
            lambda: F.adaptive_avg_pool2d(ember.randn(1, 1, 0, 4), 2))
    _raises(RuntimeError, "Expected 2 to 3 dimensions",
            lambda: F.adaptive_max_pool1d(ember.randn(5), 2))
    _raises(TypeError, "must be tuple of ints", lambda: F.max_pool2d(ember.randn(1, 1, 4, 4),
                                                                     2.0))


def test_interpolate_fold_errors():
    x = ember.randn(1, 1, 4, 4)
    _raises(ValueError, "either size or scale_factor should be defined", lambda: F.interpolate(x))
    _raises(ValueError, "only one of size or scale_factor",
            lambda: F.interpolate(x, size=3, scale_factor=2))
    _raises(ValueError, "align_corners option can only be set with the interpolating modes",
            lambda: F.interpolate(x, size=3, align_corners=True))
    _raises(NotImplementedError, "Got 4D input, but linear mode needs 3D input",
            lambda: F.interpolate(x, size=3, mode="linear"))
    _raises(NotImplementedError, "Got 3D input, but bilinear mode needs 4D input",
            lambda: F.interpolate(ember.randn(1, 4, 4), size=3, mode="bilinear"))
    _raises(NotImplementedError, r"\(got foo\)", lambda: F.interpolate(x, size=3, mode="foo"))
    _raises(ValueError, "same number of spatial dimensions",
            lambda: F.interpolate(x, size=(3, 3, 3)))
    _raises(RuntimeError, r"Input and output sizes should be greater than 0, but got input "
            r"\(H: 4, W: 4\) output \(H: 0, W: 0\)",
            lambda: F.interpolate(x, scale_factor=0.1))
    _raises(RuntimeError, "calculated shape of the array of sliding blocks as \\(0, 0\\)",
            lambda: F.unfold(x, 5))
    _raises(RuntimeError, "Expected 2D or 3D", lambda: F.fold(x, (4, 4), 2))
    _raises(RuntimeError, r"sliding blocks 3 \* 3 = 9, but got input.size\(2\)=5",
            lambda: F.fold(ember.randn(1, 4, 5), (4, 4), 2))
    _raises(RuntimeError, "divisible by the product of kernel_size",
            lambda: F.fold(ember.randn(1, 5, 9), (4, 4), 2))
    _raises(RuntimeError, "divisible by the square of upscale_factor",
            lambda: F.pixel_shuffle(ember.randn(1, 5, 2, 2), 2))
    _raises(RuntimeError, "height to be divisible by downscale_factor",
            lambda: F.pixel_unshuffle(ember.randn(1, 1, 3, 4), 2))
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample(x, scale_factor=2)


# ---------------------------------------------------------------------------------------------
# the CNN benchmark's hot path (timing printed, not asserted)


def test_cnn_benchmark_timing(capsys):
    ember.manual_seed(0)
    conv1, conv2 = nn.Conv2d(1, 16, 5), nn.Conv2d(16, 32, 5)
    x = ember.randn(64, 1, 28, 28)

    def step():
        h = F.max_pool2d(ember.relu(conv1(x)), 2)
        h = F.max_pool2d(ember.relu(conv2(h)), 2)
        h.sum().backward()
        return h

    h = step()
    assert h.shape == (64, 32, 4, 4) and h.dtype == ember.float32
    assert conv1.weight.grad.dtype == ember.float32
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    line = f"ember CNN conv/pool fwd+bwd, batch 64: {best * 1e3:.1f} ms"
    if HAVE_TORCH:
        tc1, tc2 = torch.nn.Conv2d(1, 16, 5), torch.nn.Conv2d(16, 32, 5)
        tx = torch.randn(64, 1, 28, 28)
        tbest = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            th = TF.max_pool2d(torch.relu(tc1(tx)), 2)
            TF.max_pool2d(torch.relu(tc2(th)), 2).sum().backward()
            tbest = min(tbest, time.perf_counter() - t0)
        line += f" (torch {tbest * 1e3:.1f} ms)"
    with capsys.disabled():
        print("\n" + line)
