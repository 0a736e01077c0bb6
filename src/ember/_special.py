"""Special functions NumPy lacks: erf, erfc, erfcx, erfinv, lgamma, digamma, polygamma.
Also (section "incomplete gamma, Hurwitz zeta, Bessel J, Y, K" below): gammainc, gammaincc,
zeta, bessel_j0/j1/y0/y1, modified_bessel_k0/k1 and their scaled forms, airy_ai.

Vectorised over NumPy or CuPy arrays (the array module is taken from the argument), no SciPy,
no per-element Python loops. Results keep the input's floating dtype (integer and bool inputs
give float64). erf, erfc and erfcx compute float32 (and float16/bfloat16) in float32 with their
own lower-degree table, everything else computes in float64.

Accuracy in float64, relative (measured against mpmath; see tests/test_special.py): erf, erfc,
erfcx a few ulp (erfc down to its underflow near x = 26.5); erfinv a few ulp, also next to +-1;
lgamma and digamma ~1e-15 for x > 0, including next to their zeros (lgamma at 1 and 2, digamma
at 1.4616...), and for x < 0 except next to their zeros there. float32: a few float32 ulp.

Methods
- erf/erfc/erfcx: one polynomial per interval [k/4, (k+1)/4) holding erf(x)/x for x < 1/2 and
  erfcx(x) = exp(x^2) erfc(x) above, chosen per element by index (a gather per Horner step),
  then erf = x P for |x| < 1/2, else sign(x) (1 - exp(-x^2) P); erfc and erfcx likewise. Beyond
  the table erfcx is its asymptotic series. exp(-x^2) is computed from x^2 split exactly into
  hi^2 + lo, so it does not inherit the ~x^2 ulp error of rounding x^2.
- erfinv: an initial guess (Winitzki's closed form; the series near 0) and three Halley steps on
  erf(y) = x, written as erfc(y) = 1 - x for |x| >= 1/2 so the tails keep full relative accuracy.
- lgamma(x), x > 0: lgamma(2 + z) = z P(z) for |z| <= 1/2 (a fit of lgamma(2 + z)/z, so the zeros
  at 1 and 2 are exact), reached by the recurrence; Stirling's series for x >= 10; the reflection
  formula for x < 0.
- digamma(x), x > 0: (x - x0) Q(x - 3/2) on [1, 2] (x0 the positive root, in two parts), reached by
  the recurrence; the asymptotic series for x >= 10; the reflection formula for x < 0.
- polygamma(n, x), n >= 1, x > 0: the recurrence up to x >= 10 + 2n (all its terms have one sign),
  then the asymptotic series; x <= 0 by differentiating the reflection formula n times
  (d^n/du^n cot u is a polynomial in cot u). About 1e-15 for x > 0.

The tables live in ``_special_tables.py`` (backend layer, NumPy only): Chebyshev interpolants
(first-kind points, computed with mpmath at 50 digits) converted to monomials in the interval's
centred variable; tests/test_special.py regenerates them and compares.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _kernels_loader as _kernels
from ._backend import is_cpu_array, xp_of
from ._special_tables import (
    _DIGAMMA_COEFS,
    _DIGAMMA_ROOT_HI,
    _DIGAMMA_ROOT_LO,
    _ERF_TABLE32_NP,
    _ERF_TABLE64_NP,
    _LGAMMA2_COEFS,
)

_SQRT_PI = math.sqrt(math.pi)
_HALF_SQRT_PI = 0.5 * _SQRT_PI
_INV_SQRT_PI = 1.0 / _SQRT_PI
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# erfcx(x) ~ 1/(x sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2x^2)^k; from x = 28 (float64) or
# x = 10.5 (float32) nine terms are below the dtype's rounding
_ERFCX_ASYMPTOTIC = tuple(float((-1) ** k * math.prod(range(1, 2 * k, 2))) for k in range(9))
# Bernoulli numbers B_2 .. B_18
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)
# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum_k B_2k / (2k (2k-1) x^(2k-1))
_STIRLING = tuple(b / ((2 * k + 2) * (2 * k + 1)) for k, b in enumerate(_BERNOULLI))
# digamma(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^(2k))
_DIGAMMA_ASYMPTOTIC = tuple(b / (2 * k + 2) for k, b in enumerate(_BERNOULLI))
_SERIES_START = 10.0  # lgamma and digamma use their asymptotic series from here on
_BLOCK = 1 << 16  # elements per block of the series functions on large host arrays


# -- helpers -------------------------------------------------------------------------------------
def _prep(x: Any, low_precision: bool = False) -> tuple[Any, Any, tuple]:
    """(xp, x as a float64 array, (dtype, array type) to return); float32 when ``low_precision``
    allows."""
    xp = xp_of(x)
    if not hasattr(x, "ndim") or isinstance(x, np.generic):
        x = xp.asarray(x)
    out_dtype = x.dtype if x.dtype.kind in "fV" else np.dtype(np.float64)
    work = np.float64
    if low_precision and out_dtype != np.float64:
        work = np.float32
    return xp, x.astype(work, copy=False), (out_dtype, type(x))


def _done(xp: Any, y: Any, out: tuple) -> Any:
    dtype, cls = out
    if isinstance(y, np.generic):
        y = np.asarray(y)
    y = y.astype(dtype, copy=False)
    if cls is not type(y) and isinstance(y, np.ndarray) and issubclass(cls, np.ndarray):
        y = y.view(cls)  # an ndarray subclass in, the same subclass out
    return y


def _in_blocks(fn: Any) -> Any:
    """``fn`` (elementwise in its last argument) over a large host array a block of elements at a
    time: its float64 working arrays (a dozen, for the series, recurrences and reflections) then
    take a block's room, not ten times the input's, and stay in the cache. The values are the
    same: each element's arithmetic does not depend on its neighbours."""
    @functools.wraps(fn)
    def blocked(*args: Any) -> Any:
        x = args[-1]
        if type(x) is not np.ndarray or x.size <= _BLOCK:
            return fn(*args)
        flat = x.reshape(-1)  # (a copy only when x is not contiguous)
        first = fn(*args[:-1], flat[:_BLOCK])
        out = np.empty(flat.size, first.dtype)
        out[:_BLOCK] = first
        for i in range(_BLOCK, flat.size, _BLOCK):
            out[i:i + _BLOCK] = fn(*args[:-1], flat[i:i + _BLOCK])
        return out.reshape(x.shape)
    return blocked


