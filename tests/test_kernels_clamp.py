"""The clamp eager kernel (ember/_kernels.c "clamp"), behind clamp/clamp_min/clamp_max with number
bounds and ReLU on float32/float64 arrays: the NumPy path's values bit for bit (NaN kept, -0.0 kept
at a tie with the bound, lo > hi gives hi), PyTorch's too, at 1 and 2 threads."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from helpers import torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")

EDGES = np.array([-0.0, 0.0, np.nan, -1, 2, -np.inf, np.inf, 0.5, -2.5, 1e-45, 3e38], np.float64)
BOUNDS = [(0, None), (-1, 1), (None, 0.5), (2, 1), (0.0, 0.0), (-0.0, None), (0.3, 1e30),
          (-np.inf, np.inf), (np.float32(0.1), None), (None, -7)]


def _values(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = np.concatenate([np.tile(EDGES, 500), rng.standard_normal(20_011) * 3]).astype(dtype)
    return x


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo,hi", BOUNDS)
def test_clamp_kernel_equals_the_numpy_path(dtype, lo, hi) -> None:
    x = _values(dtype)
    got = L.clamp(x, lo, hi)
    assert got is not None and got.dtype == dtype
    with L.disabled():
        ref = ember.tensor(x).clamp(lo, hi).numpy()
    assert got.tobytes() == ref.tobytes()
    assert ember.tensor(x).clamp(lo, hi).numpy().tobytes() == got.tobytes()


@needs_kernels
def test_relu_takes_the_kernel_and_keeps_its_values() -> None:
    x = _values(np.float32)
    t = ember.tensor(x, requires_grad=True)
    y = ember.nn.functional.relu(t)
    with L.disabled():
        ref = ember.nn.functional.relu(ember.tensor(x)).detach().numpy()
    assert y.detach().numpy().tobytes() == ref.tobytes()
    y.sum().backward()  # (the saved output drives the backward as before)
    np.testing.assert_array_equal(t.grad.numpy(), np.where(~(ref <= 0), 1, 0).astype(np.float32))


@needs_kernels
def test_clamp_kernel_declines_what_it_does_not_handle() -> None:
    x = _values(np.float32)
    assert L.clamp(x, np.nan, None) is None  # a NaN bound: NumPy's rule (NaN everywhere)
    assert L.clamp(x, 2**60, None) is None  # an int that float32 would round twice
    assert L.clamp(x.astype(np.int32), 0, 1) is None
    assert L.clamp(x[:100], 0, 1) is None  # small: NumPy's call
    assert L.clamp(x[::2], 0, 1) is None  # strided
    nan_lo = ember.tensor(x).clamp(float("nan"), None).numpy()
    assert np.isnan(nan_lo).all()


@needs_kernels
def test_clamp_kernel_gives_the_same_bits_at_1_and_2_threads() -> None:
    x = np.random.default_rng(1).standard_normal(1 << 21).astype(np.float32)
    before = ember.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            outs.append(L.clamp(x, -0.5, 0.5))
    finally:
        ember.set_num_threads(before)
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lo,hi", BOUNDS)
def test_clamp_and_relu_match_pytorch_bit_for_bit(dtype, lo, hi) -> None:
    x = _values(getattr(np, dtype))
    lo_t = float(lo) if lo is not None else None
    hi_t = float(hi) if hi is not None else None
    a = ember.tensor(x).clamp(lo_t, hi_t).numpy()
    b = torch.tensor(x).clamp(lo_t, hi_t).numpy()
    assert a.tobytes() == b.tobytes()
    assert (ember.relu(ember.tensor(x)).numpy().tobytes()
            == torch.relu(torch.tensor(x)).numpy().tobytes())


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_kernel_equals_the_masked_path(dtype) -> None:
    """res = out <= 0 ? +0 : grad: a NaN output passes the gradient, -0.0 and +0 outputs stop it,
    grad's NaN/inf/-0.0 pass where kept; the same bits as the NumPy path's bitwise AND."""
    from ember.ops.pointwise_piecewise import _keep_where_blocks

    rng = np.random.default_rng(3)
    out = np.maximum(0, rng.standard_normal(70_001)).astype(dtype)
    grad = rng.standard_normal(70_001).astype(dtype)
    out[:6] = [np.nan, -0.0, 0.0, -np.nan, 1.0, 2.0]
    grad[:6] = [-0.0, 1.0, np.inf, np.nan, np.nan, -0.0]
    got = L.relu_backward(out, grad)
    assert got.tobytes() == _keep_where_blocks(grad, out).tobytes()
    x = ember.tensor(rng.standard_normal(70_001).astype(dtype), requires_grad=True)
    y = ember.relu(x)
    g = ember.tensor(grad)
    y.backward(g)
    with L.disabled():
        x2 = ember.tensor(x.detach().numpy(), requires_grad=True)
        ember.relu(x2).backward(g)
    assert x.grad.numpy().tobytes() == x2.grad.numpy().tobytes()
