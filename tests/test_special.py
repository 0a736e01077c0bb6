"""Tests for ember/_special.py: erf, erfc, erfcx, erfinv, lgamma, digamma on arrays.

References: Python's math module (erf, erfc, lgamma), mpmath at 40 digits where installed
(it comes with torch's sympy), identities (recurrences, reflection, round trips), PyTorch.
"""

import math

import numpy as np
import pytest

import ember
from ember import _special as S
from ember import _special_tables as T
from helpers import HAVE_TORCH, check_op, randn


@pytest.fixture(autouse=True)
def _numpy_implementation(monkeypatch):
    """These tests check ember's own NumPy implementation, not SciPy's fast path."""
    monkeypatch.setattr(S, "USE_SCIPY", False)


def test_scipy_fast_path_agrees_with_numpy_implementation(monkeypatch):
    pytest.importorskip("scipy")
    x = np.linspace(-6, 6, 1001)
    u = np.linspace(-0.999, 0.999, 1001)
    pure = [S.erf(x), S.erfc(x), S.erfinv(u), S.erf(x.astype(np.float32))]
    monkeypatch.setattr(S, "USE_SCIPY", True)
    fast = [S.erf(x), S.erfc(x), S.erfinv(u), S.erf(x.astype(np.float32))]
    for p, f in zip(pure, fast):
        assert p.dtype == f.dtype
        np.testing.assert_allclose(f, p, rtol=2e-6 if p.dtype == np.float32 else 1e-13, atol=1e-300)

if HAVE_TORCH:
    import torch

try:
    import mpmath as mp

    mp.mp.dps = 40
except ImportError:  # pragma: no cover
    mp = None

needs_mp = pytest.mark.skipif(mp is None, reason="needs mpmath")
RNG = np.random.default_rng(1234)


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want) / np.abs(want)


# ---------------------------------------------------------------------------------------------
# erf / erfc: float64 relative error <= 1e-14 against math.erf / math.erfc

X_WIDE = np.concatenate([
    RNG.uniform(-6, 6, 4000), RNG.uniform(-27, 27, 4000), np.linspace(-3, 3, 1201),
    10.0 ** RNG.uniform(-300, 1.43, 2000), -(10.0 ** RNG.uniform(-300, 1.43, 1000)),
    [0.5, -0.5, 0.4999999999999999, 1.0, 2.0, 26.0, -26.0, 27.0, -27.0, 1e-320],
])


def test_erf_vs_math():
    got = S.erf(X_WIDE)
    want = np.array([math.erf(v) for v in X_WIDE])
    nz = want != 0
    assert rel_err(got[nz], want[nz]).max() <= 1e-14
    assert got.dtype == np.float64


def test_erfc_vs_math_tails_included():
    got = S.erfc(X_WIDE)
    want = np.array([math.erfc(v) for v in X_WIDE])
    normal = want > np.finfo(np.float64).tiny  # below this, erfc is subnormal (x > 26.5)
    assert rel_err(got[normal], want[normal]).max() <= 1e-14
    sub = ~normal & (want > 0)
    np.testing.assert_allclose(got[sub], want[sub], rtol=1e-3, atol=0)  # subnormals: few bits
    assert S.erfc(np.array([30.0, 1e300, np.inf]))[0] == 0.0


def test_erfc_no_cancellation():
    # 1 - erf(x) would be 0 (or noise) for these; erfc keeps full relative precision
    x = np.array([6.0, 8.0, 10.0, 15.0, 20.0, 25.0, 26.5])
    want = np.array([math.erfc(v) for v in x])
    assert rel_err(S.erfc(x), want).max() <= 1e-14
    assert S.erfc(np.array([-6.0]))[0] == 2.0


@needs_mp
def test_erf_erfc_erfcx_vs_mpmath():
    x = np.concatenate([RNG.uniform(-8, 8, 600), RNG.uniform(-27, 27, 300),
                        10.0 ** RNG.uniform(-20, 1, 200)])
    erf_ref = np.array([float(mp.erf(mp.mpf(v))) for v in x])
    erfc_ref = np.array([float(mp.erfc(mp.mpf(v))) for v in x])
    assert rel_err(S.erf(x), erf_ref).max() <= 2e-15
    normal = erfc_ref > 1e-300
    assert rel_err(S.erfc(x)[normal], erfc_ref[normal]).max() <= 2e-15
    xs = np.concatenate([x[x > -26], [30.0, 50.0, 1e3, 1e10, 1e100]])
    erfcx_ref = np.array([float(mp.exp(mp.mpf(v) ** 2) * mp.erfc(mp.mpf(v))) for v in xs])
    assert rel_err(S.erfcx(xs), erfcx_ref).max() <= 2e-15