def _poly(z: Any, coefs: tuple) -> Any:
    """sum_k coefs[k] z^k by Horner's rule."""
    p = coefs[-1] * z + coefs[-2]
    for c in coefs[-3::-1]:
        p = p * z + c
    return p


class _ErfParts:
    """Shared pieces of erf/erfc/erfcx at x (float32 or float64, the working precision).

    ``small``: |x| < 1/2, where ``p`` = erf(|x|)/|x|; elsewhere ``p`` = erfcx(|x|) and
    ``e`` = exp(-x^2)."""

    def __init__(self, xp: Any, x: Any) -> None:
        f32 = x.dtype == np.float32
        table, end, frac_bits, cap = (
            (_ERF_TABLE32_NP, 10.5, 8, 12.0) if f32 else (_ERF_TABLE64_NP, 28.0, 20, 40.0)
        )
        if xp is not np:
            table = xp.asarray(table)
        ax = xp.abs(x)
        inside = ax < end
        u = xp.where(inside, ax, 0.0) * 4.0  # nan and large |x| read row 0 harmlessly
        kf = xp.floor(u)
        idx = kf.astype(np.intp)
        t = (u - kf) - 0.5
        p = xp.take(table[-1], idx)
        for row in range(table.shape[0] - 2, -1, -1):
            p = p * t + xp.take(table[row], idx)
        far = ~inside  # beyond the table: the asymptotic series (also carries nan and inf)
        if far.any():
            r = 1.0 / ax[far]
            p[far] = _poly(0.5 * r * r, _ERFCX_ASYMPTOTIC) * (_INV_SQRT_PI * r)
        self.xp, self.x, self.ax = xp, x, ax
        self.small = ax < 0.5
        self.xs = xp.where(self.small, x, 0.0)
        self.p = p
        # exp(-x^2) with x = hi + lo, hi = x cut to `frac_bits` fraction bits so hi^2 is exact
        a = xp.minimum(ax, cap)  # erfc underflows long before `cap`
        hi = xp.floor(a * 2.0**frac_bits) * 2.0**-frac_bits
        self.e = xp.exp(-hi * hi) * xp.exp(-(a - hi) * (a + hi))

    def erf(self) -> Any:
        xp = self.xp
        big = xp.copysign(1.0 - self.e * self.p, self.x)
        return xp.where(self.small, self.xs * self.p, big)

    def erfc(self) -> Any:
        xp = self.xp
        pos = self.e * self.p
        big = xp.where(self.x < 0, 2.0 - pos, pos)
        return xp.where(self.small, 1.0 - self.xs * self.p, big)


# -- SciPy fast path --------------------------------------------------------------------------------
# When SciPy is installed (the demo extra brings it), its compiled special functions are several
# times faster than the vectorised NumPy code below and as accurate; the code below is what runs
# with NumPy alone, and on CuPy. ``USE_SCIPY = False`` forces the NumPy code (the tests do).
USE_SCIPY = True
_scipy_special: Any = None


def _scipy(name: str, x: Any) -> Any:
    global _scipy_special, USE_SCIPY
    if not USE_SCIPY or not is_cpu_array(x) or x.dtype not in (np.float32, np.float64):
        return None
    if _scipy_special is None:
        try:
            from scipy import special
        except ImportError:
            USE_SCIPY = False
            return None
        _scipy_special = special
    return getattr(_scipy_special, name)(x)


# -- public functions ----------------------------------------------------------------------------
def erf(x: Any) -> Any:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise."""
    fast = _kernels.erf(x)  # float32: the eager kernel (1 ulp), else SciPy's, else the table
    if fast is not None:
        return fast
    fast = _scipy("erf", x)
    if fast is not None:
        return fast
    xp, x, dt = _prep(x, low_precision=True)
    return _done(xp, _ErfParts(xp, x).erf(), dt)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x), accurate where erf(x) is close to 1."""
    fast = _kernels.erfc(x)
    if fast is not None:
        return fast
    fast = _scipy("erfc", x)
    if fast is not None:
        return fast
    xp, x, dt = _prep(x, low_precision=True)
    return _done(xp, _ErfParts(xp, x).erfc(), dt)


@_in_blocks
def erfcx(x: Any) -> Any:
    """The scaled complementary error function exp(x^2) * erfc(x)."""
    xp, x, dt = _prep(x, low_precision=True)
    parts = _ErfParts(xp, x)
    xs = parts.xs
    small = xp.exp(xs * xs) * (1.0 - xs * parts.p)
    # erfcx(-a) = 2 exp(a^2) - erfcx(a), which overflows to inf for a > 26.6 (float64)
    a = xp.where(x < 0, xp.minimum(parts.ax, 27.0), 0.0)
    hi = xp.floor(a * 2.0**8) * 2.0**-8
    with np.errstate(over="ignore"):
        neg = 2.0 * xp.exp(hi * hi) * xp.exp((a - hi) * (a + hi)) - parts.p
    out = xp.where(parts.small, small, xp.where(x < 0, neg, parts.p))
    return _done(xp, out, dt)


def erfinv(x: Any) -> Any:
    """The inverse error function: erfinv(erf(y)) = y; +-inf at +-1, nan outside [-1, 1]."""
    fast = _kernels.erfinv(x)  # float32: the eager kernel (1 ulp), else SciPy's, else Halley's
    if fast is not None:
        return fast
    fast = _scipy("erfinv", x)
    if fast is not None:
        return fast
    xp, x, dt = _prep(x)
    ax = xp.abs(x)
    ok = ax < 1.0
    a = xp.where(ok, ax, 0.5)  # safe stand-in where the answer is inf or nan
    # initial guess: Winitzki's approximation (relative error < 2e-3), the series near 0
    ln = xp.log((1.0 - a) * (1.0 + a))
    w = 2.0 / (math.pi * 0.147) + 0.5 * ln
    y = xp.sqrt(xp.sqrt(w * w - ln / 0.147) - w)
    y = xp.where(a < 0.25, _HALF_SQRT_PI * a * (1.0 + (math.pi / 12.0) * a * a), y)
    # Halley steps on f(y) = erf(y) - a, with f' = 2/sqrt(pi) exp(-y^2) and f'' = -2y f':
    # y <- y - d / (1 + y d), d = f / f'. Cubic: 2e-3 -> 1e-8 -> full precision (+ rounding).
    central = a < 0.5
    q = 1.0 - a  # exact for a >= 1/2
    for _ in range(3):
        parts = _ErfParts(xp, y)
        f = xp.where(central, parts.erf() - a, q - parts.erfc())
        d = f * _HALF_SQRT_PI * xp.exp(y * y)
        y = y - d / (1.0 + y * d)
    y = xp.where(ok, y, xp.where(ax == 1.0, xp.inf, xp.nan))
    return _done(xp, xp.copysign(y, x), dt)


