"""Reductions (ember/ops/reduction.py): values, dtypes, gradients (incl. double backward), ties,
zeros, NaN/inf edge cases, named-tuple results, and PyTorch's errors."""

from __future__ import annotations

import math
import pickle
import re
import warnings

import numpy as np
import pytest

import ember
from helpers import HAVE_TORCH, check_op, positive, randn

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")

inf = math.inf
nan = math.nan


def _np_axes(dim):
    return tuple(dim) if isinstance(dim, list) else dim


def grads_match_torch(fn, x, *, out_index=None, seed=0, atol=1e-6):
    """Forward values, dtypes and gradients (random cotangent) equal torch's for ``fn(m, t)``."""
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    eo, to = fn(ember, e), fn(torch, t)
    if isinstance(eo, tuple):
        for a, b in zip(eo, to):
            assert str(a.dtype) == str(b.dtype)
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), equal_nan=True)
        eo, to = eo[0 if out_index is None else out_index], to[0 if out_index is None else out_index]
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, equal_nan=True)
    v = np.random.default_rng(seed).standard_normal(tuple(eo.shape))
    (ge,) = ember.autograd.grad(eo, e, ember.tensor(v, dtype=eo.dtype))
    (gt,) = torch.autograd.grad(to, t, torch.tensor(v, dtype=to.dtype))
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), atol=atol, equal_nan=True)
    return ge.numpy()


# ---------------------------------------------------------------------------------------------
# sum / mean / nansum / nanmean

DIMS_3D = [None, 0, -1, (0, 2), [1, -1], (0, 1, 2)]


@pytest.mark.parametrize("dim", DIMS_3D)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum(dim, keepdim):
    check_op(lambda m, x: m.sum(x, dim, keepdim), randn(2, 3, 4),
             ref=lambda x: np.sum(x, axis=_np_axes(dim), keepdims=keepdim), gradgrad=True)


@pytest.mark.parametrize("dim", DIMS_3D)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean(dim, keepdim):
    check_op(lambda m, x: x.mean(dim, keepdim), randn(2, 3, 4),
             ref=lambda x: np.mean(x, axis=_np_axes(dim), keepdims=keepdim), gradgrad=True)


def test_sum_mean_0d_and_empty():
    check_op(lambda m, x: x.sum(), randn(), ref=np.sum, gradgrad=True)
    check_op(lambda m, x: x.sum(0), randn(), ref=np.sum)
    check_op(lambda m, x: x.mean(-1, keepdim=True), randn(), ref=np.mean)
    check_op(lambda m, x: x.sum(0), np.zeros((0, 3)), ref=lambda x: np.zeros(3))
    check_op(lambda m, x: x.sum(), np.zeros((0, 3)), ref=lambda x: np.float64(0))
    assert math.isnan(ember.zeros(0, 3).mean().item())
    assert ember.zeros(0, 3).mean(1).shape == (0,)


def test_sum_empty_dim_list_reduces_all():
    x = ember.ones(2, 3)
    assert x.sum(dim=()).item() == 6 and x.sum(dim=[]).item() == 6
    assert x.mean(dim=()).shape == ()


def test_sum_numpy_aliases():
    """The engine calls ``g.sum(axis=..., keepdims=True)`` on tensors under create_graph."""
    x = ember.tensor(randn(2, 3))
    np.testing.assert_allclose(x.sum(axis=(0,), keepdims=True).numpy(),
                               randn(2, 3).sum(0, keepdims=True))
    np.testing.assert_allclose(ember.sum(x, axis=-1).numpy(), randn(2, 3).sum(-1))
    np.testing.assert_allclose(x.mean(axis=1, keepdims=True).numpy(),
                               randn(2, 3).mean(1, keepdims=True))


@needs_torch
@pytest.mark.parametrize("np_dtype", [np.int32, np.int64, np.uint8, np.bool_, np.int8])
def test_sum_integer_and_bool_give_int64(np_dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype)
    check_op(lambda m, x: x.sum(), a, ref=np.sum)
    check_op(lambda m, x: m.sum(x, 1, keepdim=True), a)
    check_op(lambda m, x: x.nansum(0), a)
    check_op(lambda m, x: x.prod(1), a)
    assert ember.tensor(a).sum().dtype == ember.int64


@needs_torch
def test_sum_mean_dtype_argument():
    check_op(lambda m, x: x.sum(1, dtype=m.float64), randn(3, 4), check_float32=False)
    check_op(lambda m, x: x.sum(dtype=m.int32), randn(3, 4) * 10, grad=False)
    check_op(lambda m, x: x.mean(0, dtype=m.float64), np.arange(6).reshape(2, 3))
    check_op(lambda m, x: x.mean(dtype=m.float64), randn(3, 4), check_float32=False)
    assert ember.ones(3).sum(dtype=ember.float64).dtype == ember.float64


