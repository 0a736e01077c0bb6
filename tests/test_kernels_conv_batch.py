"""Convolution's GEMM-floor paths (issue 29, session 2026-12-06): pointwise 1 x 1 convolutions
(``_kernels._pointwise_*``: no columns, any stride), the batch-inner layout's transposes and col2im
as eager kernels (``_kernels_loader.to_batch_inner`` / ``from_batch_inner`` /
``im2col_batch_inner`` / ``col2im_batch_inner``: bit for bit the NumPy path, at 1 and 2 threads), batch tiles of even size
and per-image columns for a small image of many taps (ResNet's 7x7/2 stem). Each against a
float64 NumPy reference and PyTorch, gradients by float64 gradcheck.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from ember.ops.nn import _kernels as kern
from ember.ops.nn import convolution as conv
from helpers import check_op, count_calls

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _ref_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: tuple,
              pad: tuple = (0, 0), dil: tuple = (1, 1)) -> np.ndarray:
    """A float64 loop-over-taps convolution (one group)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    N, C, Hp, Wp = xp.shape
    O, _, kh, kw = w.shape
    OH = (Hp - dil[0] * (kh - 1) - 1) // stride[0] + 1
    OW = (Wp - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((N, O, OH, OW))
    for i in range(kh):
        for j in range(kw):
            v = xp[:, :, i * dil[0]:i * dil[0] + (OH - 1) * stride[0] + 1:stride[0],
                   j * dil[1]:j * dil[1] + (OW - 1) * stride[1] + 1:stride[1]]
            y += np.einsum("nchw,oc->nohw", v, w[:, :, i, j].astype(np.float64))
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _grads(x, w, b, stride, pad=0, dil=1, seed=5):
    xt = ember.tensor(x, requires_grad=True)
    wt = ember.tensor(w, requires_grad=True)
    bt = None if b is None else ember.tensor(b, requires_grad=True)
    y = F.conv2d(xt, wt, bt, stride, pad, dil)
    gy = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(x.dtype)
    y.backward(ember.tensor(gy))
    out = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    return out + ([] if b is None else [bt.grad.numpy()]), gy


# (N, C, H, W, O, stride, bias): stride 1 and 2, rectangular stride, one output pixel (ResNet's
# last downsample), an odd size whose last row the stride skips
POINTWISE = [
    (4, 6, 5, 7, 3, (1, 1), True),
    (8, 5, 8, 8, 7, (2, 2), False),
    (3, 4, 7, 9, 5, (2, 3), True),
    (6, 8, 2, 2, 9, (2, 2), True),
    (2, 3, 7, 7, 4, (3, 3), False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", POINTWISE)
def test_pointwise_conv_against_the_float64_reference(shape, dtype, monkeypatch) -> None:
    """A 1 x 1 convolution runs pointwise (forward, input and weight gradient) and gives the
    reference's output and gradients (the adjoint sums written out in float64)."""
    N, C, H, W, O, s, bias = shape
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((O, C, 1, 1)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype) if bias else None
    fwd = count_calls(monkeypatch, conv, "_pointwise_forward")
    ig = count_calls(monkeypatch, conv, "_pointwise_input_grad")
    wg = count_calls(monkeypatch, conv, "_pointwise_weight_grad")
    out, gy = _grads(x, w, b, s)
    assert fwd["n"] == ig["n"] == wg["n"] == 1
    y = _ref_conv(x, w, b, s)
    OH, OW = y.shape[2:]
    xs = x.astype(np.float64)[:, :, :(OH - 1) * s[0] + 1:s[0], :(OW - 1) * s[1] + 1:s[1]]
    g64 = gy.astype(np.float64)
    gx = np.zeros((N, C, H, W))
    gx[:, :, :(OH - 1) * s[0] + 1:s[0], :(OW - 1) * s[1] + 1:s[1]] = np.einsum(
        "nohw,oc->nchw", g64, w[:, :, 0, 0].astype(np.float64))
    gw = np.einsum("nohw,nchw->oc", g64, xs).reshape(O, C, 1, 1)
    refs = [y, gx, gw] + ([] if b is None else [g64.sum(axis=(0, 2, 3))])
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, r in zip(out, refs):
        assert a.dtype == dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, **tol)


@pytest.mark.parametrize("stride", [1, 2])
def test_pointwise_conv_gradcheck_and_torch(stride) -> None:
    """float64 gradcheck and gradgradcheck (the double backward runs the pointwise ops again),
    PyTorch parity, at stride 1 and 2."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((5, 4, 1, 1))
    b = rng.standard_normal(5)
    check_op(lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride), x, w, b,
             ref=lambda x, w, b: _ref_conv(x, w, b, (stride, stride)), gradgrad=True,
             atol=1e-10, rtol=1e-10)


def test_pointwise_conv_transpose_with_output_padding() -> None:
    """A 1 x 1 transposed convolution at stride 2 with output padding: the pointwise input
    gradient's placement on a larger image (the padding rows stay zero), against PyTorch's
    rule written out."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 3))
    w = rng.standard_normal((4, 6, 1, 1))

    def ref(x, w):
        y = np.zeros((2, 6, 6, 6))
        y[:, :, ::2, ::2] = np.einsum("nchw,co->nohw", x, w[:, :, 0, 0])
        return y

    check_op(lambda m, x, w: m.nn.functional.conv_transpose2d(x, w, None, 2, 0, 1), x, w,
             ref=ref, gradgrad=True, atol=1e-10, rtol=1e-10)


def test_pointwise_not_taken_with_padding_groups_or_dilation_still_right(monkeypatch) -> None:
    """Padding or groups leave a 1 x 1 convolution to the column paths; dilation does not
    matter to a 1 x 1 kernel (pointwise). Either way the reference's values."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4, 1, 1)).astype(np.float32)
    calls = count_calls(monkeypatch, conv, "_pointwise_forward")
    y = F.conv2d(ember.tensor(x), ember.tensor(w), None, 2, 1).numpy()
    np.testing.assert_allclose(y, _ref_conv(x, w, None, (2, 2), (1, 1)), rtol=1e-5, atol=1e-5)
    wg = rng.standard_normal((6, 2, 1, 1)).astype(np.float32)
    yg = F.conv2d(ember.tensor(x), ember.tensor(wg), None, 1, 0, 1, 2).numpy()
    ref = np.concatenate([_ref_conv(x[:, :2], wg[:3], None, (1, 1)),
                          _ref_conv(x[:, 2:], wg[3:], None, (1, 1))], axis=1)
    np.testing.assert_allclose(yg, ref, rtol=1e-5, atol=1e-5)
    assert calls["n"] == 0
    yd = F.conv2d(ember.tensor(x), ember.tensor(w), None, 2, 0, 3).numpy()
    np.testing.assert_allclose(yd, _ref_conv(x, w, None, (2, 2)), rtol=1e-5, atol=1e-5)
    assert calls["n"] == 1


def test_pointwise_conv1d() -> None:
    """conv1d with a 1-tap kernel (a height-1 image) takes the same path."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 9))
    w = rng.standard_normal((2, 4, 1))
    check_op(lambda m, x, w: m.nn.functional.conv1d(x, w, None, 2), x, w,
             ref=lambda x, w: np.einsum("ncl,oc->nol", x[:, :, ::2], w[:, :, 0]),
             atol=1e-10, rtol=1e-10)


# (N, C, H, O, k, stride, pad, dilation): batch-inner convolutions (outputs of at most 64
# pixels, batch of 8 or more): ResNet's 3x3 stages, a strided one, a dilated one, a 2x2 kernel
BATCH_INNER = [
    (8, 8, 8, 6, 3, 1, 1, 1),
    (9, 4, 8, 7, 3, 2, 1, 1),
    (8, 5, 6, 4, 3, 1, 2, 2),
    (10, 6, 4, 5, 2, 1, 0, 1),
]


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", BATCH_INNER)
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_inner_kernels_are_the_numpy_path_bit_for_bit(shape, dtype, threads,
                                                            monkeypatch) -> None:
    """The batch-inner convolution with the kernels on (transposes, col2im) and off: output and
    gradients bit for bit (the same products on the same columns; col2im's same sums in the same
    order), at 1 and 2 kernel threads; and within rounding of the float64 reference."""
    N, C, H, O, k, s, p, d = shape
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, C, H, H)).astype(dtype)
    w = rng.standard_normal((O, C, k, k)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    g = kern._Geom((H, H), (k, k), (s, s), ((p, p), (p, p)), (d, d), n=N, cin=C)
    assert g.batch and not g.rows
    with L.disabled():
        off, _ = _grads(x, w, b, s, p, d)
    calls = {n: count_calls(monkeypatch, L, n) for n in ("to_batch_inner", "from_batch_inner",
                                                  "col2im_batch_inner", "im2col_batch_inner")}
    before = L.active.get_num_threads()
    L.set_num_threads(threads)
    try:
        with L.enabled():
            on, _ = _grads(x, w, b, s, p, d)
    finally:
        L.set_num_threads(before)
    assert all(c["n"] > 0 for c in calls.values())
    for a, c in zip(on, off):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, c)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(on[0], _ref_conv(x, w, b, (s, s), (p, p), (d, d)), rtol=tol,
                               atol=tol)