def _lgamma_pos(xp: Any, x: Any) -> Any:
    """lgamma(x) for x >= 0 (0, inf and nan allowed), float64."""
    mid = (x > 0) & (x < _SERIES_START)
    xs = xp.where(mid, x, 2.0)
    below = xs < 0.5
    one = xs < 1.5
    n = xp.maximum(xp.floor(xs - 1.5), 0.0)  # recurrence steps down to [1.5, 2.5)
    z = xp.where(below, xs, xp.where(one, xs - 1.0, xs - 2.0 - n))
    prod = xp.ones_like(xs)
    for k in range(1, int(_SERIES_START - 1.5) + 1):
        prod = prod * xp.where(n >= k, xs - k, 1.0)
    corr = xp.where(
        below, -xp.log(xs) - xp.log1p(xs),
        xp.where(one, -xp.log1p(xp.where(one & ~below, xs - 1.0, 0.0)), xp.log(prod)),
    )
    small = z * _poly(z, _LGAMMA2_COEFS) + corr
    # Stirling's series
    xl = xp.where(mid | (x == 0) | xp.isnan(x), _SERIES_START, xp.minimum(x, 1e305))
    r = 1.0 / xl
    series = r * _poly(r * r, _STIRLING)
    lx = xp.log(xl)
    large = (xl - 0.5) * lx - xl + _HALF_LOG_2PI + series
    large = xp.where(x > 1e305, xp.inf, large)  # lgamma overflows at 2.55e305
    out = xp.where(mid, small, large)
    out = xp.where(x == 0, xp.inf, out)
    return xp.where(xp.isnan(x), x, out)


@_in_blocks
def lgamma(x: Any) -> Any:
    """log|Gamma(x)|, elementwise (+inf at 0 and the negative integers)."""
    xp, x, dt = _prep(x)
    neg = x < 0
    pos = _lgamma_pos(xp, xp.where(neg, 1.0 - x, x))
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    xn = xp.where(neg & xp.isfinite(x), x, -0.5)
    r = xn - xp.round(xn)  # exact; sin(pi x) = +-sin(pi r)
    ar = xp.abs(r)
    pole = ar == 0
    tiny = ar < 1e-8  # sin(pi r) = pi r to double precision; pi r may be subnormal
    safe = xp.where(pole, 0.5, ar)
    log_sin = xp.where(tiny, math.log(math.pi) + xp.log(safe), xp.log(xp.sin(math.pi * safe)))
    refl = (math.log(math.pi) - log_sin) - pos
    refl = xp.where(pole | xp.isinf(x), xp.inf, refl)
    return _done(xp, xp.where(neg, refl, pos), dt)


def _digamma_pos(xp: Any, x: Any) -> Any:
    """digamma(x) for x > 0 (inf and nan allowed), float64."""
    mid = (x > 0) & (x < _SERIES_START)
    xs = xp.where(mid, x, 1.5)
    below = xs < 1.0
    n = xp.where(xs > 2.0, xp.ceil(xs - 2.0), 0.0)  # recurrence steps down to (1, 2]
    y = xp.where(below, xs + 1.0, xs - n)
    base = ((y - _DIGAMMA_ROOT_HI) - _DIGAMMA_ROOT_LO) * _poly(y - 1.5, _DIGAMMA_COEFS)
    acc = xp.zeros_like(xs)
    for k in range(int(_SERIES_START - 2.0) + 1, 0, -1):  # smallest terms first
        acc = acc + xp.where(n >= k, 1.0 / xp.where(n >= k, xs - k, 1.0), 0.0)
    with np.errstate(over="ignore"):  # -1/x overflows to -inf for subnormal x, as it should
        small = base + xp.where(below, -1.0 / xs, acc)
    # asymptotic series
    xl = xp.where(mid | xp.isnan(x), _SERIES_START, x)
    r = 1.0 / xl
    r2 = r * r
    large = xp.log(xl) - 0.5 * r - r2 * _poly(r2, _DIGAMMA_ASYMPTOTIC)
    out = xp.where(mid, small, large)
    return xp.where(xp.isnan(x), x, out)


@_in_blocks
def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma, elementwise (-inf at +0, nan at negative integers)."""
    xp, x, dt = _prep(x)
    neg = x < 0
    pos = _digamma_pos(xp, xp.where(neg | (x == 0), 1.0 - x, x))
    # reflection: digamma(x) = digamma(1 - x) - pi / tan(pi x)
    xn = xp.where(neg & xp.isfinite(x), x, -0.5)
    r = xn - xp.round(xn)
    ar = xp.abs(r)
    pole = ar == 0
    safe = xp.where(pole, 0.25, r)
    # pi / tan(pi r), = 1/r to double precision for tiny r (where pi r may be subnormal)
    with np.errstate(over="ignore"):
        cot = xp.where(ar < 1e-8, 1.0 / safe, math.pi / xp.tan(math.pi * safe))
    refl = pos - cot
    refl = xp.where(pole | xp.isinf(x), xp.nan, refl)
    out = xp.where(neg, refl, pos)
    out = xp.where(x == 0, xp.copysign(xp.inf, -x), out)  # PyTorch: digamma(+-0) = -+inf
    return _done(xp, out, dt)


def _cot_derivative_poly(n: int) -> tuple:
    """Coefficients of P_n with d^n/du^n cot(u) = P_n(cot u): P_0 = c, P_{k+1} = -(1 + c^2) P_k'."""
    p = [0.0, 1.0]
    for _ in range(n):
        d = [k * p[k] for k in range(1, len(p))] + [0.0]  # P'
        q = [0.0] * (len(d) + 2)
        for k, v in enumerate(d):
            q[k] -= v
            q[k + 2] -= v
        p = q
    return tuple(p)