def test_erf_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    e = S.erf(x)
    assert np.isnan(e[0]) and e[1] == 1 and e[2] == -1 and e[3] == 0
    assert np.signbit(e[4])  # erf(-0) = -0
    c = S.erfc(x)
    assert np.isnan(c[0]) and c[1] == 0 and c[2] == 2 and c[3] == 1 and c[4] == 1
    cx = S.erfcx(x)
    assert np.isnan(cx[0]) and cx[1] == 0 and cx[2] == np.inf and cx[3] == 1
    assert S.erfcx(np.array([-30.0]))[0] == np.inf


def test_erf_odd_and_complement():
    x = RNG.uniform(-5, 5, 1000)
    np.testing.assert_array_equal(S.erf(-x), -S.erf(x))
    np.testing.assert_allclose(S.erf(x) + S.erfc(x), 1.0, rtol=0, atol=2e-16)


# ---------------------------------------------------------------------------------------------
# erfinv


def test_erfinv_round_trips():
    p = np.concatenate([RNG.uniform(-1, 1, 4000), 1 - 10.0 ** RNG.uniform(-16, -1, 500),
                        10.0 ** RNG.uniform(-300, 0, 300)])
    p = p[np.abs(p) < 1]
    back = S.erf(S.erfinv(p))
    assert rel_err(back, p).max() <= 4e-16 * 4
    # erfinv(erf(x)) = x where erf is well conditioned (|x| < 2), and through erfc in the tail
    x = RNG.uniform(-2, 2, 2000)
    assert rel_err(S.erfinv(S.erf(x)), x).max() <= 1e-14
    x = RNG.uniform(2, 5.8, 500)
    q = S.erfc(x)  # erfinv(1 - q) = x: 1 - q is exact only when q is a multiple of the ulp of 1
    q = np.round(q / 2.0**-53) * 2.0**-53
    q = q[q > 0]
    xs = S.erfinv(1.0 - q)
    assert rel_err(S.erfc(xs), q).max() <= 1e-14


@needs_mp
def test_erfinv_vs_mpmath():
    p = np.concatenate([RNG.uniform(-1, 1, 600), 1 - 10.0 ** RNG.uniform(-16, -1, 200),
                        -(1 - 10.0 ** RNG.uniform(-16, -1, 100)), 10.0 ** RNG.uniform(-300, 0, 100)])
    p = p[np.abs(p) < 1]
    ref = np.array([float(mp.erfinv(mp.mpf(v))) for v in p])
    assert rel_err(S.erfinv(p), ref).max() <= 2e-15


def test_erfinv_special_values():
    y = S.erfinv(np.array([1.0, -1.0, 0.0, -0.0, 1.5, -2.0, np.nan, np.inf]))
    assert y[0] == np.inf and y[1] == -np.inf and y[2] == 0 and np.signbit(y[3])
    assert np.isnan(y[4:]).all()
    assert abs(S.erfinv(np.array([0.5]))[0] - 0.4769362762044699) < 1e-16


# ---------------------------------------------------------------------------------------------
# lgamma


def test_lgamma_vs_math():
    x = np.concatenate([RNG.uniform(0, 30, 4000), RNG.uniform(-30, 0, 2000),
                        10.0 ** RNG.uniform(-300, 300, 1000), [0.5, 1.5, 2.5, 3.0, 10.0, 171.5]])
    x = x[~((x <= 0) & (x == np.round(x)))]
    got = S.lgamma(x)
    want = np.array([math.lgamma(v) for v in x])
    # absolute near the zeros of lgamma (x = 1, 2 and between negative integers), relative away
    np.testing.assert_allclose(got, want, rtol=2e-14, atol=2e-14)


