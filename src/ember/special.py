"""``ember.special`` (``torch.special``): special functions, by their PyTorch names."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend
from ._tensor import Tensor
from .ops.casting import as_tensor_arg
from .ops.pointwise_math import erf, erfc, erfinv, exp2, expm1, log1p, logit, sigmoid, sinc, xlogy
from .ops.reduction_stats import logsumexp
from .ops.softmax_family import log_softmax, softmax
from .ops.special import digamma, erfcx, i0, i0e, i1, i1e, lgamma, mvlgamma, polygamma

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "sinc", "xlogy", "exp2", "expm1", "log1p",
    "log_softmax", "logsumexp", "softmax", "ndtr", "entr", "ndtri", "log_ndtr", "xlog1py",
    "round", "erfcx", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "i0", "i0e",
    "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]

expit = sigmoid
modified_bessel_i0 = i0
modified_bessel_i1 = i1
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def ndtri(p: Any) -> Any:
    """The inverse of the standard normal CDF: sqrt(2) erfinv(2p - 1) (-inf at 0, inf at 1)."""
    return erfinv(p * 2.0 - 1.0) * 1.4142135623730951


def log_ndtr(x: Any) -> Any:
    """log of the standard normal CDF; for x < -1 through erfcx, so the far tail stays finite:
    log(erfcx(-x/sqrt 2) / 2) - x^2 / 2."""
    from .ops.casting import as_tensor_arg
    from .ops.pointwise_math import log
    from .ops.pointwise_piecewise import where

    x = as_tensor_arg(x)
    neg = x < -1.0
    xn = where(neg, x, -2.0)  # a point where the tail formula is finite, for the other branch
    tail = log(erfcx(xn * -0.7071067811865476) * 0.5) - xn * xn * 0.5
    body = log(ndtr(where(neg, 0.0, x)))
    return where(neg, tail, body)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), 0 where x == 0 (even where log1p(y) is infinite), NaN if y is NaN."""
    from .ops.casting import as_tensor_arg
    from .ops.comparison import isnan
    from .ops.pointwise_piecewise import where

    x, y = as_tensor_arg(x), as_tensor_arg(y)
    safe = where(x == 0, 0.0, y)
    out = where(x == 0, x * 0, x * log1p(safe))
    return where(isnan(y), y * 1, out)


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001 - PyTorch's name
    """Round half to even (``decimals`` places)."""
    from .ops.pointwise_piecewise import round as _round

    return _round(input, decimals=decimals)


def ndtr(x: Any) -> Any:
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    return (erf(x * 0.7071067811865476) + 1) * 0.5


def entr(x: Any) -> Any:
    """-x log x (0 at x = 0, -inf for x < 0), elementwise."""
    from .ops.comparison import isnan
    from .ops.pointwise_piecewise import where

    out = where(x > 0, -xlogy(x, x), where(x == 0, 0.0, float("-inf")))
    return where(isnan(x), x, out)


def spherical_bessel_j0(input: Any) -> Any:
    """sin(x) / x (1 at 0), elementwise."""
    from .ops.casting import as_tensor_arg
    from .ops.pointwise_math import sin
    from .ops.pointwise_piecewise import where

    x = as_tensor_arg(input)
    small = x.abs() < 1e-4
    safe = where(small, 1.0, x)
    return where(small, 1.0 - x * x / 6.0, sin(safe) / safe)


# -- orthogonal polynomials: three-term recurrences, evaluated without a gradient (as in
# PyTorch, whose polynomial functions have no derivative) -------------------------------------

def _poly(name: str, input: Any, n: Any, first: Any, step: Any, shift: bool = False) -> Any:
    """P_n(x) from P_0 = 1, P_1 = first(x) and P_{k+1} = step(k, x, P_k, P_{k-1}); n < 0 gives 0."""
    x = as_tensor_arg(input)
    ns = n._data if isinstance(n, Tensor) else np.asarray(n)
    xd = x._data
    dt = xd.dtype if xd.dtype.kind == "f" else np.dtype(np.float32)
    xp = _backend.xp_of(xd)
    xv = xp.asarray(xd, dtype=np.float64)
    nv = xp.asarray(ns).astype(np.int64)
    xv, nv = xp.broadcast_arrays(xv, nv)
    if shift:
        xv = 2.0 * xv - 1.0
    top = int(nv.max()) if nv.size else 0
    prev, cur = xp.ones_like(xv), first(xv)
    out = xp.where(nv == 0, prev, xp.where(nv == 1, cur, 0.0))
    for k in range(1, top):
        prev, cur = cur, step(k, xv, cur, prev)
        out = xp.where(nv == k + 1, cur, out)
    return Tensor._make(xp.asarray(out, dtype=dt))


def _cheb(k: int, x: Any, p: Any, q: Any) -> Any:
    return 2.0 * x * p - q


def chebyshev_polynomial_t(input: Any, n: Any) -> Any:
    """Chebyshev polynomial of the first kind T_n(x)."""
    return _poly("chebyshev_polynomial_t", input, n, lambda x: x, _cheb)


def chebyshev_polynomial_u(input: Any, n: Any) -> Any:
    """Chebyshev polynomial of the second kind U_n(x)."""
    return _poly("chebyshev_polynomial_u", input, n, lambda x: 2.0 * x, _cheb)


def chebyshev_polynomial_v(input: Any, n: Any) -> Any:
    """Chebyshev polynomial of the third kind V_n(x)."""
    return _poly("chebyshev_polynomial_v", input, n, lambda x: 2.0 * x - 1.0, _cheb)


def chebyshev_polynomial_w(input: Any, n: Any) -> Any:
    """Chebyshev polynomial of the fourth kind W_n(x)."""
    return _poly("chebyshev_polynomial_w", input, n, lambda x: 2.0 * x + 1.0, _cheb)


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Any:
    """T_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_t", input, n, lambda x: x, _cheb, True)


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Any:
    """U_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_u", input, n, lambda x: 2.0 * x, _cheb, True)


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Any:
    """V_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_v", input, n, lambda x: 2.0 * x - 1.0, _cheb,
                 True)


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Any:
    """W_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_w", input, n, lambda x: 2.0 * x + 1.0, _cheb,
                 True)


def hermite_polynomial_h(input: Any, n: Any) -> Any:
    """Physicists' Hermite polynomial H_n(x): H_{k+1} = 2x H_k - 2k H_{k-1}."""
    return _poly("hermite_polynomial_h", input, n, lambda x: 2.0 * x,
                 lambda k, x, p, q: 2.0 * x * p - 2.0 * k * q)


def hermite_polynomial_he(input: Any, n: Any) -> Any:
    """Probabilists' Hermite polynomial He_n(x): He_{k+1} = x He_k - k He_{k-1}."""
    return _poly("hermite_polynomial_he", input, n, lambda x: x,
                 lambda k, x, p, q: x * p - k * q)


def laguerre_polynomial_l(input: Any, n: Any) -> Any:
    """Laguerre polynomial L_n(x): L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)."""
    return _poly("laguerre_polynomial_l", input, n, lambda x: 1.0 - x,
                 lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1))


def legendre_polynomial_p(input: Any, n: Any) -> Any:
    """Legendre polynomial P_n(x): P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1)."""
    return _poly("legendre_polynomial_p", input, n, lambda x: x,
                 lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1))


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.special", name)


# PyTorch's torch.special functions are builtins, which do not bind as methods: ember's neither
from . import _as_builtins  # noqa: E402

_as_builtins(globals(), __name__)
