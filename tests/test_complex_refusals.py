"""Complex tensors (issue 32): the ops PyTorch does not define on them (orderings, max/min,
sort/topk, clamp/relu, floor/ceil/round, unique...) raise PyTorch's exception class, as the
installed PyTorch does; and complex random numbers (``randn``/``rand``/``*_like``/``normal_``/
``uniform_`` with a complex dtype) draw PyTorch's numbers bit for bit (each part from the real
dtype's stream, view_as_real order; normals with variance 1/2 per part). Both cores (a
subprocess reruns this file with ``EMBER_PURE_PYTHON=1``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from helpers import rerun_on_pure_python

torch = pytest.importorskip("torch")

REFUSED = {
    "lt": lambda L, z, w: z < w, "gt": lambda L, z, w: z > w, "le": lambda L, z, w: z <= w,
    "ge": lambda L, z, w: z >= w, "lt_number": lambda L, z, w: z < 1,
    "real_lt_complex": lambda L, z, w: z.real < w, "torch_lt": lambda L, z, w: L.lt(z, w),
    "max": lambda L, z, w: z.max(), "max_dim": lambda L, z, w: z.max(0),
    "min": lambda L, z, w: z.min(), "min_dim": lambda L, z, w: L.min(z, 0),
    "max_other": lambda L, z, w: L.max(z, w), "maximum": lambda L, z, w: L.maximum(z, w),
    "minimum": lambda L, z, w: L.minimum(z, w), "fmax": lambda L, z, w: L.fmax(z, w),
    "fmin": lambda L, z, w: L.fmin(z, w), "amax": lambda L, z, w: z.amax(),
    "amin": lambda L, z, w: z.amin(0), "aminmax": lambda L, z, w: L.aminmax(z),
    "argmax": lambda L, z, w: z.argmax(), "argmin": lambda L, z, w: z.argmin(0),
    "sort": lambda L, z, w: z.sort(), "argsort": lambda L, z, w: z.argsort(),
    "msort": lambda L, z, w: L.msort(z), "topk": lambda L, z, w: z.topk(2),
    "kthvalue": lambda L, z, w: z.kthvalue(1), "median": lambda L, z, w: z.median(),
    "median_dim": lambda L, z, w: z.median(0), "nanmedian": lambda L, z, w: z.nanmedian(),
    "mode": lambda L, z, w: z.mode(), "cummax": lambda L, z, w: z.cummax(0),
    "cummin": lambda L, z, w: z.cummin(0), "clamp": lambda L, z, w: z.clamp(0, 1),
    "clamp_min": lambda L, z, w: z.clamp_min(0), "clamp_max": lambda L, z, w: z.clamp(max=1),
    "clamp_tensor": lambda L, z, w: z.clamp(w.real, w.real + 1), "clip": lambda L, z, w: z.clip(0, 1),
    "clamp_": lambda L, z, w: z.clone().clamp_(0, 1), "relu": lambda L, z, w: L.relu(z),
    "relu_": lambda L, z, w: z.clone().relu_(), "F.relu": lambda L, z, w: L.nn.functional.relu(z),
    "floor": lambda L, z, w: z.floor(), "ceil": lambda L, z, w: z.ceil(),
    "trunc": lambda L, z, w: z.trunc(), "round": lambda L, z, w: z.round(),
    "round_decimals": lambda L, z, w: z.round(decimals=2), "floor_": lambda L, z, w: z.floor_(),
    "unique": lambda L, z, w: L.unique(z), "unique_consecutive": lambda L, z, w: z.unique_consecutive(),
    # the activations that clamp or compare (NotImplementedError, as PyTorch's)
    "hardtanh": lambda L, z, w: L.nn.functional.hardtanh(z),
    "hardtanh_bounds": lambda L, z, w: L.nn.functional.hardtanh(z, -2.0, 2.0),
    "hardtanh_": lambda L, z, w: L.nn.functional.hardtanh_(z.clone()),
    "relu6": lambda L, z, w: L.nn.functional.relu6(z),
    "relu6_inplace": lambda L, z, w: L.nn.functional.relu6(z.clone(), inplace=True),
    "Hardtanh": lambda L, z, w: L.nn.Hardtanh()(z), "ReLU6": lambda L, z, w: L.nn.ReLU6()(z),
    "elu": lambda L, z, w: L.nn.functional.elu(z),
    "leaky_relu": lambda L, z, w: L.nn.functional.leaky_relu(z),
    "gelu": lambda L, z, w: L.nn.functional.gelu(z),
    "softplus": lambda L, z, w: L.nn.functional.softplus(z),
    "hardswish": lambda L, z, w: L.nn.functional.hardswish(z),
    # threshold compares (NotImplementedError); the norms and losses have no complex kernel
    # (NotImplementedError); nansum/nanmean and cosine_similarity refuse (RuntimeError); silu
    # computes on complex but has no complex derivative (RuntimeError when recorded)
    "threshold": lambda L, z, w: L.nn.functional.threshold(z, 0.5, 1.0),
    "threshold_": lambda L, z, w: L.nn.functional.threshold_(z.clone(), 0.5, 1.0),
    "torch_threshold": lambda L, z, w: L.threshold(z, 0.5, 1.0),
    "Threshold": lambda L, z, w: L.nn.Threshold(0.5, 1.0)(z),
    "layer_norm": lambda L, z, w: L.nn.functional.layer_norm(z, (3,)),
    "layer_norm_weight": lambda L, z, w: L.nn.functional.layer_norm(z, (3,), w, w),
    "group_norm": lambda L, z, w: L.nn.functional.group_norm(z.reshape(1, 3, 1), 1),
    "batch_norm": lambda L, z, w: L.nn.functional.batch_norm(z.reshape(3, 1), None, None,
                                                             training=True),
    "cross_entropy": lambda L, z, w: L.nn.functional.cross_entropy(z[None], L.tensor([1])),
    "nll_loss": lambda L, z, w: L.nn.functional.nll_loss(z[None], L.tensor([1])),
    "nansum": lambda L, z, w: L.nansum(z), "nansum_dim": lambda L, z, w: z.nansum(0),
    "nanmean": lambda L, z, w: L.nanmean(z),
    "nansum_complex_dtype": lambda L, z, w: L.nansum(z.real, dtype=z.dtype),
    "cosine_similarity": lambda L, z, w: L.nn.functional.cosine_similarity(z, w, dim=0),
    "cosine_similarity_real_complex": lambda L, z, w: L.cosine_similarity(z.real, w, dim=0),
    "CosineSimilarity": lambda L, z, w: L.nn.CosineSimilarity(dim=0)(z, w),
    "silu_requires_grad": lambda L, z, w: L.nn.functional.silu(z.requires_grad_()),
    "abs_": lambda L, z, w: z.clone().abs_(), "isposinf": lambda L, z, w: L.isposinf(z),
    "isneginf": lambda L, z, w: L.isneginf(z), "logit": lambda L, z, w: L.logit(z),
    "logit_eps": lambda L, z, w: z.logit(1e-6), "special_logit": lambda L, z, w: L.special.logit(z),
    "searchsorted": lambda L, z, w: L.searchsorted(z, w), "bucketize": lambda L, z, w: L.bucketize(
        z, w), "isin": lambda L, z, w: L.isin(z, w),
    "xlog1py": lambda L, z, w: L.special.xlog1py(z, w),
    "bitwise_not": lambda L, z, w: ~z, "bitwise_and": lambda L, z, w: z & w,
    "signbit": lambda L, z, w: L.signbit(z), "copysign": lambda L, z, w: L.copysign(z, w),
    "heaviside": lambda L, z, w: L.heaviside(z, w), "fmod": lambda L, z, w: L.fmod(z, w),
    "remainder": lambda L, z, w: z % w, "floor_divide": lambda L, z, w: z // w,
    "nextafter": lambda L, z, w: L.nextafter(z, w), "deg2rad": lambda L, z, w: L.deg2rad(z),
    "rad2deg": lambda L, z, w: z.rad2deg(),
    "bincount": lambda L, z, w: L.bincount(z), "histogram": lambda L, z, w: L.histogram(z),
    "xlogy": lambda L, z, w: L.xlogy(z, w), "xlogy_complex_number": lambda L, z, w: L.xlogy(
        z.real, 1 + 2j),
    "atan2": lambda L, z, w: L.atan2(z, w), "hypot": lambda L, z, w: L.hypot(z, w),
    "logaddexp2": lambda L, z, w: L.logaddexp2(z, w),
    "mse_loss": lambda L, z, w: L.nn.functional.mse_loss(z, w),
    "smooth_l1_loss": lambda L, z, w: L.nn.functional.smooth_l1_loss(z, w),
    "huber_loss": lambda L, z, w: L.nn.functional.huber_loss(z, w),
    "avg_pool1d": lambda L, z, w: L.nn.functional.avg_pool1d(z.reshape(1, 1, 3), 2),
    "max_pool1d": lambda L, z, w: L.nn.functional.max_pool1d(z.reshape(1, 1, 3), 2),
    "adaptive_avg_pool1d": lambda L, z, w: L.nn.functional.adaptive_avg_pool1d(
        z.reshape(1, 1, 3), 2),
    "avg_pool2d": lambda L, z, w: L.nn.functional.avg_pool2d(z.reshape(1, 1, 3, 1), 1),
    "interpolate_nearest": lambda L, z, w: L.nn.functional.interpolate(z.reshape(1, 1, 3),
                                                                       scale_factor=2),
    "interpolate_linear": lambda L, z, w: L.nn.functional.interpolate(
        z.reshape(1, 1, 3), scale_factor=2, mode="linear"),
    "sdpa": lambda L, z, w: L.nn.functional.scaled_dot_product_attention(
        z.reshape(1, 3, 1), w.reshape(1, 3, 1), z.reshape(1, 3, 1)),
    "full_real_dtype": lambda L, z, w: L.full((2,), 1 + 2j, dtype=L.float32),
    "full_like_real": lambda L, z, w: L.full_like(z.real, 1 + 2j),
}


def _pair(lib, dt):
    z = lib.tensor([1 + 2j, 3 - 1j, 0.5j], dtype=getattr(lib, dt))
    w = lib.tensor([2 + 0j, 1 + 1j, 1j], dtype=getattr(lib, dt))
    return z, w


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_as_pytorch(name, dt):
    with pytest.raises(Exception) as expected:
        REFUSED[name](torch, *_pair(torch, dt))
    with pytest.raises(expected.type) as got:
        REFUSED[name](ember, *_pair(ember, dt))
    assert got.type is expected.type  # the class itself, not a subclass of it
    assert "complex" in str(got.value).lower()


def test_cosine_similarity_promotes_integer_operands_and_refuses_integer_pairs():
    """PyTorch computes cosine_similarity in the operands' common dtype, which must be floating:
    an integer tensor beside a float one is promoted, two integer tensors are refused."""
    a = [[1, 2, 3], [4, 0, 6]]
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
            lib.nn.functional.cosine_similarity(lib.tensor(a), lib.tensor(a))
    got = ember.nn.functional.cosine_similarity(ember.tensor(a), ember.tensor(a).double() + 1)
    want = torch.nn.functional.cosine_similarity(torch.tensor(a), torch.tensor(a).double() + 1)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_nansum_of_integers_to_a_complex_dtype_sums_as_pytorch():
    for lib in (ember, torch):
        r = lib.nansum(lib.tensor([1, 2]), dtype=lib.complex64)
        assert str(r.dtype) == "torch.complex64" and complex(r.item()) == 3


def _setitem(t, c):
    t[0] = c
    return t


INTO_REAL = {  # a Python complex number written into (or scaling) a tensor
    "fill_": lambda L, c: L.zeros(2).fill_(c), "fill_long": lambda L, c: L.zeros(2).long().fill_(c),
    "setitem": lambda L, c: _setitem(L.zeros(2), c),
    "masked_fill": lambda L, c: L.zeros(2).masked_fill(L.tensor([True, False]), c),
    "masked_fill_complex": lambda L, c: L.zeros(2, dtype=L.complex128).masked_fill(
        L.tensor([True, False]), c),
    "index_fill": lambda L, c: L.zeros(2).index_fill(0, L.tensor([0]), c),
    "index_fill_complex": lambda L, c: L.zeros(2, dtype=L.complex64).index_fill(
        0, L.tensor([0]), c),
    "add_alpha": lambda L, c: L.add(L.ones(2), 1, alpha=c),
    "sub_alpha_tensors": lambda L, c: L.sub(L.ones(2), L.ones(2), alpha=c),
    "add__alpha": lambda L, c: L.ones(2).add_(L.ones(2), alpha=c),
    "add_alpha_complex": lambda L, c: L.add(L.ones(2, dtype=L.complex64), 1, alpha=c),
}


@pytest.mark.parametrize("c", [2 + 0j, 2 - 1.5j])
@pytest.mark.parametrize("name", sorted(INTO_REAL))
def test_complex_numbers_into_real_tensors_as_pytorch(name, c):
    """A complex number converts to a real dtype only without an imaginary part (fill_, x[i] =,
    masked_fill); index_fill and a complex alpha for real tensors refuse it always."""
    try:
        want = INTO_REAL[name](torch, c)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            INTO_REAL[name](ember, c)
        assert got.type is type(e)
        return
    got = INTO_REAL[name](ember, c)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_what_stays_defined_on_complex_tensors():
    z, w = _pair(ember, "complex64")
    assert (z == w).dtype == ember.bool and (z != w).tolist() == [True, True, True]
    assert ember.equal(z, z.clone()) and bool(ember.isclose(z, z).all())
    assert z.abs().max().item() == pytest.approx(abs(3 - 1j))
    assert (z.real < 2).tolist() == [True, False, True]


CREATORS = {
    "randn": lambda L, dt, n: L.randn(n, dtype=dt),
    "randn_2d": lambda L, dt, n: L.randn(2, n, dtype=dt),
    "rand": lambda L, dt, n: L.rand(n, dtype=dt),
    "randn_like": lambda L, dt, n: L.randn_like(L.zeros(n, 3, dtype=dt)),
    "randn_like_strided": lambda L, dt, n: L.randn_like(L.zeros(n, 3, dtype=dt).t()),
    "rand_like": lambda L, dt, n: L.rand_like(L.zeros(n, dtype=dt)),
    "normal_": lambda L, dt, n: L.zeros(n, dtype=dt).normal_(1, 2),
    "uniform_": lambda L, dt, n: L.zeros(3, n, dtype=dt).t().uniform_(-1, 2),
    "randn_out": lambda L, dt, n: L.randn(n, out=L.empty(n, dtype=dt)),
    "normal_tensor_mean": lambda L, dt, n: L.normal(L.ones(n, dtype=dt) * (1 - 2j), 2.0),
    "normal_tensor_std": lambda L, dt, n: L.normal(L.ones(n, dtype=dt) * 1j,
                                                   L.ones(n, dtype=dt).real * 3),
}


@pytest.mark.parametrize("n", [3, 17, 40])
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(CREATORS))
def test_complex_random_numbers_are_pytorchs(name, dt, n):
    torch.manual_seed(7)
    ref = CREATORS[name](torch, getattr(torch, dt), n)
    after_ref = torch.randn(5)
    ember.manual_seed(7)
    got = CREATORS[name](ember, getattr(ember, dt), n)
    after_got = ember.randn(5)
    assert str(got.dtype) == str(ref.dtype) and tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    np.testing.assert_array_equal(after_got.numpy(), after_ref.numpy())


def test_complex_normal_has_unit_variance():
    z = ember.randn(200000, dtype=ember.cfloat)
    assert z.dtype == ember.complex64
    assert z.real.var().item() == pytest.approx(0.5, rel=0.02)
    assert z.imag.var().item() == pytest.approx(0.5, rel=0.02)
    assert (z.abs() ** 2).mean().item() == pytest.approx(1.0, rel=0.02)


@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_this_file_passes_on_the_pure_python_core():
    rerun_on_pure_python(__file__)