def test_lgamma_exact_zeros_and_values():
    assert S.lgamma(np.array([1.0, 2.0])).tolist() == [0.0, 0.0]
    np.testing.assert_allclose(S.lgamma(np.array([0.5])), [0.5 * math.log(math.pi)], rtol=1e-15)
    n = np.arange(1, 30, dtype=np.float64)
    want = np.array([math.log(math.factorial(int(k) - 1)) for k in n])
    np.testing.assert_allclose(S.lgamma(n), want, rtol=1e-15, atol=1e-15)


@needs_mp
def test_lgamma_vs_mpmath_including_near_zeros():
    x = np.concatenate([RNG.uniform(0, 12, 800), 1 + RNG.uniform(-1e-3, 1e-3, 100),
                        2 + RNG.uniform(-1e-3, 1e-3, 100), 10.0 ** RNG.uniform(-300, 300, 200)])
    ref = np.array([float(mp.loggamma(mp.mpf(v))) for v in x])
    assert rel_err(S.lgamma(x), ref).max() <= 4e-15
    xn = RNG.uniform(-20, 0, 300)
    ref = np.array([float(mp.log(abs(mp.gamma(mp.mpf(v))))) for v in xn])
    np.testing.assert_allclose(S.lgamma(xn), ref, rtol=1e-13, atol=2e-14)


def test_lgamma_special_values():
    y = S.lgamma(np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 3e305, -1e-320]))
    assert (y[:6] == np.inf).all() and np.isnan(y[6]) and y[7] == np.inf
    np.testing.assert_allclose(y[8], -math.log(1e-320), rtol=1e-4)  # subnormal input


# ---------------------------------------------------------------------------------------------
# digamma

EULER = 0.57721566490153286061


def test_digamma_known_values():
    assert abs(S.digamma(np.array([1.0]))[0] + EULER) < 1e-16
    np.testing.assert_allclose(S.digamma(np.array([0.5])), [-EULER - 2 * math.log(2)],
                               rtol=1e-15)
    n = np.arange(1, 40)
    harmonic = np.cumsum(np.concatenate([[0.0], 1.0 / np.arange(1, 39)]))
    np.testing.assert_allclose(S.digamma(n.astype(np.float64)), harmonic - EULER, rtol=2e-15,
                               atol=1e-16)
    assert abs(S.digamma(np.array([1.4616321449683623]))[0]) < 1e-16  # the positive root


def test_digamma_identities():
    x = RNG.uniform(0.01, 40, 3000)
    np.testing.assert_allclose(S.digamma(x + 1), S.digamma(x) + 1 / x, rtol=2e-14, atol=2e-14)
    xn = RNG.uniform(-20, 0, 1000)
    xn = xn[np.abs(xn - np.round(xn)) > 1e-3]
    np.testing.assert_allclose(S.digamma(1 - xn) - S.digamma(xn), math.pi / np.tan(math.pi * xn),
                               rtol=1e-12, atol=1e-12)


def test_digamma_is_the_derivative_of_lgamma():
    x = np.concatenate([RNG.uniform(0.1, 50, 500), RNG.uniform(-9.9, -0.1, 200)])
    x = x[np.abs(x - np.round(x)) > 0.05]
    h = 1e-5
    fd = (S.lgamma(x + h) - S.lgamma(x - h)) / (2 * h)
    np.testing.assert_allclose(S.digamma(x), fd, rtol=1e-7, atol=1e-7)


@needs_mp
def test_digamma_vs_mpmath():
    x = np.concatenate([RNG.uniform(0, 15, 800), 1.4616321449683623 + RNG.uniform(-1e-3, 1e-3, 100),
                        10.0 ** RNG.uniform(-300, 300, 200)])
    ref = np.array([float(mp.digamma(mp.mpf(v))) for v in x])
    assert rel_err(S.digamma(x), ref).max() <= 4e-15


def test_digamma_special_values():
    y = S.digamma(np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan]))
    assert y[0] == -np.inf and y[1] == np.inf and np.isnan(y[2:4]).all()
    assert y[4] == np.inf and np.isnan(y[5]) and np.isnan(y[6])


# ---------------------------------------------------------------------------------------------
# polygamma