def test_mean_of_int_raises():
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Got: Long"):
        ember.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Got: Bool"):
        ember.tensor([True]).mean()
    with pytest.raises(RuntimeError, match=r"nanmean\(\).*Long"):
        ember.tensor([1, 2]).nanmean()


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_nansum_nanmean(dim):
    a = randn(3, 4)
    a[0, 1] = a[2, 3] = nan
    check_op(lambda m, x: x.nansum(dim), a, ref=lambda x: np.nansum(x, axis=dim))
    check_op(lambda m, x: m.nanmean(x, dim, keepdim=True), a,
             ref=lambda x: np.nanmean(x, axis=dim, keepdims=True))


@needs_torch
def test_nanmean_grad_skips_nan():
    g = grads_match_torch(lambda m, x: x.nanmean(), np.array([1.0, nan, 3.0]))
    np.testing.assert_allclose(g, [g[0], 0.0, g[2]])
    grads_match_torch(lambda m, x: x.nansum(0), np.array([[1.0, nan], [nan, 2.0]]))


# ---------------------------------------------------------------------------------------------
# prod


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False)])
def test_prod(dim, keepdim):
    ref = (lambda x: np.prod(x)) if dim is None else (
        lambda x: np.prod(x, axis=dim, keepdims=keepdim))
    fn = (lambda m, x: x.prod()) if dim is None else (lambda m, x: x.prod(dim, keepdim))
    check_op(fn, positive(3, 4) * np.sign(randn(3, 4)), ref=ref, gradgrad=True)


@needs_torch
@pytest.mark.parametrize("values", [
    [0.0, 2.0, 3.0],  # a single zero
    [2.0, 0.0, 0.0],  # several zeros
    [0.0, 0.0, 0.0],
    [1.5, -2.0, 3.0],
])
def test_prod_gradient_with_zeros(values):
    x = np.array(values)
    g = grads_match_torch(lambda m, t: t.prod(), x)
    if values == [0.0, 2.0, 3.0]:
        v = g[0] / 6.0
        np.testing.assert_allclose(g, [6.0 * v, 0.0, 0.0])
    if values.count(0.0) >= 2:
        assert not g.any()


@needs_torch
def test_prod_gradient_with_zeros_along_dim():
    a = np.array([[0.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.0, 4.0], [5.0, 0.0, -1.0]])
    grads_match_torch(lambda m, t: t.prod(1), a)
    grads_match_torch(lambda m, t: t.prod(0, keepdim=True), a)
    # the gradient itself is differentiable where there are no zeros, and correct with them
    x = ember.tensor(a, requires_grad=True)
    ember.autograd.gradcheck(lambda t: t.prod(1), (x,))


def test_prod_rejects_tuple_dim():
    with pytest.raises(TypeError, match="must be int"):
        ember.ones(2, 3).prod((0, 1))


# ---------------------------------------------------------------------------------------------
# max / min / amax / amin / aminmax / argmax / argmin


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim", [((), False), (0, False), (-1, True), ((0, 2), False)])
def test_amax_amin(op, dim, keepdim):
    ref = getattr(np, op)
    check_op(lambda m, x: getattr(m, op)(x, dim, keepdim), randn(2, 3, 4),
             ref=lambda x: ref(x, axis=None if dim == () else dim, keepdims=keepdim),
             gradgrad=True)


@needs_torch
@pytest.mark.parametrize("op", ["amax", "amin", "max", "min"])
def test_full_reductions_split_ties_evenly(op):
    a = np.array([[1.0, 3.0, 3.0], [3.0, -2.0, -2.0]])
    fn = lambda m, t: getattr(t, op)()
    g = grads_match_torch(fn, a)
    assert np.count_nonzero(g) == 3 if op in ("amax", "max") else 2
    # central differences agree at a two-way tie when it is split evenly
    x = ember.tensor(np.array([[1.0, 3.0, 3.0], [0.0, -2.0, 2.5]]), requires_grad=True)
    ember.autograd.gradcheck(lambda t: getattr(t, op)(), (x,))
    grads_match_torch(lambda m, t: getattr(t, "amax" if "max" in op else "amin")(1), a)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False)])
def test_max_min_with_dim(op, dim, keepdim):
    np_val, np_arg = (np.max, np.argmax) if op == "max" else (np.min, np.argmin)
    check_op(lambda m, x: getattr(x, op)(dim, keepdim), randn(3, 4),
             ref=lambda x: (np_val(x, axis=dim, keepdims=keepdim),
                            np_arg(x, axis=dim, keepdims=keepdim)),
             gradgrad=True)


