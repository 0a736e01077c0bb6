"""The small names real programs use (docs/api-coverage.md ranks them), each against PyTorch.

Differentiable ones go through ``check_op`` (forward, float32 kept, gradcheck, PyTorch parity of
values, dtypes and gradients); the rest compare values, dtypes and shapes with torch directly.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from tests.helpers import check_op, positive, randn

torch = pytest.importorskip("torch")


def same(e, t, atol=1e-6, rtol=1e-5):
    """ember result ``e`` equals torch result ``t``: values, dtype, shape (tuples elementwise)."""
    if isinstance(t, tuple | list):
        assert len(e) == len(t)
        for a, b in zip(e, t, strict=True):
            same(a, b, atol, rtol)
        return
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert str(e.dtype) == str(t.dtype), (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
        np.testing.assert_allclose(e.detach().numpy().astype(np.float64),
                                   t.detach().numpy().astype(np.float64), atol=atol, rtol=rtol,
                                   equal_nan=True)
        return
    assert e == t or (isinstance(t, float) and math.isnan(t) and math.isnan(e)), (e, t)


def both(fn, *arrays, **kw):
    """Run ``fn(m, *tensors)`` on ember and torch with the same inputs and compare."""
    e = fn(ember, *[ember.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    t = fn(torch, *[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    same(e, t, **kw)


# -- constants, limits, tags ---------------------------------------------------------------

def test_constants():
    for name in ("pi", "e", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert math.isnan(ember.nan)
    assert ember.newaxis is None


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "bfloat16"])
def test_finfo(dt):
    e, t = ember.finfo(getattr(ember, dt)), torch.finfo(getattr(torch, dt))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert ember.finfo().dtype == torch.finfo().dtype == "float32"
    if dt == "float32":
        assert repr(e) == repr(t)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)


@pytest.mark.parametrize("dt", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(dt):
    e, t = ember.iinfo(getattr(ember, dt)), torch.iinfo(getattr(torch, dt))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


def test_memory_formats_and_layouts_print_like_torch():
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
                 "strided", "sparse_coo"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name))
    assert ember.legacy_contiguous_format is ember.contiguous_format
    x = ember.zeros(2, 3)
    assert x.layout is ember.strided
    assert x.clone(memory_format=ember.contiguous_format).shape == (2, 3)
    assert issubclass(ember.OutOfMemoryError, RuntimeError)


def test_switches_round_trip():
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    ember.set_float32_matmul_precision("high")
    try:
        assert ember.get_float32_matmul_precision() == "high"
    finally:
        ember.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError):
        ember.set_float32_matmul_precision("low")
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert ember.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled()
        assert ember.get_deterministic_debug_mode() == 1
    finally:
        ember.use_deterministic_algorithms(False)
    ember.set_deterministic_debug_mode("error")
    assert ember.get_deterministic_debug_mode() == 2
    ember.set_deterministic_debug_mode(0)
    assert not ember.are_deterministic_algorithms_enabled()
    assert ember.get_default_device() == ember.device("cpu")
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype"):
        assert str(ember.get_autocast_gpu_dtype()) == "torch.float16"
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype"):
        assert str(ember.get_autocast_cpu_dtype()) == "torch.bfloat16"
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled"):
        assert ember.is_autocast_cpu_enabled() is False
    assert ember.is_warn_always_enabled() is False
    assert ember.get_num_interop_threads() >= 1


def test_set_default_tensor_type_warns_and_sets_dtype():
    with pytest.warns(UserWarning, match="deprecated"):
        ember.set_default_tensor_type(ember.DoubleTensor)
    try:
        assert ember.get_default_dtype() == ember.float64
        assert ember.tensor([1.0]).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_device_modules():
    assert ember.cpu.is_available() and ember.cpu.device_count() == torch.cpu.device_count()
    assert ember.cpu.current_device() == torch.cpu.current_device()
    ember.cpu.synchronize()
    for m in ("xpu", "mps"):
        assert getattr(ember, m).is_available() is False
        assert getattr(ember, m).device_count() == 0
    assert ember.random.initial_seed() == ember.initial_seed()
    with ember.random.fork_rng():
        a = ember.rand(3)
    assert ember.equal(ember.rand(3), a)


# -- Tensor predicates and identities --------------------------------------------------------

PREDICATES = ("is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_meta", "is_mkldnn",
              "is_xpu", "is_mps", "is_vulkan", "is_ipu", "is_xla", "is_mtia", "is_maia")


@pytest.mark.parametrize("name", PREDICATES)
def test_device_predicates(name):
    assert getattr(ember.zeros(2), name) is getattr(torch.zeros(2), name) is False


def test_tensor_predicates():
    for m in (ember, torch):
        x = m.tensor([1.5])
        assert x.is_signed() and not m.tensor([1], dtype=m.uint8).is_signed()
        assert x.is_nonzero() and not m.tensor([0.0]).is_nonzero()
        with pytest.raises(RuntimeError, match="ambiguous"):
            m.zeros(2).is_nonzero()
        assert x.is_same_size(m.zeros(1)) and not x.is_same_size(m.zeros(2))
        assert not x.is_conj() and not x.is_neg() and not x.is_inference()
        assert not x.is_distributed()
        assert not m.is_complex(x) and not m.is_storage(x)
        assert x.dim_order() == (0,)
        assert m.zeros(3, 4).t().dim_order() == (1, 0)
        assert m.typename(x) == "torch.FloatTensor"
        assert m.is_nonzero(x) and m.is_same_size(x, x) and m.is_signed(x)


def test_real_conj_dequantize_are_the_tensor():
    for m in (ember, torch):
        x = m.randn(3, requires_grad=True)
        assert x.real is x and m.real(x) is x
        assert x.conj() is x and x.resolve_conj() is x and x.resolve_neg() is x
        assert x.dequantize() is x and x.to_dense() is x
        with pytest.raises(RuntimeError, match="non-complex"):
            x.imag  # noqa: B018


def test_where_method_and_reshape_as():
    a, b = randn(3, 4), randn(3, 4, seed=1)
    check_op(lambda m, x, y: x.where(x > 0, y), a, b)
    check_op(lambda m, x, y: x.where(x > 0, 0.5), a, b, grad_inputs=(0,))
    check_op(lambda m, x, y: x.reshape_as(y.reshape(4, 3)), a, b, grad_inputs=(0,))


def test_other_shape_methods():
    a = randn(4, 6)
    check_op(lambda m, x: x.split_with_sizes([1, 3], 0), a)
    check_op(lambda m, x: m.split_with_sizes(x, [2, 4], 1), a)
    check_op(lambda m, x: x.sum_to_size(1, 6), a)
    check_op(lambda m, x: x.sum_to_size(4, 1), a)
    check_op(lambda m, x: x.adjoint(), a)
    check_op(lambda m, x: m.select_scatter(x, x[:, 0] * 2, 1, 3), a)
    check_op(lambda m, x: m.slice_scatter(x, x[1:3] * 2, 0, 1, 3), a)
    check_op(lambda m, x: m.diagonal_scatter(x, x[0, :4] * 3, 0), a)
    check_op(lambda m, x: x.unsafe_chunk(2, 1), a)
    for name, args in (("expand_copy", ((2, 4, 6),)), ("permute_copy", ((1, 0),)),
                       ("t_copy", ()), ("transpose_copy", (0, 1)), ("unsqueeze_copy", (0,)),
                       ("squeeze_copy", ()), ("view_copy", ((6, 4),)), ("diagonal_copy", ()),
                       ("select_copy", (0, 1)), ("narrow_copy", (1, 1, 2)),
                       ("unfold_copy", (0, 2, 1)), ("alias_copy", ())):
        check_op(lambda m, x, n=name, a=args: getattr(m, n)(x, *a), a)
    both(lambda m, x: m.detach_copy(x), a)
    with pytest.raises(RuntimeError, match="sum exactly"):
        ember.split_with_sizes(ember.zeros(4), [1, 2])
    assert ember.zeros(2, 3).sum_to_size(3).shape == (3,)
    with pytest.raises(RuntimeError, match="expandable"):
        ember.zeros(2, 3).sum_to_size(2)


# -- grids and combinations --------------------------------------------------------------

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b, c = randn(3), randn(2, seed=1), randn(4, seed=2)
    check_op(lambda m, x, y, z: m.meshgrid(x, y, z, indexing=indexing), a, b, c)
    check_op(lambda m, x, y: m.meshgrid([x, y], indexing=indexing), a, b)


def test_meshgrid_default_warns_like_torch():
    with pytest.warns(UserWarning, match="indexing"):
        g = ember.meshgrid(ember.arange(3), ember.arange(2))
    assert g[0].shape == (3, 2)
    with pytest.raises(RuntimeError, match="indexing"):
        ember.meshgrid(ember.arange(3), indexing="yx")


def test_cartesian_prod_combinations_block_diag_vander():
    a, b = randn(3), randn(2, seed=1)
    check_op(lambda m, x, y: m.cartesian_prod(x, y), a, b)
    check_op(lambda m, x: m.cartesian_prod(x), a)
    check_op(lambda m, x: m.combinations(x), randn(4))
    check_op(lambda m, x: m.combinations(x, 3, with_replacement=True), randn(3))
    check_op(lambda m, x, y: m.block_diag(x, y, x[0]), randn(2, 3), randn(1, 2, seed=1))
    # torch's own vander backward fails its version check, so its gradient is checked on ember
    both(lambda m, x: m.vander(x), randn(4))
    both(lambda m, x: m.vander(x, N=3, increasing=True), randn(4))
    x = ember.tensor(randn(4), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.vander(t, N=3), (x,))
    both(lambda m, x: m.vander(x), np.arange(4))
    both(lambda m, x: m.block_diag(x, x), np.arange(4).reshape(2, 2))


# -- distances, differences, integrals -------------------------------------------------------

@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf, 0.0])
def test_cdist(p):
    check_op(lambda m, x, y: m.cdist(x, y, p=p), randn(2, 4, 3), randn(2, 5, 3, seed=1),
             grad=p != 0.0)


def test_cdist_zero_distance_has_zero_gradient():
    for m in (ember, torch):
        x = m.tensor([[1.0, 2.0]], requires_grad=True)
        m.cdist(x, x.detach()).sum().backward()
        assert x.grad.tolist() == [[0.0, 0.0]]
    with pytest.raises(RuntimeError, match="columns"):
        ember.cdist(ember.zeros(2, 3), ember.zeros(2, 4))


def test_dist_diff():
    a, b = randn(3, 4), randn(3, 4, seed=1)
    check_op(lambda m, x, y: m.dist(x, y), a, b)
    check_op(lambda m, x, y: x.dist(y, 1), a, b)
    check_op(lambda m, x, y: x.dist(y, 3), a, b)
    check_op(lambda m, x: x.diff(), a)
    check_op(lambda m, x: m.diff(x, n=2, dim=0), a)
    check_op(lambda m, x, y: m.diff(x, dim=1, prepend=y[:, :1], append=y), a, b)
    both(lambda m, x: m.diff(x), np.array([1, 4, 9, 16]))
    both(lambda m, x: m.diff(x), np.array([True, False, False, True]))


def test_trapezoid():
    y, x = randn(3, 5), np.sort(randn(5, seed=1))
    check_op(lambda m, t: m.trapezoid(t), y)
    check_op(lambda m, t: m.trapezoid(t, dx=0.5, dim=0), y)
    check_op(lambda m, t, s: m.trapezoid(t, s), y, x)
    check_op(lambda m, t, s: m.trapz(t, s), y, x)
    check_op(lambda m, t: m.cumulative_trapezoid(t), y)
    check_op(lambda m, t, s: m.cumulative_trapezoid(t, s), y, x)


# -- order statistics ----------------------------------------------------------------------

@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interp):
    a = randn(4, 7)
    check_op(lambda m, x: m.quantile(x, 0.3, interpolation=interp), a)
    check_op(lambda m, x: x.quantile(m.tensor([0.0, 0.25, 1.0], dtype=x.dtype), dim=1,
                                     interpolation=interp), a)
    check_op(lambda m, x: m.quantile(x, 0.5, dim=0, keepdim=True, interpolation=interp), a)
    check_op(lambda m, x: m.quantile(x, m.tensor([0.1, 0.9], dtype=x.dtype), keepdim=True,
                                     interpolation=interp), a)


def test_nanquantile_and_nan():
    a = randn(3, 5)
    a[0, 1] = np.nan
    a[2] = np.nan
    both(lambda m, x: m.nanquantile(x, 0.4, dim=1), a)
    both(lambda m, x: x.nanquantile(m.tensor([0.2, 0.7], dtype=x.dtype), dim=1), a)
    both(lambda m, x: m.quantile(x, 0.4, dim=1), a)
    with pytest.raises(RuntimeError, match="range"):
        ember.quantile(ember.zeros(3), 1.5)
    with pytest.raises(RuntimeError, match="float"):
        ember.quantile(ember.arange(3), 0.5)


def test_bucketize_unravel_isin_gcd_lcm_shifts():
    both(lambda m, x, b: m.bucketize(x, b), np.array([0.5, 1.0, 2.5, 9.0]),
         np.array([1.0, 2.0, 3.0]))
    both(lambda m, x, b: m.bucketize(x, b, right=True, out_int32=True),
         np.array([0.5, 1.0, 2.5]), np.array([1.0, 2.0, 3.0]))
    both(lambda m, x: m.unravel_index(x, (3, 4)), np.array([0, 5, 11, -1]))
    both(lambda m, x: m.unravel_index(x, 7), np.array(3))
    both(lambda m, x, y: m.isin(x, y), np.arange(6), np.array([1, 4, 9]))
    both(lambda m, x, y: m.isin(x, y, invert=True), np.arange(6), np.array([1, 4, 9]))
    both(lambda m, x, y: m.gcd(x, y), np.array([12, -18, 0, 7]), np.array([8, 12, 5, 0]))
    both(lambda m, x, y: x.lcm(y), np.array([4, -6, 0]), np.array([6, 4, 3]))
    both(lambda m, x, y: x.bitwise_left_shift(y), np.array([1, 3, -4]), np.array([2, 1, 1]))
    both(lambda m, x, y: x.bitwise_right_shift(y), np.array([16, 3, -4]), np.array([2, 1, 1]))
    with pytest.raises(RuntimeError):
        ember.gcd(ember.zeros(2), ember.zeros(2))


# -- statistics ---------------------------------------------------------------------------

def test_cov_corrcoef():
    a = randn(3, 6)
    check_op(lambda m, x: m.cov(x), a)
    check_op(lambda m, x: x.cov(correction=0), a)
    check_op(lambda m, x: m.cov(x[0]), a)
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = positive(6, seed=3)
    check_op(lambda m, x: m.cov(x, fweights=m.tensor(fw), aweights=m.tensor(aw, dtype=x.dtype)), a)
    check_op(lambda m, x: m.corrcoef(x), a)
    both(lambda m, x: m.cov(x), np.arange(12).reshape(3, 4))


def test_logcumsumexp_rsub_fill_renorm_ldexp():
    a = randn(3, 5) * 30
    check_op(lambda m, x: m.logcumsumexp(x, 1), a)
    check_op(lambda m, x: x.logcumsumexp(0), a)
    both(lambda m, x: m.logcumsumexp(x, 0), np.array([-np.inf, -np.inf, 1.0]))
    check_op(lambda m, x, y: m.rsub(x, y), a, randn(3, 5, seed=1))
    check_op(lambda m, x, y: m.rsub(x, y, alpha=2), a, randn(3, 5, seed=1))
    both(lambda m, x: m.fill(x, 2.5), randn(2, 2))
    check_op(lambda m, x: m.renorm(x, 2, 0, 1.0), randn(4, 3))
    check_op(lambda m, x: x.renorm(1, 1, 2.0), randn(4, 3))
    check_op(lambda m, x, y: m.ldexp(x, y), randn(4), np.array([1.0, -2.0, 3.0, 0.0]),
             grad_inputs=(0,))
    both(lambda m, x, y: m.ldexp(x, y), np.array([1, 2]), np.array([3, 1]))


def test_frexp_nextafter_histogram_angle():
    both(lambda m, x: m.frexp(x), randn(5).astype(np.float32))
    both(lambda m, x: x.frexp(), np.array([0.0, 1.0, -3.5, 1e-30]))
    both(lambda m, x, y: m.nextafter(x, y), np.array([1.0, 0.0], np.float32),
         np.array([2.0, -1.0], np.float32))
    x = randn(50).astype(np.float32)
    both(lambda m, t: m.histogram(t, 5), x)
    both(lambda m, t: t.histogram(4, range=(-1.0, 1.0), density=True), x)
    both(lambda m, t, b: m.histogram(t, b), x, np.array([-1.0, 0.0, 0.5, 2.0], np.float32))
    check_op(lambda m, t: m.angle(t), np.array([-1.5, 0.5, 2.0, -0.1]))
    both(lambda m, t: m.angle(t), np.array([-1, 0, 2]))
    both(lambda m, t: t.angle(), np.array([np.nan, -1.0]))


def test_windows():
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window"):
        for n in (0, 1, 2, 7, 8):
            for periodic in (True, False):
                both(lambda m, n=n, p=periodic, nm=name: getattr(m, nm)(n, p), atol=1e-6)
        both(lambda m, nm=name: getattr(m, nm)(6, dtype=m.float64))
    both(lambda m: m.kaiser_window(9, False, beta=5.0))
    both(lambda m: m.hamming_window(9, True, alpha=0.5, beta=0.4))


def test_frombuffer_shares_memory():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    e = ember.frombuffer(buf, dtype=ember.float32)
    t = torch.frombuffer(bytearray(buf), dtype=torch.float32)
    same(e, t)
    e[0] = 7.0
    assert np.frombuffer(buf, np.float32)[0] == 7.0
    same(ember.frombuffer(buf, dtype=ember.int16, count=2, offset=4),
         torch.frombuffer(bytearray(buf), dtype=torch.int16, count=2, offset=4))


# -- special functions with gradients -------------------------------------------------------

def test_lgamma_digamma_polygamma_have_gradients():
    a = positive(6) + 0.2
    check_op(lambda m, x: m.lgamma(x), a, gradgrad=True)
    check_op(lambda m, x: x.lgamma(), a - 3.1)
    check_op(lambda m, x: m.digamma(x), a, gradgrad=True)
    check_op(lambda m, x: x.digamma(), a)
    for n in (0, 1, 2, 3):
        check_op(lambda m, x, n=n: m.polygamma(n, x), a, rtol=1e-4)
        check_op(lambda m, x, n=n: x.polygamma(n), a, rtol=1e-4)
    check_op(lambda m, x: m.mvlgamma(x, 3), a + 1.5)
    check_op(lambda m, x: m.special.multigammaln(x, 2), a + 1.0)
    check_op(lambda m, x: m.special.psi(x), a)
    check_op(lambda m, x: m.special.gammaln(x), a)
    check_op(lambda m, x: m.special.polygamma(2, x), a, rtol=1e-4)
    both(lambda m, x: m.lgamma(x), np.array([1, 2, 5]))
    # PyTorch 2.13 no longer refuses x <= (p - 1) / 2: the sum of log|Gamma| terms (inf at poles)
    both(lambda m, x: m.mvlgamma(x, 3), np.array([0.4, 0.5, -0.3, 1.0], dtype=np.float32))


def test_special_extras():
    a = randn(7) * 3
    check_op(lambda m, x: m.special.erfcx(x), randn(7), rtol=1e-4)
    check_op(lambda m, x: m.special.ndtri(x), np.array([0.01, 0.2, 0.5, 0.9, 0.999]),
             rtol=1e-4)
    check_op(lambda m, x: m.special.log_ndtr(x), a)
    check_op(lambda m, x, y: m.special.xlog1py(x, y), a, positive(7, seed=1))
    check_op(lambda m, x: m.special.round(x), a, grad=False)
    check_op(lambda m, x: m.special.exp2(x), a)
    both(lambda m, x: m.special.ndtri(x), np.array([0.0, 1.0, 0.5]))
    both(lambda m, x, y: m.special.xlog1py(x, y), np.array([0.0, 1.0]), np.array([-1.0, 3.0]))


# -- in-place forms --------------------------------------------------------------------------

INPLACE_UNARY = ("absolute_ acos_ arccos_ arcsin_ arctan_ asin_ atan_ cos_ cosh_ deg2rad_ "
                 "erf_ erfc_ erfinv_ exp2_ expm1_ fix_ frac_ log10_ log1p_ log2_ logit_ "
                 "negative_ rad2deg_ rsqrt_ sgn_ sign_ sin_ sinc_ sinh_ tan_ lgamma_ digamma_ "
                 "nan_to_num_ logical_not_").split()
INPLACE_BINARY = ("arctan2_ atan2_ copysign_ divide_ eq_ floor_divide_ fmod_ ge_ greater_ "
                  "greater_equal_ gt_ heaviside_ hypot_ le_ less_ less_equal_ lt_ multiply_ "
                  "ne_ not_equal_ remainder_ subtract_ true_divide_ xlogy_ logical_and_ "
                  "logical_or_ logical_xor_ nextafter_").split()


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_inplace_unary(name):
    a = np.array([0.1, 0.4, 0.7, 0.95])
    if name in ("lgamma_", "digamma_"):
        a = a + 1
    e, t = ember.tensor(a), torch.tensor(a)
    r = getattr(e, name)()
    assert r is e
    getattr(t, name)()
    same(e, t)


@pytest.mark.parametrize("name", INPLACE_BINARY)
def test_inplace_binary(name):
    a, b = np.array([0.5, -1.5, 2.0, 3.0]), np.array([1.0, 2.0, 2.0, -4.0])
    e, t = ember.tensor(a), torch.tensor(a)
    assert getattr(e, name)(ember.tensor(b)) is e
    getattr(t, name)(torch.tensor(b))
    same(e, t)


def test_inplace_with_arguments_and_integers():
    for m in (ember, torch):
        x = m.arange(6.0).reshape(2, 3)
        x.cumsum_(1)
        assert x.tolist() == [[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]]
        x.cumprod_(0)
        x.polygamma_(1) if m is torch else x.polygamma_(1)
    a, b = np.array([12, 18, 7]), np.array([8, 12, 3])
    for name in ("gcd_", "lcm_", "bitwise_and_", "bitwise_or_", "bitwise_xor_",
                 "bitwise_left_shift_", "bitwise_right_shift_"):
        e, t = ember.tensor(a), torch.tensor(a)
        getattr(e, name)(ember.tensor(b))
        getattr(t, name)(torch.tensor(b))
        same(e, t)
    e, t = ember.tensor(a), torch.tensor(a)
    e.bitwise_not_()
    t.bitwise_not_()
    same(e, t)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.tensor([1, 2]).sin_()


def test_inplace_records_gradients():
    a = randn(4)
    check_op(lambda m, x: (x * 1).sin_(), a)
    check_op(lambda m, x: (x * 1).cumsum_(0), a)
    check_op(lambda m, x, y: (x * 1).hypot_(y), a, randn(4, seed=1))
    check_op(lambda m, x: (x * 1).renorm_(2, 0, 0.5), randn(3, 2))


def test_torch_level_inplace_functions():
    for name in ("exp_", "sqrt_", "sigmoid_", "neg_", "zero_", "round_", "trunc_", "tanh_"):
        a = np.array([0.25, 1.5, 2.0])
        e, t = ember.tensor(a), torch.tensor(a)
        assert getattr(ember, name)(e) is e
        getattr(torch, name)(t)
        same(e, t)
    e, t = ember.zeros(2), torch.zeros(2)
    ember.fill_(e, 3.0)
    torch.fill_(t, 3.0)
    same(e, t)
    e, t = ember.tensor([-1.0, 2.0]), torch.tensor([-1.0, 2.0])
    ember.relu_(e)
    torch.relu_(t)
    same(e, t)
    ember.clamp_(e, 0.5, 1.0)
    torch.clamp_(t, 0.5, 1.0)
    same(e, t)


def test_multinomial_method_and_misc_tensor_methods():
    ember.manual_seed(0)
    p = ember.tensor([0.0, 1.0, 0.0])
    assert p.multinomial(3, replacement=True).tolist() == [1, 1, 1]
    x = ember.zeros(2, 3)
    assert x.new_empty_strided((3, 2), (2, 1)).shape == (3, 2)
    assert x.is_set_to(x) and not x.is_set_to(ember.zeros(2, 3))
    assert x.const_data_ptr() == x.data_ptr()
    y = ember.zeros(6)
    y.resize_as_(x)
    assert y.shape == (2, 3)
    both(lambda m, t: t.conj_physical(), randn(3))


def test_top_level_activation_and_norm_functions():
    a = randn(2, 4, 3)
    check_op(lambda m, x: m.rms_norm(x, (3,)), a)
    check_op(lambda m, x: m.channel_shuffle(x, 2), a, grad=False)
    check_op(lambda m, x, y, w: m.bilinear(x, y, w), randn(2, 3), randn(2, 4, seed=1),
             randn(5, 3, 4, seed=2))
    for name in ("relu_", "selu_", "celu_"):
        e, t = ember.tensor(a), torch.tensor(a)
        getattr(ember, name)(e)
        getattr(torch, name)(t)
        same(e, t)


# -- fresh seed per process ------------------------------------------------------------------

def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_unseeded_processes_differ_and_manual_seed_repeats():
    code = "import ember; print(ember.initial_seed(), ember.rand(3).tolist())"
    first, second = _run(code), _run(code)
    assert first != second  # PyTorch: each process starts from a fresh default seed
    seeded = "import ember; ember.manual_seed(3); print(ember.rand(3).tolist())"
    assert _run(seeded) == _run(seeded)
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.manual_seed(5)
        assert ember.initial_seed() == 5


def test_more_tensor_methods():
    a = randn(3, 4)
    check_op(lambda m, x: (x * 0.5).arctanh(), a)
    check_op(lambda m, x: x.arcsinh(), a)
    check_op(lambda m, x: (x.abs() + 1.5).arccosh(), a)
    check_op(lambda m, x: x.reshape(1, 3, 4).dsplit(2)[1], a)
    check_op(lambda m, x: x.hardshrink(0.3), a)
    check_op(lambda m, x, w: x.prelu(w), a, np.array([0.25]))
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            check_op(lambda m, x, s, r=reduce, inc=include_self: x.index_reduce(
                0, m.tensor([0, 2, 0, 1]), s, r, include_self=inc), a, randn(4, 4, seed=1))
    e, t = ember.tensor(a), torch.tensor(a)
    e.index_reduce_(1, ember.tensor([3, 3]), ember.ones(3, 2, dtype=e.dtype) * 2, "prod")
    t.index_reduce_(1, torch.tensor([3, 3]), torch.ones(3, 2, dtype=t.dtype) * 2, "prod")
    same(e, t)
    e, t = ember.zeros(5), torch.zeros(5)
    e.put_(ember.tensor([1, 3]), ember.tensor([2.0, 4.0]))
    t.put_(torch.tensor([1, 3]), torch.tensor([2.0, 4.0]))
    same(e, t)
    for m in (ember, torch):
        y = m.arange(6.0).reshape(3, 2)
        y.apply_(lambda v: v * 2 + 1)
        assert y.tolist() == [[1.0, 3.0], [5.0, 7.0], [9.0, 11.0]]
        y.map_(m.tensor([1.0, -1.0]), lambda u, v: u * v)
        assert y.tolist() == [[1.0, -3.0], [5.0, -7.0], [9.0, -11.0]]
        assert y.conj_physical_() is y
        x = m.ones(3, 2)
        assert x.new(2, 3).shape == (2, 3) and x.new().shape == (0,)
        assert x.new(m.Size([4])).shape == (4,)
        z = x.new((2, 3))
        assert z.tolist() == [2.0, 3.0] and z.dtype == m.float32
    assert ember.ones(2).record_stream(None) is None  # (torch's needs a real CUDA stream)
    ember.manual_seed(1)
    assert set(ember.full((50,), 0.5).bernoulli().tolist()) == {0.0, 1.0}
    assert ember.ones(3).bernoulli(0.0).tolist() == [0.0, 0.0, 0.0]


# -- torch.linalg composites -----------------------------------------------------------------

def _spd(n, seed=0):
    a = randn(n, n, seed=seed)
    return a @ a.T + n * np.eye(n)


def test_linalg_solve_triangular_and_ex_forms():
    a, b = _spd(4), randn(4, 3, seed=1)
    for upper in (True, False):
        for left in (True, False):
            for unit in (True, False):
                bb = b if left else b.T
                check_op(lambda m, x, y, u=upper, l_=left, un=unit: m.linalg.solve_triangular(
                    x, y, upper=u, left=l_, unitriangular=un), a, bb)
    check_op(lambda m, x, y: m.linalg.solve_ex(x, y)[0], a, b)
    both(lambda m, x, y: m.linalg.solve_ex(x, y).info, a, b)
    check_op(lambda m, x: m.linalg.cholesky_ex(x @ x.mT + 3 * m.eye(3, dtype=x.dtype)).L,
             randn(3, 3))
    both(lambda m, x: m.linalg.cholesky_ex(x), _spd(3))
    both(lambda m, x: m.linalg.cholesky_ex(x).info, -np.eye(3))
    both(lambda m, x: m.linalg.cholesky_ex(x).info, np.diag([1.0, 2.0, -1.0]))
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.cholesky_ex(-ember.eye(2), check_errors=True)


def test_linalg_vander_matrix_exp_cond():
    check_op(lambda m, x: m.linalg.vander(x), randn(4))
    check_op(lambda m, x: m.linalg.vander(x, N=6), randn(2, 3))
    for scale in (0.1, 1.0, 5.0):
        check_op(lambda m, x, sc=scale: m.linalg.matrix_exp(x * sc), randn(2, 3, 3), rtol=1e-5,
                 atol=1e-5)
    both(lambda m, x: m.linalg.matrix_exp(x), np.zeros((2, 2)))
    for p in (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1):
        both(lambda m, x, p=p: m.linalg.cond(x, p), _spd(3))
        # torch's own cond backward trips its version check for some p: gradcheck on ember
        x = ember.tensor(_spd(3), requires_grad=True)
        assert ember.autograd.gradcheck(lambda t, p=p: ember.linalg.cond(t, p), (x,))


def test_linalg_tensorinv_tensorsolve_lstsq():
    a = randn(4, 6, 8, 3, seed=2)
    check_op(lambda m, x: m.linalg.tensorinv(x.reshape(4, 6, 8, 3), ind=2), a)
    check_op(lambda m, x, y: m.linalg.tensorsolve(x.reshape(6, 4, 2, 3, 4), y),
             randn(6, 4, 2, 3, 4, seed=3), randn(6, 4, seed=4))
    check_op(lambda m, x, y: m.linalg.tensorsolve(x, y, dims=(0,)),
             randn(6, 2, 3, seed=5), randn(2, 3, seed=6))
    A, B = randn(6, 3, seed=7), randn(6, 2, seed=8)
    check_op(lambda m, x, y: m.linalg.lstsq(x, y).solution, A, B)
    for driver in ("gelsd", "gelss", "gelsy"):
        both(lambda m, x, y, d=driver: m.linalg.lstsq(x, y, driver=d), A, B)
    both(lambda m, x, y: m.linalg.lstsq(x, y, driver="gelsd"), A, B[:, 0])


# -- Bessel functions and orthogonal polynomials ---------------------------------------------

def test_bessel_i():
    x = np.array([-40.0, -31.0, -12.0, -2.5, -0.3, 0.0, 0.4, 1.0, 7.0, 29.9, 30.1, 45.0, 200.0])
    for name in ("i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1"):
        both(lambda m, t, n=name: getattr(m.special, n)(t), x, rtol=1e-12)
        both(lambda m, t, n=name: getattr(m.special, n)(t), x.astype(np.float32), rtol=1e-5)
    both(lambda m, t: m.i0(t), np.array([1, 2, 3]))
    both(lambda m, t: t.i0(), np.array([0.5, -3.0]))
    g = np.array([-3.0, -0.5, 0.0, 0.7, 2.0, 12.0])
    for name in ("i0", "i0e", "i1", "i1e"):
        check_op(lambda m, t, n=name: getattr(m.special, n)(t), g, rtol=1e-5)
    e, t = ember.tensor([0.5, 1.0]), torch.tensor([0.5, 1.0])
    e.i0_()
    t.i0_()
    same(e, t)


POLYS = ("chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v "
         "chebyshev_polynomial_w shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u "
         "shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w hermite_polynomial_h "
         "hermite_polynomial_he laguerre_polynomial_l legendre_polynomial_p").split()


@pytest.mark.parametrize("name", POLYS)
def test_orthogonal_polynomials(name):
    x = np.array([-1.5, -1.0, -0.3, 0.0, 0.25, 0.7, 1.0, 2.0], np.float32)
    for n in (0, 1, 2, 5, 9):
        both(lambda m, t, n=n: getattr(m.special, name)(t, n), x, rtol=2e-5, atol=1e-4)
    ns = np.array([0, 1, 2, 3, 4, 6, 5, -1])
    both(lambda m, t, k: getattr(m.special, name)(t, k), x.astype(np.float64), ns, rtol=1e-9)


def test_spherical_bessel_j0():
    x = np.array([0.0, 1e-6, 1e-3, 0.5, -2.0, 30.0])
    both(lambda m, t: m.special.spherical_bessel_j0(t), x, rtol=1e-12)
    check_op(lambda m, t: m.special.spherical_bessel_j0(t), x[2:])


# -- affine_grid and grid_sample -------------------------------------------------------------

@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(align):
    theta = randn(2, 2, 3) * 0.5 + np.array([[1.0, 0, 0], [0, 1.0, 0]])
    check_op(lambda m, t: m.nn.functional.affine_grid(t, (2, 3, 4, 5), align_corners=align),
             theta)
    theta3 = randn(2, 3, 4, seed=1)
    check_op(lambda m, t: m.nn.functional.affine_grid(t, (2, 1, 2, 3, 4), align_corners=align),
             theta3)
    check_op(lambda m, t: m.nn.functional.affine_grid(t, (2, 3, 1, 1), align_corners=align),
             theta)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(mode, padding, align):
    img = randn(2, 3, 5, 6)
    grid = np.random.default_rng(7).uniform(-1.4, 1.4, (2, 4, 3, 2))
    check_op(lambda m, x, g: m.nn.functional.grid_sample(
        x, g, mode=mode, padding_mode=padding, align_corners=align), img, grid,
        grad_inputs=(0,) if mode == "nearest" else None)


def test_grid_sample_identity_and_errors():
    x = ember.randn(1, 2, 4, 4)
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    g = ember.nn.functional.affine_grid(theta, (1, 2, 4, 4), align_corners=False)
    y = ember.nn.functional.grid_sample(x, g, align_corners=False)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        ember.nn.functional.grid_sample(x, g, mode="cubic")
    y = ember.nn.functional.grid_sample(x, g, mode="bicubic", align_corners=False)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-6)


def test_margin_losses():
    x = randn(4, 5)
    t = np.array([0, 2, 4, 1])
    for p in (1, 2):
        for red in ("mean", "sum", "none"):
            check_op(lambda m, a, p=p, r=red: m.nn.functional.multi_margin_loss(
                a, m.tensor(t), p=p, margin=0.7, reduction=r), x)
    check_op(lambda m, a, w: m.nn.functional.multi_margin_loss(a, m.tensor(t), weight=w),
             x, positive(5, seed=2), grad_inputs=(0,))
    check_op(lambda m, a: m.nn.functional.multi_margin_loss(a[0], m.tensor([3])), x)
    mt = np.array([[0, 2, -1, 0, 0], [1, -1, 0, 0, 0], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0]])
    for red in ("mean", "sum", "none"):
        check_op(lambda m, a, r=red: m.nn.functional.multilabel_margin_loss(
            a, m.tensor(mt), reduction=r), x)
    a, pp, n = randn(4, 3), randn(4, 3, seed=1), randn(4, 3, seed=2)
    check_op(lambda m, x, y, z: m.nn.functional.triplet_margin_with_distance_loss(x, y, z),
             a, pp, n)
    check_op(lambda m, x, y, z: m.nn.functional.triplet_margin_with_distance_loss(
        x, y, z, distance_function=lambda u, v: (u - v).abs().sum(-1), swap=True, margin=2.0,
        reduction="none"), a, pp, n)


def test_lp_pool_and_max_unpool():
    x = positive(2, 3, 6, 6)
    for p in (1.0, 2.0, 3.0):
        check_op(lambda m, a, p=p: m.nn.functional.lp_pool2d(a, p, 2), x)
        check_op(lambda m, a, p=p: m.nn.functional.lp_pool2d(a, p, (3, 2), stride=(2, 1)), x)
        check_op(lambda m, a, p=p: m.nn.functional.lp_pool1d(a[:, :, 0], p, 3, stride=2), x)
    for m in (ember, torch):
        y = m.tensor(randn(2, 3, 6, 6))
        v, i = m.nn.functional.max_pool2d(y, 2, return_indices=True)
        u = m.nn.functional.max_unpool2d(v, i, 2)
        u2 = m.nn.functional.max_unpool2d(v, i, 2, output_size=(7, 7))
        v1, i1 = m.nn.functional.max_pool1d(y[:, :, 0], 2, return_indices=True)
        u1 = m.nn.functional.max_unpool1d(v1, i1, 2)
        if m is ember:
            e_out = (u, u2, u1)
        else:
            same(e_out, (u, u2, u1))
    check_op(lambda m, a: m.nn.functional.max_unpool2d(
        *m.nn.functional.max_pool2d(a, 2, return_indices=True), 2), randn(1, 2, 4, 4))


def test_compiler_module():
    for m in (ember, torch):
        assert m.compiler.is_compiling() is False and m.compiler.is_dynamo_compiling() is False

        @m.compiler.disable
        def f(x):
            return x + 1

        @m.compiler.disable(recursive=False)
        def g(x):
            return x * 2

        assert f(1) == 2 and g(2) == 4
        m.compiler.reset()
        assert m.compiler.allow_in_graph(f) is f
    assert ember.compiler.list_backends() == torch.compiler.list_backends()  # the names compile accepts
    model = ember.nn.Linear(2, 3)
    out = ember.compiler.compile(model)(ember.ones(1, 2))
    assert out.shape == (1, 3)


def test_vmap_device_module_and_torch_function_probes():
    f = ember.vmap(lambda x: x * 2)
    assert f(ember.ones(3, 2)).shape == (3, 2)
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module() is ember.cpu
    assert ember.get_device_module("cuda") is ember.cuda
    assert torch.get_device_module("cpu") is torch.cpu
    F = ember.nn.functional
    x = ember.ones(2)
    assert F.has_torch_function((x,)) is False
    assert F.has_torch_function_unary(x) is False and F.has_torch_function_variadic(x) is False
    assert F.handle_torch_function(lambda a: a + 1, (x,), x).tolist() == [2.0, 2.0]
