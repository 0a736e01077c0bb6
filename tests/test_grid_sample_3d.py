"""``F.grid_sample`` on 5-D (volumetric) inputs, 'bicubic' on 4-D inputs and NaN grid coordinates
(4-D and 5-D), against PyTorch: values in float64 and float32, gradients by float64 gradcheck and against torch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import HAVE_TORCH, check_op, randn

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
NAN = float("nan")


def _grid(*shape: int, seed: int = 7, lim: float = 1.3) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-lim, lim, shape)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_5d_values_and_gradients(mode, padding, align):
    vol = randn(2, 2, 3, 4, 5)
    grid = _grid(2, 2, 2, 3, 3)
    check_op(lambda m, x, g: m.nn.functional.grid_sample(
        x, g, mode=mode, padding_mode=padding, align_corners=align), vol, grid,
        grad_inputs=(0,) if mode == "nearest" else None)


@needs_torch
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_5d_float32_matches_torch(mode, padding):
    import torch
    vol = randn(1, 2, 7, 3, 5).astype(np.float32)
    grid = _grid(1, 5, 4, 3, 3, seed=3, lim=1.6).astype(np.float32)
    for align in (False, True):
        e = F.grid_sample(ember.tensor(vol), ember.tensor(grid), mode=mode,
                          padding_mode=padding, align_corners=align)
        t = torch.nn.functional.grid_sample(torch.tensor(vol), torch.tensor(grid), mode=mode,
                                            padding_mode=padding, align_corners=align)
        assert e.dtype == ember.float32 and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_grid_sample_5d_identity_through_affine_grid():
    x = ember.randn(2, 3, 4, 5, 6, dtype=ember.float64)
    theta = ember.tensor([[[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0]]] * 2,
                         dtype=ember.float64)
    for align in (False, True):
        g = F.affine_grid(theta, (2, 3, 4, 5, 6), align_corners=align)
        for mode in ("bilinear", "nearest"):
            y = F.grid_sample(x, g, mode=mode, align_corners=align)
            np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)


def test_grid_sample_5d_through_affine_grid_gradients_reach_theta():
    theta = np.array([[[0.9, 0.1, 0.0, 0.05], [-0.1, 1.1, 0.2, 0.0], [0.0, 0.1, 0.8, -0.1]]])
    vol = randn(1, 2, 3, 4, 5)
    check_op(lambda m, x, th: m.nn.functional.grid_sample(
        x, m.nn.functional.affine_grid(th, (1, 2, 3, 2, 4), align_corners=False),
        align_corners=False, padding_mode="border"), vol, theta)


@needs_torch
@pytest.mark.parametrize("ndim", [4, 5])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_nan_coordinates_as_torch(ndim, mode, padding, align):
    # PyTorch's 4-D kernel reads a NaN coordinate as index 0 (border, reflection) and its 5-D
    # kernel as the last index; under 'zeros' it is out of bounds (4-D bilinear: NaN output)
    import torch
    if ndim == 4:
        x = np.arange(1.0, 41.0).reshape(1, 2, 4, 5)
        g = np.array([[[[NAN, 0.0], [0.0, NAN], [NAN, NAN], [0.3, 0.2], [NAN, 0.9],
                        [-2.0, NAN]]]])
    else:
        x = np.arange(1.0, 121.0).reshape(1, 2, 3, 4, 5)
        g = np.array([[[[[NAN, 0, 0], [0, NAN, 0], [0, 0, NAN], [NAN, NAN, NAN],
                         [0.3, 0.2, 0.1], [NAN, 0.9, -0.9], [-2.0, NAN, 0.4]]]]])
    for dt in (np.float64, np.float32):
        e = F.grid_sample(ember.tensor(x.astype(dt)), ember.tensor(g.astype(dt)), mode=mode,
                          padding_mode=padding, align_corners=align)
        t = torch.nn.functional.grid_sample(torch.tensor(x.astype(dt)),
                                            torch.tensor(g.astype(dt)), mode=mode,
                                            padding_mode=padding, align_corners=align)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, equal_nan=True)


@needs_torch
@pytest.mark.parametrize("ndim", [4, 5])
def test_grid_sample_nan_coordinates_input_gradient_as_torch(ndim):
    # the NaN sample adds nothing to the input's gradient (no NaN leaks into it)
    import torch
    x = randn(1, 2, *((3, 4, 5) if ndim == 5 else (4, 5)))
    g = _grid(1, 2, 3, ndim - 2, seed=1) if ndim == 4 else _grid(1, 1, 2, 3, 3, seed=1)
    g.reshape(-1, ndim - 2)[1, 0] = NAN
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    F.grid_sample(ex, ember.tensor(g), padding_mode="zeros", align_corners=False).nansum() \
        .backward()
    torch.nn.functional.grid_sample(tx, torch.tensor(g), padding_mode="zeros",
                                    align_corners=False).nansum().backward()
    assert not np.isnan(ex.grad.numpy()).any()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_grid_sample_5d_errors_as_torch():
    x = ember.randn(2, 3, 4, 5, 6)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x, ember.zeros(2, 2, 3, 4, 3), mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        F.grid_sample(x, ember.zeros(2, 2, 3, 4, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        F.grid_sample(x, ember.zeros(2, 2, 3, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(x, ember.zeros(1, 2, 3, 4, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(ember.randn(2, 3, 5, 6), ember.zeros(2, 2, 3, 4, 3), align_corners=False)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_bicubic_4d_values_and_gradients(padding, align):
    img = randn(2, 2, 4, 5)
    grid = _grid(2, 3, 2, 2, seed=5, lim=1.4)
    check_op(lambda m, x, g: m.nn.functional.grid_sample(
        x, g, mode="bicubic", padding_mode=padding, align_corners=align), img, grid)


@needs_torch
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_bicubic_float32_and_nan_as_torch(padding):
    import torch
    x = randn(2, 3, 5, 6).astype(np.float32)
    g = _grid(2, 4, 3, 2, seed=2, lim=1.5).astype(np.float32)
    g[0, 0, 0, 0] = NAN
    g[1, 2, 2] = NAN
    for align in (False, True):
        e = F.grid_sample(ember.tensor(x), ember.tensor(g), mode="bicubic", padding_mode=padding,
                          align_corners=align)
        t = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode="bicubic",
                                            padding_mode=padding, align_corners=align)
        assert e.dtype == ember.float32
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5, equal_nan=True)