@needs_torch
def test_max_with_dim_named_tuple_and_tie_gradient():
    a = np.array([[1.0, 2.0, 2.0, 1.0], [4.0, 4.0, 4.0, 0.0]])
    res = ember.tensor(a).max(1)
    tres = torch.tensor(a).max(1)
    assert type(res).__name__ == "max" and isinstance(res, tuple)
    assert res._fields == ("values", "indices")
    np.testing.assert_array_equal(res.indices.numpy(), tres.indices.numpy())
    assert res.indices.dtype == ember.int64
    v, i = res
    assert v is res.values and i is res.indices
    back = pickle.loads(pickle.dumps(res))
    assert type(back) is type(res) and back.indices.tolist() == res.indices.tolist()
    g = grads_match_torch(lambda m, t: t.max(1), a)
    np.testing.assert_array_equal(g != 0, [[0, 1, 0, 0], [1, 0, 0, 0]])  # the first tie only
    grads_match_torch(lambda m, t: t.min(0, keepdim=True), a)
    assert type(ember.tensor(a).min(0)).__name__ == "min"


@needs_torch
def test_max_of_two_tensors_is_maximum():
    check_op(lambda m, a, b: m.max(a, b), randn(3, 4), randn(4, seed=1), ref=np.maximum)
    check_op(lambda m, a, b: m.min(a, b), randn(3, 4), randn(3, 1, seed=1), ref=np.minimum)
    check_op(lambda m, a, b: a.max(b), randn(3), randn(3, seed=2), ref=np.maximum)


def test_max_min_0d_and_nan():
    res = ember.tensor(3.0).max(0)
    assert res.values.item() == 3.0 and res.indices.item() == 0 and res.values.shape == ()
    a = np.array([[1.0, nan, 3.0, nan], [1.0, 2.0, 0.0, 5.0]])
    r = ember.tensor(a).max(1)
    assert math.isnan(r.values[0].item()) and r.indices.tolist() == [1, 3]
    assert math.isnan(ember.tensor(a).amin().item())
    assert ember.tensor(a).argmax().item() == 1


@needs_torch
@pytest.mark.parametrize("np_dtype", [np.int32, np.int64, np.bool_, np.uint8])
def test_max_min_keep_integer_dtypes(np_dtype):
    a = (np.arange(12).reshape(3, 4) * 7 % 5).astype(np_dtype)
    check_op(lambda m, x: x.max(), a, grad=False)
    check_op(lambda m, x: x.min(1), a, grad=False)
    check_op(lambda m, x: x.amax(0), a, grad=False)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (0, False), (-1, True)])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dim, keepdim):
    a = np.round(randn(3, 4) * 2)  # with ties: the first index wins
    ref = getattr(np, op)
    check_op(lambda m, x: getattr(m, op)(x, dim, keepdim), a,
             ref=lambda x: ref(x, axis=dim, keepdims=keepdim))
    assert getattr(ember.tensor(a), op)(dim, keepdim).dtype == ember.int64


@needs_torch
def test_aminmax():
    a = randn(3, 4)
    check_op(lambda m, x: m.aminmax(x), a, ref=lambda x: (x.min(), x.max()))
    check_op(lambda m, x: x.aminmax(dim=1, keepdim=True), a,
             ref=lambda x: (x.min(1, keepdims=True), x.max(1, keepdims=True)))
    res = ember.tensor(a).aminmax(dim=0)
    assert type(res).__name__ == "aminmax" and res._fields == ("min", "max")
    grads_match_torch(lambda m, t: t.aminmax()[1], np.array([1.0, 3.0, 3.0]))
    grads_match_torch(lambda m, t: t.aminmax()[0], np.array([1.0, 1.0, 3.0]))


def test_max_empty_errors():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified"):
        ember.zeros(0).max()
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero"):
        ember.zeros(0, 3).amax(0)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0"):
        ember.zeros(0, 3).max(0)
    with pytest.raises(IndexError, match=r"argmax\(\)"):
        ember.zeros(0, 3).argmax()
    assert ember.zeros(0, 3).amax(1).shape == (0,)


# ---------------------------------------------------------------------------------------------
# var / std / var_mean / std_mean


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dim,keepdim,correction", [
    (None, False, 1), (0, False, 1), (-1, True, 0), ((0, 2), False, 1), (1, False, 2),
])
def test_var_std(op, dim, keepdim, correction):
    ref = getattr(np, op)
    check_op(lambda m, x: getattr(x, op)(dim, keepdim=keepdim, correction=correction),
             randn(2, 3, 4), ref=lambda x: ref(x, axis=dim, keepdims=keepdim, ddof=correction),
             gradgrad=True)