def _polygamma_pos(xp: Any, n: int, x: Any) -> Any:
    """polygamma(n, x) for n >= 1 and x > 0 (inf and nan allowed), float64."""
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    start = float(_SERIES_START + 2 * n)
    mid = (x > 0) & (x < start)
    xs = xp.where(mid, x, start)
    steps = xp.where(mid, xp.ceil(start - xs), 0.0)  # move up to [start, start + 1)
    acc = xp.zeros_like(xs)
    with np.errstate(over="ignore"):  # 1/x^(n+1) overflows to inf next to 0, as it should
        for k in range(int(start) + 1, -1, -1):  # smallest terms first
            acc = acc + xp.where(steps > k, xp.where(steps > k, xs + k, 1.0) ** -(n + 1.0), 0.0)
    y = xs + steps
    # asymptotic: (n-1)!/y^n + n!/(2 y^(n+1)) + sum_k B_2k (2k+n-1)! / ((2k)! y^(2k+n))
    r = 1.0 / y
    r2 = r * r
    coefs = tuple(
        b * math.factorial(2 * k + 2 + n - 1) / math.factorial(2 * k + 2)
        for k, b in enumerate(_BERNOULLI)
    )
    series = r**n * (math.factorial(n - 1) + 0.5 * math.factorial(n) * r + r2 * _poly(r2, coefs))
    with np.errstate(over="ignore"):
        out = sign * (series + math.factorial(n) * acc)
    big = xp.where(mid | xp.isnan(x), 1.0, x)  # beyond `start` directly
    rb = 1.0 / big
    rb2 = rb * rb
    far = sign * rb**n * (
        math.factorial(n - 1) + 0.5 * math.factorial(n) * rb + rb2 * _poly(rb2, coefs)
    )
    out = xp.where(mid, out, far)
    return xp.where(xp.isnan(x), x, out)


@_in_blocks
def polygamma(n: int, x: Any) -> Any:
    """The n-th derivative of digamma, elementwise (n = 0 is digamma itself)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got n={n})")
    if n == 0:
        return digamma(x)
    xp, x, dt = _prep(x)
    neg = x <= 0
    pos = _polygamma_pos(xp, n, xp.where(neg, 1.0 - x, x))
    # reflection: psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x))
    xn = xp.where(neg & xp.isfinite(x), x, -0.5)
    r = xn - xp.round(xn)
    pole = r == 0
    cot = 1.0 / xp.tan(math.pi * xp.where(pole, 0.25, r))
    with np.errstate(over="ignore", invalid="ignore"):
        refl = (-1.0) ** n * pos - math.pi ** (n + 1) * _poly(cot, _cot_derivative_poly(n))
    pole_value = math.inf if n % 2 else -math.inf  # the sign of (-1)^(n+1) n! / x^(n+1)
    refl = xp.where(pole, pole_value, xp.where(xp.isinf(x), xp.nan, refl))
    return _done(xp, xp.where(neg, refl, pos), dt)


# -- GELU's normal CDF in float32 ----------------------------------------------------------------
# erfc(z) = t exp(-z^2 + P(t)) with t = 1 / (1 + z/2): P is a degree-9 least-squares fit at 300
# Chebyshev points of t in [1/6, 1] (z in [0, 10]), computed with mpmath at 30 digits; its relative
# error in erfc is 4.8e-8, below float32's rounding. Beyond z = 10, erfc underflows float32
# anyway: z is clamped inside t while exp(-z^2) goes to 0. tests/test_special.py checks the fit.
_ERFC_T_POLY = (-1.2654479969011936, 0.998632783328282, 0.386640412236957, 0.03460279957868415,
                0.001267587629981512, -0.08028043457131237, -0.6962518960037497,
                1.1567337549303924, -0.6808271768446669, 0.1449302135479109)
_ERFC_T_POLY32 = tuple(np.float32(c) for c in _ERFC_T_POLY)
_GELU_CHUNK = 65536  # elements per pass: the few float32 scratch rows stay in the L2 cache


def gelu32(x: np.ndarray, want_cdf: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """GELU's forward ``x * Phi(x)`` on a float32 NumPy array, and ``Phi(x)`` when ``want_cdf``
    (the backward reuses it). ~40 in-place passes per block of 65,536 elements, all in cache:
    several times faster than erf through SciPy's scalar loop. Phi(x) = erfc(|x|/sqrt2)/2 for
    x < 0 keeps full relative accuracy in the tail (no 1 - erf cancellation); +inf gives inf,
    -inf nan and -0.0 stays -0.0, as PyTorch's float64 gelu (its float32 kernels disagree at
    these points between CPUs: nan at +inf with AVX-512, +0.0 at -0.0 with AVX2)."""
    f32 = np.float32
    flat = np.ascontiguousarray(x).reshape(-1)
    n = flat.size
    out = np.empty(n, f32)
    cdf = np.empty(n, f32) if want_cdf else None
    m = min(_GELU_CHUNK, n)
    z, t, p, q = (np.empty(m, f32) for _ in range(4))
    pos = np.empty(m, bool)
    coefs = _ERFC_T_POLY32
    for i in range(0, n, _GELU_CHUNK):
        xc = flat[i:i + _GELU_CHUNK]
        k = xc.size
        zc, tc, pc, qc, nc = z[:k], t[:k], p[:k], q[:k], pos[:k]
        np.abs(xc, out=zc)
        zc *= f32(_INV_SQRT2)                     # z = |x| / sqrt(2)
        np.minimum(zc, f32(10.0), out=tc)
        tc *= f32(0.5)
        tc += f32(1.0)
        np.divide(f32(1.0), tc, out=tc)           # t = 1 / (1 + z/2) (np.reciprocal's value)
        np.multiply(tc, coefs[9], out=pc)
        for c in coefs[8:0:-1]:
            pc += c
            pc *= tc
        pc += coefs[0]
        np.square(zc, out=zc)
        pc -= zc
        np.exp(pc, out=pc)
        pc *= tc                                  # erfc(z)
        pc *= f32(0.5)                            # Phi(-|x|)
        # Phi(x) = Phi(-|x|) + [x > 0] (1 - 2 Phi(-|x|)), exact for x <= 0; by arithmetic, as
        # masked copies (np.where, copyto) take ten times longer on a random sign pattern
        np.multiply(pc, f32(-2.0), out=qc)
        qc += f32(1.0)
        np.greater(xc, 0, out=nc)
        qc *= nc
        qc += pc
        oc = out[i:i + k]
        np.multiply(xc, qc, out=oc)               # (inf at +inf, nan at -inf: inf * 0)
        if cdf is not None:
            cdf[i:i + k] = qc
    return out.reshape(x.shape), None if cdf is None else cdf.reshape(x.shape)


# -- incomplete gamma, Hurwitz zeta, Bessel J, Y, K ----------------------------------------------
# All in float64 (float32 computed in float64 and rounded). Methods:
# - gammainc/gammaincc: P(a, x) by its power series for x < a + 1, Q(a, x) by its continued
#   fraction (modified Lentz) above; the other is 1 minus it.
# - zeta(x, q): Euler-Maclaurin summation: the first terms summed until q + N >= 9, then the
#   integral, the half term and 12 Bernoulli corrections.
# - J0, J1: the power series for |x| <= 4, the trapezoidal rule on Bessel's integral
#   (1/pi) int_0^pi cos(n t - x sin t) dt (periodic and analytic: exponentially convergent) up to
#   |x| = 25, Hankel's asymptotic expansion beyond.
# - Y0, Y1: the series (logarithm times J plus a power series) for x <= 5, Gauss-Legendre on
#   the integral representation up to 25, Hankel's expansion beyond.
# - K0, K1: the series for x <= 2, the trapezoidal rule on e^x K_n(x) =
#   int_0^inf exp(-x (cosh t - 1)) cosh(n t) dt up to 25, the asymptotic expansion beyond.
_EULER_GAMMA = 0.5772156649015329
_BERN_2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
            43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_ZETA_EM = tuple(b / math.factorial(2 * k + 2) for k, b in enumerate(_BERN_2K))
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(96)
_QUAD_CHUNK = 16384  # elements per quadrature pass (a pass holds ~100 values per element)


def _on_subset(xp: Any, mask: Any, values: Any, fn: Any) -> Any:
    """``fn`` (elementwise, by quadrature) on ``values[mask]`` in chunks, scattered back into an
    array shaped like ``values`` (0 elsewhere): the quadratures' temporaries stay small."""
    out = xp.zeros(values.shape, dtype=np.float64)
    sub = values[mask]
    if sub.size:
        out[mask] = xp.concatenate([fn(sub[i:i + _QUAD_CHUNK])
                                    for i in range(0, sub.size, _QUAD_CHUNK)])
    return out


