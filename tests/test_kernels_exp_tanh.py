"""The float32 exp kernel (ember/_kernels.c, k_exp_f32: a double-float exp rounded once) behind
``torch.exp``: within 0.56 ulp of float64 ground truth over a dense sweep of the float32 line
(0.75 where the result is subnormal),
its edges, the same bits at 1 and 2 threads (the instruction-set variants:
tests/test_kernels_f32.py), and the ops that take it."""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels import ulps

import ember
from ember import _kernels_loader as L

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _sweep(stride: int = 128) -> np.ndarray:
    """Every ``stride``-th float32 in [-120, 88.72] (subnormal results, +-0 and the largest
    finite ones included)."""
    def line(top: float) -> np.ndarray:
        return np.arange(0, int(np.float32(top).view(np.uint32)) + 1, stride,
                         dtype=np.uint32).view(np.float32)
    return np.concatenate([line(88.72), -line(120.0)])


@needs_kernels
def test_exp_is_within_one_ulp_over_a_dense_sweep() -> None:
    x = _sweep()
    assert x.size > 1 << 24
    exact = np.exp(x.astype(np.float64))
    got = L.exp(x)
    assert got.dtype == np.float32
    normal = exact >= 2.0**-126
    assert ulps(got[normal], exact[normal]) < 0.57  # (NumPy's float32 exp on AVX2: 2.5 here)
    assert ulps(got, exact) < 0.76


@needs_kernels
def test_exp_edges() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72283, 88.7229, 89.0, 1e30, 3.4e38,
                  -87.33655, -103.97, -103.98, -104.0, -150.0, -1e30, -3.4e38, 1e-45, -1e-45],
                 np.float32)
    got = L.exp(x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:5], [np.inf, 0.0, 1.0, 1.0])
    assert got[5] == np.float32(3.4027985e38) and np.all(got[6:10] == np.inf)
    assert got[10] == np.float32(2.0**-126) * np.float32(1.0000001) or got[10] > 0
    assert got[11] == np.float32(1e-45) and np.all(got[13:17] == 0.0)
    assert not np.signbit(got[13:17]).any()
    assert np.all(got[17:] == 1.0)
    with np.errstate(over="ignore"):
        exact = np.exp(x[10:13].astype(np.float64))
    assert ulps(got[10:13], exact) < 0.76


@needs_kernels
def test_exp_gives_the_same_bits_at_1_and_2_threads() -> None:
    x = (np.random.default_rng(4).standard_normal(3_000_017) * 20).astype(np.float32)
    before = ember.get_num_threads()
    try:
        res = []
        for n in (1, 2):
            ember.set_num_threads(n)
            res.append(L.exp(x))
    finally:
        ember.set_num_threads(before)
    assert res[0].tobytes() == res[1].tobytes()


@needs_kernels
def test_the_exp_ops_take_the_kernel() -> None:
    x = (np.random.default_rng(5).standard_normal(70_001) * 10).astype(np.float32)
    want = L.exp(x).tobytes()
    t = ember.tensor(x)
    with ember.no_grad():
        assert ember.exp(t).numpy().tobytes() == want
        assert t.exp().numpy().tobytes() == want
        assert t.clone().exp_().numpy().tobytes() == want
    leaf = ember.tensor(x[:1000], requires_grad=True)
    y = leaf.exp()
    assert y.dtype == ember.float32
    y.backward(ember.ones_like(y))
    assert leaf.grad.numpy().tobytes() == y.detach().numpy().tobytes()  # grad * out, grad 1
    with L.disabled():  # the NumPy formula: within NumPy's own few ulps of the kernel's
        off = ember.exp(t).numpy()
    assert ulps(off, L.exp(x).astype(np.float64)) < 3.0
    x64 = x.astype(np.float64)  # float64 keeps NumPy's exp
    assert ember.exp(ember.tensor(x64)).numpy().tobytes() == np.exp(x64).tobytes()


def _tanh_sweep(stride: int = 128) -> np.ndarray:
    bits = np.arange(0, int(np.float32(12.0).view(np.uint32)) + 1, stride, dtype=np.uint32)
    pos = bits.view(np.float32)
    return np.concatenate([pos, -pos])


@needs_kernels
def test_tanh_is_within_one_ulp_over_a_dense_sweep() -> None:
    x = _tanh_sweep()
    assert x.size > 1 << 23
    got = L.tanh(x)
    assert got.dtype == np.float32
    assert ulps(got, np.tanh(x.astype(np.float64))) < 1.0


@needs_kernels
def test_tanh_edges() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 2.44e-4, -2.45e-4, 9.0, 9.1,
                  -9.1, 20.0, 1e30, -3.4e38], np.float32)
    got = L.tanh(x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:3], [1.0, -1.0])
    assert got[3] == 0.0 and not np.signbit(got[3]) and got[4] == 0.0 and np.signbit(got[4])
    np.testing.assert_array_equal(got[5:7], x[5:7])  # tanh(x) = x, subnormals kept
    np.testing.assert_array_equal(got[10:], [1.0, -1.0, 1.0, 1.0, -1.0])
    assert ulps(got[1:], np.tanh(x[1:].astype(np.float64))) < 1.0


@needs_kernels
def test_tanh_gives_the_same_bits_at_1_and_2_threads() -> None:
    x = (np.random.default_rng(6).standard_normal(3_000_017) * 3).astype(np.float32)
    before = ember.get_num_threads()
    try:
        res = []
        for n in (1, 2):
            ember.set_num_threads(n)
            res.append(L.tanh(x))
    finally:
        ember.set_num_threads(before)
    assert res[0].tobytes() == res[1].tobytes()


@needs_kernels
def test_the_tanh_ops_take_the_kernel() -> None:
    x = (np.random.default_rng(7).standard_normal(70_001) * 3).astype(np.float32)
    want = L.tanh(x).tobytes()
    t = ember.tensor(x)
    with ember.no_grad():
        for got in (ember.tanh(t), t.tanh(), t.clone().tanh_(), ember.nn.functional.tanh(t),
                    ember.nn.Tanh()(t)):
            assert got.numpy().tobytes() == want
    leaf = ember.tensor(x[:1000], requires_grad=True)
    y = leaf.tanh()
    y.backward(ember.ones_like(y))
    yn = y.detach().numpy()
    assert leaf.grad.numpy().tobytes() == (1 - yn * yn).tobytes()  # grad (1 - y y), grad 1
    with L.disabled():  # NumPy's tanh: within its own ulps of the kernel's
        off = ember.tanh(t).numpy()
    assert ulps(off, L.tanh(x).astype(np.float64)) < 3.0