@needs_torch
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_legacy_unbiased(op):
    a = randn(3, 4)
    check_op(lambda m, x: getattr(x, op)(unbiased=False), a)
    check_op(lambda m, x: getattr(x, op)(True), a)
    check_op(lambda m, x: getattr(x, op)(1, False, True), a)
    check_op(lambda m, x: getattr(m, op)(x, 0, unbiased=True, keepdim=True), a)
    check_op(lambda m, x: getattr(x, op)(dim=1, correction=0.5), a)


@needs_torch
def test_std_zero_gradient_and_degenerate_correction():
    g = grads_match_torch(lambda m, t: t.std(), np.array([2.0, 2.0, 2.0]))
    assert not g.any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(ember.tensor(1.0).var().item())
        assert ember.tensor([1.0, 2.0]).var(correction=2).item() == inf
        assert math.isnan(ember.zeros(0, 3).std(0)[0].item())
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        ember.tensor([1.0]).var()


@needs_torch
def test_var_mean_std_mean():
    a = randn(3, 4)
    check_op(lambda m, x: m.var_mean(x, 1, keepdim=True), a,
             ref=lambda x: (x.var(1, ddof=1, keepdims=True), x.mean(1, keepdims=True)))
    check_op(lambda m, x: m.std_mean(x, correction=0), a,
             ref=lambda x: (x.std(), x.mean()))
    check_op(lambda m, x: m.std_mean(x, (0, 1), unbiased=False), a)
    assert type(ember.var_mean(ember.tensor(a))) is tuple


def test_var_std_errors():
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        ember.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        ember.tensor([1, 2]).std(0)
    with pytest.raises(TypeError):
        ember.ones(3).var(0, unbiased=False, correction=1)


# ---------------------------------------------------------------------------------------------
# norm / vector_norm


NORM_PS = [2, "fro", inf, -inf, 1, 3, 0.5, 0, -1]


@pytest.mark.parametrize("p", NORM_PS)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 1), True), (-1, True)])
def test_norm(p, dim, keepdim):
    a = randn(3, 4) + 0.05  # no exact zeros: |x|^p is smooth
    gg = p in (2, "fro", 3)

    def ref(x):
        ax = None if dim is None else dim
        q = 2 if p == "fro" else p
        if q == inf:
            return np.abs(x).max(axis=ax, keepdims=keepdim)
        if q == -inf:
            return np.abs(x).min(axis=ax, keepdims=keepdim)
        if q == 0:
            return (x != 0).sum(axis=ax, keepdims=keepdim).astype(float)
        return (np.abs(x) ** q).sum(axis=ax, keepdims=keepdim) ** (1 / q)

    check_op(lambda m, x: x.norm(p, dim, keepdim), a, ref=ref, gradgrad=gg)


@needs_torch
@pytest.mark.parametrize("p", [2, 3, 1, 0.5, 1.5, -1, inf])
def test_norm_gradient_at_zero(p):
    g = grads_match_torch(lambda m, t: t.norm(p=p), np.zeros(3))
    assert not g.any()
    grads_match_torch(lambda m, t: t.norm(p=p), np.array([0.0, 1.0, -2.0]))
    grads_match_torch(lambda m, t: t.norm(p=p, dim=1), np.array([[0.0, 0.0], [3.0, -4.0]]))


@needs_torch
def test_norm_inf_ties_split_evenly():
    grads_match_torch(lambda m, t: t.norm(p=inf), np.array([1.0, -3.0, 3.0, 2.0]))
    grads_match_torch(lambda m, t: t.norm(p=-inf), np.array([1.0, -1.0, 3.0, 2.0]))