def _j_trapezoid(xp: Any, z: Any, n: int) -> Any:
    """J_n(z), integer n: the trapezoidal rule on (1/pi) int_0^pi cos(n t - z sin t) dt."""
    m = 64
    th = xp.asarray(np.arange(m + 1) * (math.pi / m))
    f = xp.cos(n * th - z[:, None] * xp.sin(th))
    return (f[:, 1:-1].sum(-1) + 0.5 * (f[:, 0] + f[:, -1])) / m


def _y_quadrature(xp: Any, z: Any, n: int) -> Any:
    """Y_n(z), integer n: Gauss-Legendre on (1/pi) int_0^pi sin(z sin t - n t) dt
    - (1/pi) int_0^inf (e^(n t) + (-1)^n e^(-n t)) e^(-z sinh t) dt."""
    zc = z[:, None]
    th = xp.asarray((_GL_NODES + 1.0) * (math.pi / 2))
    w = xp.asarray(_GL_WEIGHTS * (math.pi / 2))
    first = (xp.sin(zc * xp.sin(th) - n * th) * w).sum(-1)
    top = xp.arcsinh(45.0 / zc)
    t = (xp.asarray(_GL_NODES) + 1.0) * 0.5 * top
    g = (xp.exp(n * t) + (-1) ** n * xp.exp(-n * t)) * xp.exp(-zc * xp.sinh(t))
    second = (g * xp.asarray(_GL_WEIGHTS)).sum(-1) * 0.5 * top[:, 0]
    return (first - second) / math.pi


def _k_trapezoid(xp: Any, z: Any, nu: float) -> Any:
    """e^z K_nu(z), z >= ~1.8: the trapezoidal rule on int_0^inf e^(-z (cosh t - 1)) cosh(nu t)."""
    h = 0.05
    t = xp.asarray(np.arange(81) * h)
    f = xp.exp(-z[:, None] * (xp.cosh(t) - 1.0)) * xp.cosh(nu * t)
    return (f[:, 1:].sum(-1) + 0.5 * f[:, 0]) * h


def _loop_series(xp: Any, mask: Any, first: Any, step: Any, limit: int = 20000) -> Any:
    """sum of terms t_0 = first, t_{n} = step(n, t_{n-1}) over the elements of ``mask``."""
    term = first
    total = term.copy()
    n = 0
    while True:
        n += 1
        term = step(n, term)
        total = total + term
        if n >= limit or bool(xp.all(xp.abs(term) <= xp.abs(total) * 1e-17)):
            return total


def _gamma_log_prefactor(xp: Any, a: Any, x: Any) -> Any:
    """log(x^a e^-x / Gamma(a)). For a >= 10 written as a (log1p(d) - d) + log(a)/2 - log(2 pi)/2
    - (Stirling's correction), d = (x - a)/a, which avoids subtracting the large a log x and
    lgamma(a) when x is near a (the bulk of the distribution)."""
    big = a >= _SERIES_START
    direct = a * xp.log(x) - x - lgamma(xp.where(big, 1.0, a))
    ab = xp.where(big, a, _SERIES_START)
    d = (x - ab) / ab
    r = 1.0 / ab
    stirling = r * _poly(r * r, _STIRLING)
    log_ratio = xp.where(xp.abs(d) < 0.5, xp.log1p(d), xp.log(x / ab))  # log(x / a)
    near = ab * (log_ratio - d) + 0.5 * xp.log(ab) - _HALF_LOG_2PI - stirling
    return xp.where(big, near, direct)


