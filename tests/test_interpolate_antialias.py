"""``F.interpolate(..., antialias=True)`` ('bilinear', 'bicubic') and plain 'bicubic' against
PyTorch: values over many size pairs (float64 tight, float32 within 1e-5), gradients by float64
gradcheck and against torch's, and the argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import HAVE_TORCH, check_op, randn

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")

# (input H, W) -> output size or scale factor: downscale by 1.3, 2, 3.7 and non-integer factors,
# identity, upscale, one side each way, down to one pixel
SIZES = [(23, 17, dict(size=(17, 13))), (20, 16, dict(size=(10, 8))),
         (37, 26, dict(size=(10, 7))), (23, 17, dict(size=(7, 5))),
         (23, 17, dict(size=(23, 17))), (9, 7, dict(size=(20, 15))),
         (23, 17, dict(size=(6, 40))), (12, 9, dict(size=(1, 1))),
         (26, 20, dict(scale_factor=1 / 1.3)), (30, 22, dict(scale_factor=0.5)),
         (37, 29, dict(scale_factor=1 / 3.7)), (19, 23, dict(scale_factor=(0.37, 0.81))),
         (10, 12, dict(scale_factor=1.7)),
         (25, 21, dict(scale_factor=0.77, recompute_scale_factor=True))]


def _both(mode: str, antialias: bool, align: bool, kw: dict, x: np.ndarray) -> tuple:
    import torch
    e = F.interpolate(ember.tensor(x), mode=mode, antialias=antialias, align_corners=align, **kw)
    t = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, antialias=antialias,
                                        align_corners=align, **kw)
    return e, t


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("align", [False, True])
def test_values_match_torch_over_size_pairs(mode, antialias, align):
    for k, (h, w, kw) in enumerate(SIZES):
        x = randn(2, 3, h, w, seed=k)
        e, t = _both(mode, antialias, align, kw, x)
        assert tuple(e.shape) == tuple(t.shape), (kw, tuple(e.shape), tuple(t.shape))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12, err_msg=str(kw))
        e, t = _both(mode, antialias, align, kw, x.astype(np.float32))
        assert e.dtype == ember.float32
        scale = float(np.abs(t.numpy()).max())
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=str(kw))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(4, 3), (3, 5), (13, 4)])
@pytest.mark.parametrize("align", [False, True])
def test_antialias_gradients(mode, size, align):
    # float64 gradcheck and torch's gradient for the same cotangent (check_op)
    check_op(lambda m, x: m.nn.functional.interpolate(
        x, size=size, mode=mode, antialias=True, align_corners=align), randn(1, 2, 9, 7))


@pytest.mark.parametrize("size", [(5, 4), (12, 9)])
@pytest.mark.parametrize("align", [False, True])
def test_bicubic_gradients(size, align):
    check_op(lambda m, x: m.nn.functional.interpolate(
        x, size=size, mode="bicubic", align_corners=align), randn(1, 2, 7, 6))


@needs_torch
def test_upscaling_antialias_is_plain_bilinear_but_not_plain_bicubic():
    # as PyTorch: the stretched triangle is bilinear's when upscaling; its antialiased bicubic
    # uses a = -0.5 (PIL's) against plain bicubic's -0.75
    x = randn(1, 2, 6, 5)
    for mode, same in (("bilinear", True), ("bicubic", False)):
        e_aa, t_aa = _both(mode, True, False, dict(size=(13, 11)), x)
        e_pl, _ = _both(mode, False, False, dict(size=(13, 11)), x)
        assert np.allclose(e_aa.numpy(), e_pl.numpy(), atol=1e-12) is same
        np.testing.assert_allclose(e_aa.numpy(), t_aa.numpy(), atol=1e-12)


def test_antialias_argument_errors_as_torch():
    x = ember.randn(1, 2, 8, 8)
    for mode in ("nearest", "area", "nearest-exact"):
        with pytest.raises(ValueError, match="Anti-alias option is restricted"):
            F.interpolate(x, size=(3, 3), mode=mode, antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(ember.randn(1, 2, 8), size=3, mode="linear", antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(ember.randn(1, 2, 8, 8, 8), size=(3, 3, 3), mode="trilinear",
                      antialias=True)


def test_antialias_downscale_is_a_normalised_average():
    # a constant image stays constant; the weights of each output sum to 1
    x = ember.full((1, 1, 31, 17), 2.5, dtype=ember.float64)
    for mode in ("bilinear", "bicubic"):
        y = F.interpolate(x, size=(4, 3), mode=mode, antialias=True)
        np.testing.assert_allclose(y.numpy(), 2.5, rtol=1e-14)


@needs_torch
def test_long_axis_beyond_the_dense_matrix_cap_matches_torch():
    # 9000 -> 500 along W is over _resample._DENSE_MAX_ENTRIES: the tap path instead of the matrix
    from ember.ops.nn import _resample
    assert 500 * 9000 > _resample._DENSE_MAX_ENTRIES
    x = randn(1, 2, 3, 9000)
    for mode in ("bilinear", "bicubic"):
        e, t = _both(mode, True, False, dict(size=(2, 500)), x)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-11, atol=1e-12)
        ex = ember.tensor(x, requires_grad=True)
        F.interpolate(ex, size=(2, 500), mode=mode, antialias=True).sum().backward()
        ex2 = ember.tensor(x[..., :900], requires_grad=True)  # dense: the same per-input total
        F.interpolate(ex2, size=(2, 50), mode=mode, antialias=True).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy()[..., 450], ex2.grad.numpy()[..., 450],
                                   rtol=1e-12)


@pytest.mark.parametrize("mode,align", [("trilinear", False), ("trilinear", True),
                                        ("nearest", None), ("nearest-exact", None),
                                        ("area", None)])
@pytest.mark.parametrize("kw", [dict(size=(2, 5, 3)), dict(scale_factor=(0.5, 1.5, 1.3))])
def test_5d_interpolate_values_and_gradients(mode, align, kw):
    check_op(lambda m, x: m.nn.functional.interpolate(x, mode=mode, align_corners=align, **kw),
             randn(1, 2, 4, 3, 5))


@needs_torch
def test_5d_interpolate_float32_matches_torch():
    import torch
    x = randn(2, 3, 7, 6, 9, seed=4).astype(np.float32)
    for mode, align in (("trilinear", False), ("trilinear", True), ("nearest", None),
                        ("area", None)):
        for kw in (dict(size=(3, 4, 5)), dict(size=(14, 6, 20)), dict(scale_factor=1.7)):
            e = F.interpolate(ember.tensor(x), mode=mode, align_corners=align, **kw)
            t = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, align_corners=align,
                                                **kw)
            assert e.dtype == ember.float32 and tuple(e.shape) == tuple(t.shape)
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