@needs_torch
def test_vector_norm_matches_torch_linalg():
    from ember.ops.reduction_stats import vector_norm

    a = randn(3, 4)
    for ord_ in (2, 1, inf, -inf, 0, 3.5):
        for dim in (None, 0, (0, 1)):
            check_op(lambda m, x, o=ord_, d=dim: vector_norm(x, o, d) if m is ember
                     else torch.linalg.vector_norm(x, o, d), a)
    check_op(lambda m, x: vector_norm(x, dim=1, keepdim=True, dtype=ember.float64)
             if m is ember else torch.linalg.vector_norm(x, dim=1, keepdim=True,
                                                          dtype=torch.float64), a,
             check_float32=False)
    with pytest.raises(RuntimeError, match="Expected a floating point.*Got Long"):
        vector_norm(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        vector_norm(ember.zeros(0, 3), inf)
    assert vector_norm(ember.zeros(0, 3), inf, 1).shape == (0,)


@needs_torch
def test_norm_dtype_and_errors():
    check_op(lambda m, x: m.norm(x, 2, 1, dtype=m.float64), randn(3, 4), check_float32=False)
    assert ember.ones(2, 3).norm(dtype=ember.float64).dtype == ember.float64
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        ember.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        ember.ones(2, 3, 4).norm("fro", (0, 1, 2))


# ---------------------------------------------------------------------------------------------
# logsumexp


@pytest.mark.parametrize("dim,keepdim", [(0, False), (-1, True), ((0, 2), False), (1, False)])
def test_logsumexp(dim, keepdim):
    def ref(x):
        m = x.max(axis=dim, keepdims=True)
        return np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m if keepdim else (
            np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m).squeeze(dim)

    check_op(lambda m, x: m.logsumexp(x, dim, keepdim), randn(2, 3, 4), ref=ref, gradgrad=True)


@needs_torch
def test_logsumexp_stable_and_inf_rows():
    big = np.array([[1000.0, 1000.0, -1000.0], [-inf, -inf, -inf], [-inf, 0.0, 1.0]])
    e = ember.tensor(big).logsumexp(1).numpy()
    t = torch.tensor(big).logsumexp(1).numpy()
    np.testing.assert_allclose(e, t)
    assert e[1] == -inf and np.isfinite(e[0])
    grads_match_torch(lambda m, x: x.logsumexp(1), big[[0, 2]])
    grads_match_torch(lambda m, x: x.logsumexp(0), np.array([inf, 1.0]))
    check_op(lambda m, x: x.logsumexp(0), np.array([1, 2, 3]))  # integers compute in float
    assert ember.zeros(0, 3).logsumexp(0).tolist() == [-inf] * 3
    assert ember.tensor(3.0).logsumexp(0).item() == 3.0


# ---------------------------------------------------------------------------------------------
# cumulative ops


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum(dim):
    check_op(lambda m, x: x.cumsum(dim), randn(3, 4), ref=lambda x: np.cumsum(x, axis=dim),
             gradgrad=True)


@pytest.mark.parametrize("dim", [0, -1])
def test_cumprod(dim):
    check_op(lambda m, x: m.cumprod(x, dim), positive(3, 4), ref=lambda x: np.cumprod(x, axis=dim),
             gradgrad=True)


@needs_torch
def test_cumsum_cumprod_dtypes_and_0d():
    check_op(lambda m, x: x.cumsum(0), np.array([1, 2, 3], dtype=np.int32))
    check_op(lambda m, x: x.cumsum(0), np.array([True, False, True]))
    check_op(lambda m, x: x.cumprod(0), np.array([1, 2, 3], dtype=np.uint8))
    check_op(lambda m, x: x.cumsum(1, dtype=m.float64), randn(2, 3), check_float32=False)
    check_op(lambda m, x: x.cumprod(0, dtype=m.float64), randn(2, 3), check_float32=False)
    check_op(lambda m, x: x.cumsum(0), randn(), ref=lambda x: x)
    check_op(lambda m, x: x.cumprod(-1), randn(), ref=lambda x: x)
    check_op(lambda m, x: x.cumsum(0), np.zeros((0, 3)))


@needs_torch
@pytest.mark.parametrize("values", [
    [2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1.5, 2.0], [1.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, -2.0, 3.0],
])
def test_cumprod_gradient_with_zeros(values):
    grads_match_torch(lambda m, t: t.cumprod(0), np.array(values))
    grads_match_torch(lambda m, t: t.cumprod(1), np.array([values, values[::-1]]))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op):
    acc = np.maximum.accumulate if op == "cummax" else np.minimum.accumulate
    check_op(lambda m, x: getattr(x, op)(1), randn(3, 5), ref=lambda x: acc(x, axis=1),
             gradgrad=True)
    check_op(lambda m, x: getattr(m, op)(x, 0), randn(4, 2), ref=lambda x: acc(x, axis=0))


@needs_torch
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_ties_nan_and_fields(op):
    a = np.array([1.0, 3.0, 3.0, 2.0, 1.0, 1.0, 3.0])
    res = getattr(ember.tensor(a), op)(0)
    assert type(res).__name__ == op and res._fields == ("values", "indices")
    tres = getattr(torch.tensor(a), op)(0)
    np.testing.assert_array_equal(res.indices.numpy(), tres.indices.numpy())  # ties: last index
    grads_match_torch(lambda m, t: getattr(t, op)(0), a)
    b = np.array([1.0, nan, 3.0, nan, 0.0])
    r, tr = getattr(ember.tensor(b), op)(0), getattr(torch.tensor(b), op)(0)
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    check_op(lambda m, x: getattr(x, op)(0), np.array([3, 1, 1, 5], dtype=np.int32))
    z = getattr(ember.tensor(2.0), op)(0)
    assert z.values.shape == () and z.indices.item() == 0