def _gamma_pq(a: Any, x: Any) -> tuple[Any, Any]:
    """(P(a, x), Q(a, x)) for float64 arrays of one shape, PyTorch's conventions at the edges."""
    xp = xp_of(a)
    # PyTorch's order of the edge cases: negative -> NaN; a = 0 -> 1 (x > 0) or NaN; x = 0 -> 0;
    # a = inf -> 0 (NaN if x = inf); x = inf -> 1; then NaN in -> NaN out
    edge = xp.where((a < 0) | (x < 0), xp.nan, xp.where(
        a == 0, xp.where(x > 0, 1.0, xp.nan), xp.where(
            x == 0, 0.0, xp.where(
                xp.isinf(a), xp.where(xp.isinf(x), xp.nan, 0.0), xp.where(
                    xp.isinf(x), 1.0, xp.nan)))))
    p = edge
    q = 1.0 - edge
    fin = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    series = fin & (x < a + 1)
    frac = fin & ~series
    if bool(series.any()):
        aa, xx = a[series], x[series]
        tot = _loop_series(xp, series, 1.0 / aa, lambda n, t: t * xx / (aa + n))
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            val = xp.exp(_gamma_log_prefactor(xp, aa, xx) + xp.log(tot))
        p[series] = val
        q[series] = 1.0 - val
    small = fin & (a < 1) & (x <= 2)
    if bool(small.any()):  # Q directly: 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_n>=1 ...
        aa, xx = a[small], x[small]
        term = xp.ones_like(xx)
        tot = xp.zeros_like(xx)
        for n in range(1, 40):
            term = term * -xx / n
            tot = tot + term / (aa + n)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            lx = aa * xp.log(xx)
            val = -xp.expm1(lx - lgamma(aa + 1.0)) - xp.exp(lx - lgamma(aa)) * tot
        q[small] = val
        p[small] = xp.where(xx < aa + 1, p[small], 1.0 - val)
    if bool(frac.any()):
        aa, xx = a[frac], x[frac]
        tiny = 1e-300
        b = xx + 1.0 - aa
        c = xp.full(b.shape, 1.0 / tiny)
        d = 1.0 / xp.where(xp.abs(b) < tiny, tiny, b)
        h = d.copy()
        i = 0
        while True:
            i += 1
            an = -i * (i - aa)
            b = b + 2.0
            d = an * d + b
            d = xp.where(xp.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = xp.where(xp.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            delta = d * c
            h = h * delta
            if i > 20000 or bool(xp.all(xp.abs(delta - 1.0) <= 1e-16)):
                break
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            val = xp.exp(_gamma_log_prefactor(xp, aa, xx) + xp.log(h))
        q[frac] = val
        p[frac] = 1.0 - val
    return p, q


def _binary(a: Any, x: Any) -> tuple[Any, Any, Any, tuple]:
    xp = xp_of(a) if hasattr(a, "ndim") else xp_of(x)
    a, x = xp.asarray(a), xp.asarray(x)
    dtype = np.result_type(a.dtype, x.dtype)
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    a64, x64 = xp.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
    return xp, xp.array(a64), xp.array(x64), (dtype, type(a64))


def gammainc(a: Any, x: Any) -> Any:
    """The regularised lower incomplete gamma function P(a, x)."""
    xp, a, x, dt = _binary(a, x)
    return _done(xp, _gamma_pq(a, x)[0], dt)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    xp, a, x, dt = _binary(a, x)
    return _done(xp, _gamma_pq(a, x)[1], dt)


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function sum_k (k + q)^-x (x > 1; Cephes' conventions elsewhere: inf
    at x = 1 and at the poles q = 0, -1, ...; NaN for x < 1 and for q < 0 with x not whole)."""
    xp, x, q, dt = _binary(x, q)
    nan = xp.isnan(x) | xp.isnan(q)
    whole_q = q == xp.floor(q)
    bad = (x < 1) | ((q <= 0) & ~whole_q & (x != xp.floor(x))) | xp.isinf(q)
    pole = (q <= 0) & whole_q
    good = ~bad & ~pole & ~nan & (x != 1) & xp.isfinite(x)
    xs = xp.where(good, x, 2.0)
    qs = xp.where(good, q, 1.0)
    with np.errstate(all="ignore"):
        # sum directly until w = q + n >= max(9, x): the Euler-Maclaurin terms then shrink
        # at least as (x / (2 pi w))^2 each
        n = xp.clip(xp.ceil(xp.maximum(9.0, xs) - qs), 0.0, 500.0)
        total = xp.zeros_like(xs)
        for k in range(int(n.max()) if n.size else 0):
            total = total + xp.where(k < n, (qs + k) ** -xs, 0.0)
        w = qs + n
        total = total + w ** (1.0 - xs) / (xs - 1.0) + 0.5 * w ** -xs
        rising = xs.copy()  # x (x+1) ... (x + 2j - 2)
        wp = w ** (-xs - 1.0)
        winv2 = 1.0 / (w * w)
        for j, c in enumerate(_ZETA_EM):
            total = total + c * rising * wp
            rising = rising * (xs + 2 * j + 1) * (xs + 2 * j + 2)
            wp = wp * winv2
    at_inf = xp.where(q == 1, 1.0, xp.where(q < 1, xp.inf, xp.nan))
    out = xp.where(xp.isposinf(x), at_inf, total)
    out = xp.where(nan | xp.isinf(q), xp.nan, out)
    out = xp.where(q <= 0, xp.where(whole_q, xp.inf, xp.where(x != xp.floor(x), xp.nan, out)),
                   out)
    out = xp.where(x == 1, xp.inf, xp.where(x < 1, xp.nan, out))
    return _done(xp, out, dt)


def _hankel(xp: Any, x: Any, n: int) -> tuple[Any, Any]:
    """(sqrt(2/(pi x)) P, sqrt(2/(pi x)) Q) of Hankel's expansion, x > 25."""
    mu = 4.0 * n * n
    p = xp.ones_like(x)
    q = xp.zeros_like(x)
    term = xp.ones_like(x)
    for k in range(1, 40):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q = q + (term if k % 4 == 1 else -term)
        else:
            p = p + (-term if k % 4 == 2 else term)
    s = xp.sqrt(2.0 / (math.pi * x))
    return s * p, s * q


def _phase(xp: Any, x: Any, n: int) -> tuple[Any, Any]:
    """(cos, sin) of x - (n/2 + 1/4) pi, without rounding x - phase."""
    ph = (n / 2 + 0.25) * math.pi
    c, s = xp.cos(x), xp.sin(x)
    return c * math.cos(ph) + s * math.sin(ph), s * math.cos(ph) - c * math.sin(ph)


def _bessel_j_series(xp: Any, x: Any, n: int, terms: int = 30) -> Any:
    h2 = -(x * 0.5) ** 2
    term = xp.ones_like(x) if n == 0 else x * 0.5
    total = term
    for k in range(1, terms):
        term = term * h2 / (k * (k + n))
        total = total + term
    return total


def _bessel_j_abs(xp: Any, ax: Any, n: int) -> Any:
    """J_n(|x|) for finite |x| >= 0."""
    small = ax <= 4.0
    mid = ~small & (ax <= 25.0)
    large = ax > 25.0
    out = _bessel_j_series(xp, xp.where(small, ax, 0.0), n)
    trap = _on_subset(xp, mid, ax, lambda z: _j_trapezoid(xp, z, n))
    out = xp.where(mid, trap, out)
    xl = xp.where(large, ax, 30.0)
    p, q = _hankel(xp, xl, n)
    c, s = _phase(xp, xl, n)
    return xp.where(large, p * c - q * s, out)


def _bessel_j(x: Any, n: int) -> Any:
    xp, x, dt = _prep(x)
    ax = xp.abs(x)
    with np.errstate(all="ignore"):
        out = _bessel_j_abs(xp, xp.where(xp.isfinite(ax), ax, 0.0), n)
    if n == 1:
        out = xp.where(x < 0, -out, out)
    out = xp.where(xp.isinf(x), xp.nan, out)  # PyTorch's convention (the limit is 0)
    return _done(xp, xp.where(xp.isnan(x), x, out), dt)


@_in_blocks
def bessel_j0(x: Any) -> Any:
    """The Bessel function of the first kind of order 0."""
    return _bessel_j(x, 0)


@_in_blocks
def bessel_j1(x: Any) -> Any:
    """The Bessel function of the first kind of order 1."""
    return _bessel_j(x, 1)


def _bessel_y(x: Any, n: int) -> Any:
    xp, x, dt = _prep(x)
    good = (x > 0) & xp.isfinite(x)
    small = good & (x <= 5.0)
    mid = good & (x > 5.0) & (x <= 25.0)
    large = good & (x > 25.0)
    with np.errstate(all="ignore"):
        xs = xp.where(small, x, 1.0)
        h2 = (xs * 0.5) ** 2
        log_term = xp.log(xs * 0.5)
        if n == 0:
            j = _bessel_j_series(xp, xs, 0)
            term = xp.ones_like(xs)
            acc = xp.zeros_like(xs)
            harm = 0.0
            for k in range(1, 30):
                harm += 1.0 / k
                term = term * -h2 / (k * k)
                acc = acc - harm * term
            ys = (2 / math.pi) * ((log_term + _EULER_GAMMA) * j + acc)
        else:
            j = _bessel_j_series(xp, xs, 1)
            term = xs * 0.5
            hk, hk1 = 0.0, 1.0  # H_k, H_{k+1}
            acc = term * (hk + hk1 - 2 * _EULER_GAMMA)
            for k in range(1, 30):
                hk, hk1 = hk1, hk1 + 1.0 / (k + 1)
                term = term * -h2 / (k * (k + 1))
                acc = acc + term * (hk + hk1 - 2 * _EULER_GAMMA)
            ys = -2.0 / (math.pi * xs) + (2 / math.pi) * log_term * j - acc / math.pi
        ym = _on_subset(xp, mid, x, lambda z: _y_quadrature(xp, z, n))
        xl = xp.where(large, x, 30.0)
        p, q = _hankel(xp, xl, n)
        c, s = _phase(xp, xl, n)
        yl = p * s + q * c
    out = xp.where(small, ys, xp.where(mid, ym, yl))
    out = xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, out))
    out = xp.where(xp.isposinf(x), xp.nan, out)  # PyTorch's convention (the limit is 0)
    return _done(xp, xp.where(xp.isnan(x), x, out), dt)