@needs_mp
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_polygamma_vs_mpmath(n):
    x = np.concatenate([RNG.uniform(0, 30, 300), 10.0 ** RNG.uniform(-100, 100, 100)])
    ref = np.array([float(mp.polygamma(n, mp.mpf(v))) for v in x])
    keep = (np.abs(ref) > 1e-300) & (np.abs(ref) < 1e300)  # normal, finite results
    assert rel_err(S.polygamma(n, x)[keep], ref[keep]).max() <= 4e-15
    xn = RNG.uniform(-8, 0, 200)
    ref = np.array([float(mp.polygamma(n, mp.mpf(v))) for v in xn])
    np.testing.assert_allclose(S.polygamma(n, xn), ref, rtol=1e-12)


def test_polygamma_identities_and_values():
    x = RNG.uniform(0.1, 30, 500)
    np.testing.assert_array_equal(S.polygamma(0, x), S.digamma(x))
    h = 1e-5
    fd = (S.digamma(x + h) - S.digamma(x - h)) / (2 * h)
    np.testing.assert_allclose(S.polygamma(1, x), fd, rtol=1e-7)
    np.testing.assert_allclose(S.polygamma(1, np.array([1.0, 0.5])),
                               [math.pi**2 / 6, math.pi**2 / 2], rtol=1e-15)
    np.testing.assert_allclose(S.polygamma(1, x + 1), S.polygamma(1, x) - 1 / x**2, rtol=1e-13)
    y = S.polygamma(2, np.array([0.0, -1.0, np.inf, np.nan]))
    assert y[0] == -np.inf and y[1] == -np.inf and y[2] == 0 and np.isnan(y[3])
    assert S.polygamma(1, np.array([0.0, -3.0])).tolist() == [np.inf, np.inf]
    assert S.polygamma(3, np.array([0.5], dtype=np.float32)).dtype == np.float32
    with pytest.raises(RuntimeError, match="negative n"):
        S.polygamma(-1, x)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_polygamma_matches_torch():
    x = np.concatenate([RNG.uniform(-6, 12, 400), [0.5, -0.5, 1e-8, 1e5]])
    x = x[np.abs(x - np.round(x)) > 1e-3]
    for n in (1, 2, 3):  # torch's polygamma is only good to ~1e-9 (mpmath checks ours above)
        np.testing.assert_allclose(S.polygamma(n, x), torch.polygamma(n, torch.tensor(x)).numpy(),
                                   rtol=1e-8, err_msg=str(n))


# ---------------------------------------------------------------------------------------------
# dtypes, shapes


@pytest.mark.parametrize("fn", [S.erf, S.erfc, S.erfcx, S.erfinv, S.lgamma, S.digamma])
def test_dtypes_and_shapes(fn):
    x = np.array([[0.1, 0.7], [-0.3, 0.95]])
    assert fn(x.astype(np.float32)).dtype == np.float32
    assert fn(x.astype(np.float16)).dtype == np.float16
    assert fn(np.array([1, 2])).dtype == np.float64
    assert fn(np.zeros((0, 3))).shape == (0, 3)
    out0 = fn(np.array(0.25))
    assert isinstance(out0, np.ndarray) and out0.shape == ()
    np.testing.assert_allclose(fn(x.astype(np.float32)), fn(x), rtol=3e-7)
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover
        return
    xb = x.astype(ml_dtypes.bfloat16)
    assert fn(xb).dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("fn", [S.erf, S.erfc, S.erfcx])
def test_float32_accuracy(fn):
    x = np.concatenate([RNG.uniform(-6, 6, 20000), RNG.uniform(-10, 10, 5000)]).astype(np.float32)
    x = x[fn(x.astype(np.float64)) < 1e38]
    want = fn(x.astype(np.float64))
    got = fn(x)
    keep = np.abs(want) > np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(want[keep]).astype(np.float32)).astype(np.float64)
    assert (np.abs(got[keep] - want[keep]) / ulp).max() <= 8


def test_array_subclass_kept():
    # ember's simulated CUDA arrays (an ndarray subclass) must stay on their "device"
    from ember._backend import FakeCudaArray

    x = np.linspace(-0.9, 0.9, 7).view(FakeCudaArray)
    for fn in (S.erf, S.erfc, S.erfcx, S.erfinv, S.lgamma, S.digamma):
        assert type(fn(x)) is FakeCudaArray, fn.__name__
    assert type(S.polygamma(1, x)) is FakeCudaArray


def test_vectorised_speed():
    import time

    x = RNG.standard_normal(200_000)
    t = time.perf_counter()
    for fn in (S.erf, S.erfc, S.lgamma, S.digamma):
        fn(x)
    S.erfinv(np.tanh(x))
    assert time.perf_counter() - t < 5.0  # a per-element Python loop would take far longer