def test_cumulative_errors():
    with pytest.raises(TypeError, match="missing 1 required positional arguments"):
        ember.ones(2, 3).cumsum()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-2, 1\], but got 2\)"):
        ember.ones(2, 3).cumsum(2)


# ---------------------------------------------------------------------------------------------
# all / any / count_nonzero


@needs_torch
@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 1), False),
                                         ((), False)])
def test_all_any(op, dim, keepdim):
    a = (np.arange(12).reshape(3, 4) % 4 != 0).astype(np.float64)
    kw = {} if dim is None else {"dim": dim}
    fn = lambda m, x: getattr(x, op)(**kw, keepdim=keepdim) if dim is not None else getattr(x, op)()
    check_op(fn, a, grad=False)
    check_op(fn, a.astype(np.bool_))
    check_op(fn, a.astype(np.uint8))  # uint8 stays uint8, as in PyTorch
    check_op(fn, a.astype(np.int32))
    assert getattr(ember.tensor(a), op)().dtype == ember.bool


@needs_torch
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1)])
def test_count_nonzero(dim):
    a = np.round(randn(3, 4))
    check_op(lambda m, x: m.count_nonzero(x, dim), a, ref=lambda x: np.count_nonzero(x, axis=dim))
    assert ember.tensor(a).count_nonzero(dim).dtype == ember.int64


# ---------------------------------------------------------------------------------------------
# median / nanmedian / mode


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4)])
def test_median_all(shape):
    a = randn(*shape)
    lower = lambda x: np.sort(x.reshape(-1))[(x.size - 1) // 2]
    check_op(lambda m, x: x.median(), a, ref=lower, gradgrad=True)
    check_op(lambda m, x: m.nanmedian(x), a, ref=lower)


@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False)])
def test_median_with_dim(dim, keepdim):
    a = randn(4, 5)

    def ref(x):
        k = (x.shape[dim] - 1) // 2
        idx = np.take(np.argsort(x, axis=dim), [k], axis=dim)
        vals = np.take_along_axis(x, idx, dim)
        return (vals, idx) if keepdim else (vals.squeeze(dim), idx.squeeze(dim))

    check_op(lambda m, x: x.median(dim, keepdim), a, ref=ref, gradgrad=True)
    check_op(lambda m, x: x.nanmedian(dim, keepdim), a, ref=ref)


@needs_torch
def test_median_ties_nan_and_gradients():
    ties = np.array([1.0, 2.0, 2.0, 2.0, 3.0, 0.0])
    g = grads_match_torch(lambda m, t: t.median(), ties)  # shared evenly among the ties
    assert np.count_nonzero(g) == 3
    a = np.array([[2.0, 1.0, 2.0, 1.0], [1.0, 1.0, 3.0, 3.0], [5.0, 1.0, 2.0, 1.0]])
    res = ember.tensor(a).median(1)
    assert type(res).__name__ == "median" and res._fields == ("values", "indices")
    np.testing.assert_array_equal(res.values.numpy(), torch.tensor(a).median(1).values.numpy())
    # the index points at an element equal to the median, and the gradient goes there only
    np.testing.assert_array_equal(np.take_along_axis(a, res.indices.numpy()[:, None], 1)[:, 0],
                                  res.values.numpy())
    x = ember.tensor(a, requires_grad=True)
    r = x.median(1)
    r.values.sum().backward()
    onehot = np.zeros_like(a)
    onehot[np.arange(3), r.indices.numpy()] = 1
    np.testing.assert_array_equal(x.grad.numpy(), onehot)
    # NaN propagates, with the index of the first NaN
    b = np.array([[1.0, nan, 3.0, nan], [1.0, 2.0, 3.0, 4.0]])
    r, tr = ember.tensor(b).median(1), torch.tensor(b).median(1)
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    assert math.isnan(ember.tensor(b).median().item())
    # nanmedian skips NaN; an all-NaN row gives NaN at index 0
    c = np.array([[1.0, nan, 3.0, nan, 0.0], [nan, nan, nan, nan, nan]])
    r, tr = ember.tensor(c).nanmedian(1), torch.tensor(c).nanmedian(1)
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    assert ember.tensor(c[0]).nanmedian().item() == 1.0
    grads_match_torch(lambda m, t: t.nanmedian(), np.array([1.0, 2.0, nan, 2.0, 3.0]))
    grads_match_torch(lambda m, t: t.nanmedian(1), c[:1])


@needs_torch
def test_median_integer_0d_and_empty():
    check_op(lambda m, x: x.median(), np.array([3, 1, 2, 2], dtype=np.int64))
    check_op(lambda m, x: x.median(0), np.array([[3, 1], [2, 2], [5, 0]], dtype=np.int32))
    r = ember.tensor(3.0).median(0)
    assert r.values.item() == 3.0 and r.indices.item() == 0
    assert math.isnan(ember.zeros(0, 3).median().item())
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0"):
        ember.zeros(0, 3).median(0)