@_in_blocks
def bessel_y0(x: Any) -> Any:
    """The Bessel function of the second kind of order 0 (NaN for x < 0, -inf at 0)."""
    return _bessel_y(x, 0)


@_in_blocks
def bessel_y1(x: Any) -> Any:
    """The Bessel function of the second kind of order 1 (NaN for x < 0, -inf at 0)."""
    return _bessel_y(x, 1)


def _bessel_k(x: Any, n: int, scaled: bool) -> Any:
    xp, x, dt = _prep(x)
    good = (x > 0) & xp.isfinite(x)
    small = good & (x <= 2.0)
    mid = good & (x > 2.0) & (x <= 25.0)
    large = good & (x > 25.0)
    with np.errstate(all="ignore"):
        xs = xp.where(small, x, 1.0)
        h2 = (xs * 0.5) ** 2
        log_term = xp.log(xs * 0.5)
        if n == 0:
            term = xp.ones_like(xs)
            i_n = term
            acc = xp.zeros_like(xs)
            harm = 0.0
            for k in range(1, 30):
                harm += 1.0 / k
                term = term * h2 / (k * k)
                i_n = i_n + term
                acc = acc + harm * term
            ks = -(log_term + _EULER_GAMMA) * i_n + acc
        else:
            term = xs * 0.5
            i_n = term
            hk, hk1 = 0.0, 1.0
            acc = term * (hk + hk1 - 2 * _EULER_GAMMA)
            for k in range(1, 30):
                hk, hk1 = hk1, hk1 + 1.0 / (k + 1)
                term = term * h2 / (k * (k + 1))
                i_n = i_n + term
                acc = acc + term * (hk + hk1 - 2 * _EULER_GAMMA)
            ks = 1.0 / xs + log_term * i_n - 0.5 * acc
        if scaled:
            ks = ks * xp.exp(xs)
        km = _on_subset(xp, mid, x, lambda z: _k_trapezoid(xp, z, n))
        if not scaled:
            km = km * xp.exp(-xp.where(mid, x, 0.0))
        xl = xp.where(large, x, 30.0)
        mu = 4.0 * n * n
        term = xp.ones_like(xl)
        acc = term
        for k in range(1, 40):
            term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
            acc = acc + term
        kl = acc * xp.sqrt(math.pi / (2.0 * xl))
        if not scaled:
            kl = kl * xp.exp(-xl)
    out = xp.where(small, ks, xp.where(mid, km, kl))
    out = xp.where(x == 0, xp.inf, xp.where(x < 0, xp.nan, out))
    out = xp.where(xp.isposinf(x), 0.0, out)
    return _done(xp, xp.where(xp.isnan(x), x, out), dt)