def test_cupy_if_available():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        pytest.skip("no CUDA device")
    x = RNG.uniform(-5, 5, 1000)
    for fn in (S.erf, S.erfc, S.erfcx, S.lgamma, S.digamma):
        out = fn(cp.asarray(x))
        assert isinstance(out, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(out), fn(x), rtol=1e-13)
    p = np.tanh(x)
    np.testing.assert_allclose(cp.asnumpy(S.erfinv(cp.asarray(p))), S.erfinv(p), rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# through ember's ops, against torch


def test_ember_erf_erfinv_check_op():
    check_op(lambda m, x: m.erf(x), randn(3, 4) * 2, ref=lambda x: S.erf(x), gradgrad=True)
    p = np.tanh(randn(3, 4))
    check_op(lambda m, x: m.erfinv(x), p, ref=lambda x: S.erfinv(x), gradgrad=True)
    check_op(lambda m, x: m.erfc(x), randn(5) * 2, ref=lambda x: S.erfc(x))


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_values_match_torch():
    x = np.concatenate([RNG.uniform(-8, 8, 500), RNG.uniform(-27, 27, 100), [0.0, -0.0, np.inf]])
    for name in ("erf", "erfc", "lgamma", "digamma"):
        got = getattr(S, name)(x)
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        # lgamma/digamma next to their zeros at negative x: the reflection formula is accurate
        # to ~2e-16 absolute (PyTorch's libm is better there), hence the absolute tolerance
        atol = 1e-300 if name.startswith("erf") else 2e-15
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=atol, equal_nan=True,
                                   err_msg=name)
    p = np.concatenate([np.tanh(x[:500]), [1.0, -1.0, 0.0]])
    np.testing.assert_allclose(S.erfinv(p), torch.erfinv(torch.tensor(p)).numpy(), rtol=1e-13)
    np.testing.assert_allclose(S.erfcx(x[:-1]), torch.special.erfcx(torch.tensor(x[:-1])).numpy(),
                               rtol=1e-13)
    x32 = x.astype(np.float32)
    for name in ("erf", "erfc", "lgamma", "digamma"):
        got = getattr(S, name)(x32)
        want = getattr(torch, name)(torch.tensor(x32)).numpy()
        atol = 1e-37 if name.startswith("erf") else 1e-6  # torch's float32 lgamma near 0s
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=atol, equal_nan=True,
                                   err_msg=name)
    xs = RNG.uniform(0.05, 20, 300)
    for name in ("lgamma", "digamma"):
        got = getattr(ember, name)(ember.tensor(xs)).numpy()
        np.testing.assert_allclose(got, getattr(torch, name)(torch.tensor(xs)).numpy(),
                                   rtol=1e-13, err_msg=name)


# ---------------------------------------------------------------------------------------------
# the tables in ember/_special_tables.py are what the documented recipe produces


def _cheb_fit(f, a, b, n):
    nodes = n + 1
    xs = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes) for k in range(nodes)]
    fs = [f((b - a) / 2 * x + (a + b) / 2) for x in xs]
    c = [2 * mp.fsum(fs[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / nodes)
                     for k in range(nodes)) / nodes for j in range(nodes)]
    c[0] /= 2
    return c


def _cheb_to_mono(c):
    n = len(c)
    t = [[mp.mpf(1)] + [mp.mpf(0)] * (n - 1), [mp.mpf(0), mp.mpf(1)] + [mp.mpf(0)] * (n - 2)]
    for j in range(2, n):
        t.append([-t[j - 2][k] + (2 * t[j - 1][k - 1] if k else 0) for k in range(n)])
    return [mp.fsum(c[j] * t[j][k] for j in range(n)) for k in range(n)]