@needs_kernels
def test_batch_inner_kernels_direct() -> None:
    """The kernels against NumPy's copies and adds: to_batch_inner pads and transposes,
    from_batch_inner crops and transposes back, col2im_batch_inner sums taps (padding taps
    dropped), im2col_batch_inner copies the padded windows; bad geometry or sizes refused."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
    buf = L.to_batch_inner(x, (2, 7, 6, 3), (2, 1))
    want = np.zeros((2, 7, 6, 3), np.float32)
    want[:, 2:6, 1:6] = x.transpose(1, 2, 3, 0)
    np.testing.assert_array_equal(buf, want)
    np.testing.assert_array_equal(L.from_batch_inner(buf, x.shape, (2, 1)), x)
    g = kern._Geom((4, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), n=3, cin=2)
    cols = rng.standard_normal((2 * 9, g.OH * g.OW * 3)).astype(np.float32)
    geom = (3, 2, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, g.OH, g.OW)
    got = L.col2im_batch_inner(cols, (3, 2, 4, 5), geom)
    c = cols.reshape(2, 3, 3, g.OH, g.OW, 3)
    img = np.zeros((2, 6, 7, 3), np.float32)
    for i in range(3):
        for j in range(3):
            img[:, i:i + g.OH, j:j + g.OW] += c[:, i, j]
    np.testing.assert_array_equal(got, img[:, 1:5, 1:6].transpose(3, 0, 1, 2))
    for shape in BATCH_INNER:  # im2col_batch_inner: the NumPy path's strided copy
        N, C, H, _, k, s, p, d = shape
        xi = rng.standard_normal((N, C, H, H))
        gi = kern._Geom((H, H), (k, k), (s, s), ((p, p), (p, p)), (d, d), n=N, cin=C)
        want = kern._cols(np, kern._conv_input(np, xi, gi), gi, 1)
        got = L.im2col_batch_inner(xi, want.shape, (N, C, H, H, k, k, s, s, p, p, d, d, gi.OH,
                                                    gi.OW))
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        L.active.im2col_batch_inner(x, cols[:-1], geom)
    with pytest.raises(ValueError):
        L.active.to_batch_inner(x, np.empty((2, 5, 6, 3), np.float32), (3, 2, 4, 5, 5, 6, 2, 1))
    with pytest.raises(ValueError):
        L.active.col2im_batch_inner(cols[:-1], np.empty((3, 2, 4, 5), np.float32), geom)
    with pytest.raises(TypeError):
        L.active.from_batch_inner(buf, np.empty(x.shape, np.float64), (3, 2, 4, 5, 7, 6, 2, 1))


def test_batch_tiles_are_even() -> None:
    """Tiles split the batch evenly (no small last tile), each within the cap; the gradients'
    ops tile at a larger cap."""
    g = kern._Geom((8, 8), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), n=32, cin=64)
    step = kern._batch_step(g, 32, 576, 64, 4)
    assert 1 < step < 32
    assert step * 576 * g.L * 4 <= kern._COLS_CAP_MIN
    tiles = [min(step, 32 - n0) for n0 in range(0, 32, step)]
    assert max(tiles) - min(tiles) <= 1
    assert kern._batch_step(g, 32, 576, 64, 4, grad=True) >= step


def test_tiled_conv_matches_untiled(monkeypatch) -> None:
    """A batch-inner convolution in even tiles: output and input gradient as untiled (the same
    sums per element), weight gradient within rounding (tiles' partial sums)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((24, 8, 8, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    whole, _ = _grads(x, w, None, 1, 1)
    monkeypatch.setattr(kern, "_COLS_CAP_MIN", 8 * 72 * 64 * 4 * 10)  # 10 images: 8, 8, 8 tiles
    tiled, _ = _grads(x, w, None, 1, 1)
    np.testing.assert_allclose(tiled[0], whole[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tiled[1], whole[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tiled[2], whole[2], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stem_7x7_stride_2_per_image(dtype, monkeypatch) -> None:
    """ResNet's stem (3 channels, 7x7 stride 2 pad 3: 147 taps, a small image) takes per-image
    columns and matches the reference; float64 gradcheck on a smaller batch."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 3, 32, 32)).astype(dtype)
    w = rng.standard_normal((8, 3, 7, 7)).astype(dtype)
    g = kern._Geom((32, 32), (7, 7), (2, 2), ((3, 3), (3, 3)), (1, 1), n=4, cin=3)
    assert g.image
    out, gy = _grads(x, w, None, 2, 3)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out[0], _ref_conv(x, w, None, (2, 2), (3, 3)), rtol=tol, atol=tol)
    xs = rng.standard_normal((2, 3, 12, 12))
    ws = rng.standard_normal((2, 3, 7, 7))
    monkeypatch.setattr(kern, "_IMAGE_MIN_PIXELS", 1)  # (a 6x6 output: per image still)
    check_op(lambda m, x, w: m.nn.functional.conv2d(x, w, None, 2, 3), xs, ws,
             ref=lambda x, w: _ref_conv(x, w, None, (2, 2), (3, 3)), atol=1e-10, rtol=1e-10)