@_in_blocks
def modified_bessel_k0(x: Any) -> Any:
    """The modified Bessel function of the second kind of order 0."""
    return _bessel_k(x, 0, False)


@_in_blocks
def modified_bessel_k1(x: Any) -> Any:
    """The modified Bessel function of the second kind of order 1."""
    return _bessel_k(x, 1, False)


@_in_blocks
def scaled_modified_bessel_k0(x: Any) -> Any:
    """exp(x) K0(x)."""
    return _bessel_k(x, 0, True)


@_in_blocks
def scaled_modified_bessel_k1(x: Any) -> Any:
    """exp(x) K1(x)."""
    return _bessel_k(x, 1, True)


# Ai(0) and -Ai'(0)
_AIRY_C1 = 0.35502805388781723926
_AIRY_C2 = 0.25881940379280679840


def _bessel_j_frac(xp: Any, z: Any, nu: float) -> Any:
    """J_nu(z) for 0 < z <= 25 and non-integer nu, Gauss-Legendre on the integral
    (1/pi) int_0^pi cos(nu t - z sin t) dt - (sin(nu pi)/pi) int_0^inf e^(-z sinh t - nu t) dt."""
    zc = z[:, None]
    th = xp.asarray((_GL_NODES + 1.0) * (math.pi / 2))
    w = xp.asarray(_GL_WEIGHTS * (math.pi / 2))
    first = (xp.cos(nu * th - zc * xp.sin(th)) * w).sum(-1)
    top = xp.arcsinh(45.0 / zc)
    t = (xp.asarray(_GL_NODES) + 1.0) * 0.5 * top
    g = xp.exp(-zc * xp.sinh(t) - nu * t)
    second = (g * xp.asarray(_GL_WEIGHTS)).sum(-1) * 0.5 * top[:, 0]
    return (first - math.sin(nu * math.pi) * second) / math.pi


@_in_blocks
def airy_ai(x: Any) -> Any:
    """The Airy function Ai(x): the Maclaurin series for -2.5 <= x <= 2; beyond,
    Ai(x) = sqrt(x/3) K_{1/3}(zeta) / pi and Ai(-x) = sqrt(x) (J_{1/3} + J_{-1/3})(zeta) / 3
    with zeta = 2/3 |x|^(3/2) (Bessel integrals up to zeta = 25, asymptotic series beyond)."""
    xp, x, dt = _prep(x)
    fin = xp.isfinite(x)
    series = fin & (x >= -2.5) & (x <= 2.0)
    pos = fin & (x > 2.0)
    neg = fin & (x < -2.5)
    with np.errstate(all="ignore"):
        xs = xp.where(series, x, 0.0)
        x3 = xs * xs * xs
        f = xp.ones_like(xs)
        g = xs.copy()
        tf, tg = f, g
        for k in range(1, 40):
            tf = tf * x3 / ((3 * k - 1) * (3 * k))
            tg = tg * x3 / ((3 * k) * (3 * k + 1))
            f = f + tf
            g = g + tg
        ai_series = _AIRY_C1 * f - _AIRY_C2 * g
        ax = xp.abs(x)
        zeta = 2.0 / 3.0 * ax * xp.sqrt(ax)
        # x > 2: K_{1/3}(zeta) e^zeta by the trapezoidal rule (zeta <= 25) or its asymptotic series
        zp = xp.where(pos, zeta, 10.0)
        k_mid = _on_subset(xp, pos & (zp <= 25.0), zp, lambda z: _k_trapezoid(xp, z, 1 / 3))
        zl = xp.maximum(zp, 25.0)
        term = xp.ones_like(zl)
        acc = term
        for k in range(1, 40):
            term = term * (4.0 / 9.0 - (2 * k - 1) ** 2) / (k * 8.0 * zl)
            acc = acc + term
        k_large = acc * xp.sqrt(math.pi / (2.0 * zl))
        ks = xp.where(zp <= 25.0, k_mid, k_large)
        ai_pos = xp.sqrt(xp.where(pos, x, 3.0) / 3.0) * ks * xp.exp(-zp) / math.pi
        # x < -2.5: J_{+-1/3}(zeta)
        zn = xp.where(neg, zeta, 10.0)
        mid = zn <= 25.0
        j_sum = _on_subset(xp, neg & mid, zn, lambda z: _bessel_j_frac(xp, z, 1 / 3)
                           + _bessel_j_frac(xp, z, -1 / 3))
        zl = xp.where(mid, 30.0, zn)
        big = xp.zeros_like(zl)
        for nu in (1 / 3, -1 / 3):
            p, q = _hankel(xp, zl, nu)  # type: ignore[arg-type]
            c, s = _phase(xp, zl, nu)  # type: ignore[arg-type]
            big = big + p * c - q * s
        j_sum = xp.where(mid, j_sum, big)
        ai_neg = xp.sqrt(xp.where(neg, ax, 1.0)) * j_sum / 3.0
    out = xp.where(series, ai_series, xp.where(pos, ai_pos, ai_neg))
    out = xp.where(xp.isinf(x), xp.nan, out)  # PyTorch's convention
    return _done(xp, xp.where(xp.isnan(x), x, out), dt)


def logaddexp_complex(xp: Any, a: Any, b: Any) -> Any:
    """``log(exp(a) + exp(b))`` of complex arrays as PyTorch computes it: the operand with the
    larger real part plus ``log1p(exp(other - it))`` (imaginary parts are not wrapped); where
    both real parts are the same infinity, that operand itself."""
    first = a.real >= b.real
    hi, lo = xp.where(first, a, b), xp.where(first, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        out = hi + xp.log1p(xp.exp(lo - hi))
    same_inf = xp.isinf(hi.real) & (hi.real == lo.real)
    return xp.where(same_inf, hi, out)