@needs_mp
def test_tables_regenerate():
    with mp.workdps(50):
        erfcx = lambda x: mp.exp(x * x) * mp.erfc(x)  # noqa: E731

        def row(k, deg):
            f = (lambda x: mp.erf(x) / x) if k < 2 else erfcx
            c = _cheb_fit(f, mp.mpf(k) / 4, mp.mpf(k + 1) / 4, deg)
            return [float(v * 2**j) for j, v in enumerate(_cheb_to_mono(c))]

        for k in (0, 1, 2, 7, 40, 111):
            np.testing.assert_allclose(T._ERF_TABLE64[k], row(k, 11), rtol=1e-15, atol=0)
        for k in (0, 3, 41):
            np.testing.assert_allclose(T._ERF_TABLE32[k], row(k, 5), rtol=1e-7, atol=0)
        c = _cheb_fit(lambda z: mp.loggamma(2 + z) / z, mp.mpf(-0.5), mp.mpf(0.5), 41)
        m = [float(v * 2**k) for k, v in enumerate(_cheb_to_mono(c[:21]))]
        np.testing.assert_allclose(T._LGAMMA2_COEFS, m, rtol=1e-14, atol=1e-22)
        x0 = mp.findroot(mp.digamma, mp.mpf(1.46))
        assert T._DIGAMMA_ROOT_HI + T._DIGAMMA_ROOT_LO == float(x0)
        assert float(x0 - mp.mpf(T._DIGAMMA_ROOT_HI)) == T._DIGAMMA_ROOT_LO
        c = _cheb_fit(lambda x: mp.digamma(x) / (x - x0), mp.mpf(1), mp.mpf(2), 41)
        m = [float(v * 2**k) for k, v in enumerate(_cheb_to_mono(c[:25]))]
        np.testing.assert_allclose(T._DIGAMMA_COEFS, m, rtol=1e-14, atol=1e-22)


# -- GELU's float32 normal CDF (_special.gelu32) ------------------------------------------------
def test_gelu32_erfc_fit_is_below_float32_rounding():
    """The fit P(t) of log(erfc(z)) + z^2 - log(t), t = 1/(1 + z/2), on z in [0, 10]."""
    mp = pytest.importorskip("mpmath")
    worst = 0.0
    for z in np.linspace(0.0, 10.0, 401):
        t = 1.0 / (1.0 + z / 2)
        p = sum(c * t**k for k, c in enumerate(S._ERFC_T_POLY))
        worst = max(worst, abs(p - float(mp.log(mp.erfc(z)) + z * z - mp.log(t))))
    assert worst < 6e-8  # relative error in erfc


def _gelu64(x):
    return x.astype(np.float64) * 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in
                                                  x.astype(np.float64).ravel()]).reshape(x.shape)


@pytest.mark.parametrize("n", [1, 1000, 65536, 65536 * 2 + 77])
def test_gelu32_matches_float64_within_float32_rounding(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    out, cdf = S.gelu32(x, True)
    assert out.dtype == cdf.dtype == np.float32 and out.shape == x.shape
    ref = _gelu64(x)
    # relative everywhere, the tail included (no 1 - erf cancellation: PyTorch's float32 gelu
    # is off by 100% there); the float32 exp argument -z^2 + P(t) sets the tail's bound
    rel = np.abs(out - ref) / np.maximum(np.abs(ref), 1e-35)
    assert rel[x >= -3].max(initial=0) <= 2e-6
    assert rel[(x < -3) & (np.abs(ref) > 1e-35)].max(initial=0) <= 2e-5
    assert np.allclose(cdf, ref / np.where(x == 0, 1, x), rtol=2e-5, atol=1e-7) or n == 1
    assert S.gelu32(x, False)[1] is None


def test_gelu32_special_values_as_pytorchs_float64_gelu():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -13.5, 13.5, -100.0], np.float32)
    out, _ = S.gelu32(x, True)
    assert out[0] == np.inf and np.isnan(out[1:3]).all()  # (PyTorch's float32 kernels differ)
    assert out[3] == 0 and not np.signbit(out[3]) and out[4] == 0 and np.signbit(out[4])
    assert -1e-39 < out[5] < 0 and out[6] == np.float32(13.5) and out[7] == 0
    xs = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # not contiguous
    assert np.array_equal(S.gelu32(xs, False)[0], S.gelu32(np.ascontiguousarray(xs), False)[0])


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
def test_gelu_float32_forward_and_backward_match_torch():
    import torch

    x = (np.random.default_rng(0).standard_normal((300, 257)) * 3).astype(np.float32)
    a = ember.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ya, yb = ember.nn.functional.gelu(a), torch.nn.functional.gelu(b)
    assert ya.dtype == ember.float32
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-6, atol=2e-6)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)