@needs_torch
@pytest.mark.parametrize("dim,keepdim", [(-1, False), (0, True), (1, False)])
def test_mode(dim, keepdim):
    a = np.array([[3.0, 1.0, 3.0, 1.0, 2.0], [1.0, 3.0, 3.0, 1.0, 2.0], [4.0, 4.0, 0.0, 4.0, 0.0],
                  [5.0, 6.0, 7.0, 8.0, 9.0]])
    check_op(lambda m, x: x.mode(dim, keepdim), a, grad=False)
    grads_match_torch(lambda m, t: t.mode(dim, keepdim), a)
    res = ember.tensor(a).mode()
    assert type(res).__name__ == "mode" and res._fields == ("values", "indices")
    check_op(lambda m, x: m.mode(x), np.array([[2, 2, 1], [0, 1, 1]], dtype=np.int32))
    r = ember.tensor(3.0).mode()
    assert r.values.item() == 3.0 and r.indices.item() == 0
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0"):
        ember.zeros(0, 3).mode(0)


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(op, dim):
    def ref(x):
        z = x - x.max(axis=dim, keepdims=True)
        ls = z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
        return np.exp(ls) if op == "softmax" else ls

    check_op(lambda m, x: getattr(x, op)(dim), randn(2, 3, 4), ref=ref, gradgrad=True)
    check_op(lambda m, x: getattr(m, op)(x, dim), randn(3, 4) * 30, ref=ref)


@needs_torch
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_large_logits_and_inf(op):
    a = np.array([[1000.0, 0.0, -1000.0], [-inf, 1.0, 2.0], [50.0, 50.0, -inf]])
    out = getattr(ember.tensor(a), op)(1).numpy()
    assert not np.isnan(out).any()
    grads_match_torch(lambda m, t: getattr(t, op)(1), a)
    # an all -inf row gives NaN, as in PyTorch
    b = np.array([[-inf, -inf], [0.0, 1.0]])
    e, t = getattr(ember.tensor(b), op)(1).numpy(), getattr(torch.tensor(b), op)(1).numpy()
    np.testing.assert_array_equal(np.isnan(e), np.isnan(t))
    np.testing.assert_allclose(e[1], t[1])


@needs_torch
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_dtype_0d_and_errors(op):
    check_op(lambda m, x: getattr(x, op)(1, dtype=m.float64), randn(2, 3), check_float32=False)
    check_op(lambda m, x: getattr(m, op)(x, 0, m.float64), randn(4), check_float32=False)
    check_op(lambda m, x: getattr(x, op)(0, dtype=m.float32), np.array([1, 2, 3]))
    check_op(lambda m, x: getattr(x, op)(0), randn())
    check_op(lambda m, x: getattr(x, op)(0), np.zeros((0, 3)))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        getattr(ember.tensor([1, 2]), op)(0)
    # torch.softmax/Tensor.softmax need a dim (TypeError, as PyTorch's); nn.functional's
    # spelling picks one with a deprecation warning pointing at the caller's line
    for m in (ember, torch):
        with pytest.raises(TypeError):
            getattr(m, op)(m.ones(2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension choice") as rec:
        getattr(ember.nn.functional, op)(ember.ones(2, 3))
    assert rec[0].filename == __file__


def test_softmax_backward_formulas():
    """The analytic rules: grad_x = y (g - sum(g y)) and grad_x = g - exp(y) sum(g)."""
    a, g = randn(3, 4), randn(3, 4, seed=5)
    x = ember.tensor(a, requires_grad=True)
    y = x.softmax(1)
    (gx,) = ember.autograd.grad(y, x, ember.tensor(g))
    yv = y.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), yv * (g - (g * yv).sum(1, keepdims=True)), atol=1e-12)
    y = x.log_softmax(1)
    (gx,) = ember.autograd.grad(y, x, ember.tensor(g))
    yv = y.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), g - np.exp(yv) * g.sum(1, keepdims=True), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# dims, errors, methods


@pytest.mark.parametrize("call", [
    lambda x: x.sum(2), lambda x: x.mean(-3), lambda x: x.amax((0, 2)), lambda x: x.max(2),
    lambda x: x.var(2), lambda x: x.norm(dim=2), lambda x: x.logsumexp(2), lambda x: x.argmax(2),
    lambda x: x.softmax(2), lambda x: x.cummax(2), lambda x: x.median(2), lambda x: x.all(2),
    lambda x: x.count_nonzero(-3), lambda x: x.prod(2), lambda x: x.mode(2),
])
def test_dim_out_of_range(call):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-2, 1\], but got -?[23]\)"):
        call(ember.ones(2, 3))


def test_dim_errors_0d_and_duplicates():
    x = ember.tensor(1.0)
    assert x.sum(0).item() == 1.0 and x.sum(-1).shape == ()
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        x.sum(1)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.ones(2, 3).sum((0, -2))
    with pytest.raises(TypeError, match="must be int"):
        ember.ones(2, 3).max((0, 1))


def test_every_reduction_method_exists_on_tensor():
    """Each reduction a Tensor method names is the op function itself (bound, not forwarded)."""
    from ember import _overrides
    from ember._tensor_methods import OP_METHODS
    from ember.ops import cumulative, reduction, reduction_stats, softmax_family

    rooms = (reduction, reduction_stats, cumulative, softmax_family)
    names = [n for n, fn in OP_METHODS.items()
             if getattr(fn, "__module__", "") in {r.__name__ for r in rooms}]
    assert {"sum", "softmax", "std", "cumsum"} <= set(names)
    x = ember.tensor(randn(3, 4))
    for name in names:
        assert _overrides.implementation(getattr(ember.Tensor, name)) is OP_METHODS[name], name
        assert callable(getattr(x, name)), name
    exported = set().union(*(r.__all__ for r in rooms))
    assert exported >= {OP_METHODS[n].__name__ for n in names} - {"var_mean", "std_mean"}


def test_float32_stays_float32_everywhere():
    x = ember.tensor(randn(3, 4).astype(np.float32))
    for out in (x.sum(), x.mean(1), x.prod(0), x.var(), x.std(1), x.norm(), x.norm(p=3),
                x.logsumexp(1), x.softmax(0), x.log_softmax(1), x.cumsum(0), x.cumprod(1),
                x.amax(), x.median(), x.nanmean(), x.nansum(), x.max(1).values):
        assert out.dtype == ember.float32
    assert ember.tensor([1.0, 2.0], dtype=ember.float16).sum().dtype == ember.float16


def test_no_graph_under_no_grad():
    x = ember.tensor(randn(3, 4), requires_grad=True)
    with ember.no_grad():
        for out in (x.sum(), x.max(1).values, x.softmax(1), x.norm(), x.cummax(0).values):
            assert out.grad_fn is None and not out.requires_grad
    y = x.max(1)
    assert y.values.requires_grad and not y.indices.requires_grad


def test_double_backward_through_softmax_norm_and_sum():
    """A second-order quantity against its closed form: d/dx sum(grad(||x||^2)) = 2."""
    x = ember.tensor(randn(5), requires_grad=True)
    (g,) = ember.autograd.grad(x.norm() ** 2, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(5, 2.0), atol=1e-10)


@needs_torch
def test_half_precision_accumulates_in_float32():
    a = np.full(20000, 10, np.float16)
    for op in ("mean", "var", "std", "norm"):
        e, t = getattr(ember.tensor(a), op)(), getattr(torch.tensor(a), op)()
        assert e.dtype == ember.float16 and np.isfinite(e.item())
        np.testing.assert_allclose(e.item(), t.item())


def test_return_types_namespace_matches_torch():
    """torch.return_types.<op> is the class of the named tuple each op returns; prints as torch's."""
    x = ember.tensor([[1.0, 5.0], [3.0, 2.0]])
    t = torch.tensor([[1.0, 5.0], [3.0, 2.0]]) if HAVE_TORCH else None
    for name, call in [("max", lambda m, v: m.max(v, 1)), ("min", lambda m, v: m.min(v, 0)),
                       ("median", lambda m, v: m.median(v, 1)), ("mode", lambda m, v: m.mode(v, 1)),
                       ("cummax", lambda m, v: m.cummax(v, 1)), ("sort", lambda m, v: m.sort(v, 1)),
                       ("topk", lambda m, v: m.topk(v, 1)), ("kthvalue", lambda m, v: m.kthvalue(v, 1)),
                       ("histogram", lambda m, v: m.histogram(v, bins=2)),
                       ("frexp", lambda m, v: m.frexp(v)), ("slogdet", lambda m, v: m.slogdet(v)),
                       ("linalg_slogdet", lambda m, v: m.linalg.slogdet(v)),
                       ("linalg_qr", lambda m, v: m.linalg.qr(v)),
                       ("linalg_eigh", lambda m, v: m.linalg.eigh(v @ v.mT)),
                       ("aminmax", lambda m, v: m.aminmax(v))]:
        r = call(ember, x)
        assert type(r) is getattr(ember.return_types, name), name
        assert type(r).__name__ == name
        assert repr(r).startswith(f"torch.return_types.{name}(\n")
        if t is not None:
            fields = re.findall(r"^(\w+)=", repr(call(torch, t)), re.M)
            assert fields == list(type(r)._fields), name
