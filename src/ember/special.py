"""``ember.special`` (``torch.special``): special functions, by their PyTorch names."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend
from ._tensor import Tensor
from .ops import _out
from .ops import softmax_family as _sf
from .ops.casting import as_tensor_arg
from .ops.pointwise_math import erf, erfc, erfinv, exp2, expm1, log1p, sigmoid, xlogy
from .ops.reduction_stats import logsumexp
from .ops.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    erfcx,
    i0,
    i0e,
    i1,
    i1e,
    igamma,
    igammac,
    lgamma,
    logit,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    mvlgamma,
    polygamma,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    sinc,
    zeta,
)

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "sinc", "xlogy", "exp2", "expm1", "log1p",
    "log_softmax", "logsumexp", "softmax", "ndtr", "entr", "ndtri", "log_ndtr", "xlog1py",
    "round", "erfcx", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "i0", "i0e",
    "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p", "gammainc",
    "gammaincc", "zeta", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai",
]

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma
gammainc = igamma
gammaincc = igammac


def softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """``torch.softmax`` without ``out=`` (PyTorch's ``special.softmax`` has none)."""
    return _sf.softmax(input, dim, dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """``torch.log_softmax`` with ``dtype`` keyword-only and no ``out=``, as PyTorch's."""
    return _sf.log_softmax(input, dim, dtype)


def ndtri(input: Any, *, out: Any = None) -> Any:
    """The inverse of the standard normal CDF: sqrt(2) erfinv(2p - 1) (-inf at 0, inf at 1)."""
    res = erfinv(as_tensor_arg(input) * 2.0 - 1.0) * 1.4142135623730951
    return res if out is None else _out.write(out, res, "special_ndtri")


def log_ndtr(input: Any, *, out: Any = None) -> Any:
    """log of the standard normal CDF; for x < -1 through erfcx, so the far tail stays finite:
    log(erfcx(-x/sqrt 2) / 2) - x^2 / 2."""
    from .ops.casting import as_tensor_arg
    from .ops.pointwise_math import log
    from .ops.pointwise_piecewise import where

    x = as_tensor_arg(input)
    neg = x < -1.0
    xn = where(neg, x, -2.0)  # a point where the tail formula is finite, for the other branch
    tail = log(erfcx(xn * -0.7071067811865476) * 0.5) - xn * xn * 0.5
    body = log(ndtr(where(neg, 0.0, x)))
    res = where(neg, tail, body)
    return res if out is None else _out.write(out, res, "special_log_ndtr")


def xlog1py(input: Any, other: Any, *, out: Any = None) -> Any:
    """x * log1p(y), 0 where x == 0 (even where log1p(y) is infinite), NaN if y is NaN."""
    from .ops._promote import _promote
    from .ops.casting import as_tensor_arg
    from .ops.comparison import isnan
    from .ops.creation import tensor
    from .ops.pointwise_piecewise import where

    x, y = _promote(as_tensor_arg(input), as_tensor_arg(other), to_float=True)
    if (x if isinstance(x, Tensor) else y).is_complex():
        raise NotImplementedError(f"\"xlog1py\" not implemented for complex tensors (got "
                                  f"{(x if isinstance(x, Tensor) else y).dtype}), as PyTorch's")
    if not isinstance(x, Tensor):  # a number with a tensor (PyTorch's Scalar overloads)
        x = tensor(x, dtype=y.dtype)
    elif not isinstance(y, Tensor):
        y = tensor(y, dtype=x.dtype)
    safe = where(x == 0, 0.0, y)
    res = where(x == 0, x * 0, x * log1p(safe))
    res = where(isnan(y), y * 1, res)
    return res if out is None else _out.write(out, res, "special_xlog1py")


def round(input: Any, *, decimals: int = 0, out: Any = None) -> Any:  # noqa: A001
    """Round half to even (``decimals`` places)."""
    from .ops.pointwise_piecewise import round as _round

    return _round(input, decimals=decimals, out=out)


def ndtr(input: Any, *, out: Any = None) -> Any:
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    res = (erf(as_tensor_arg(input) * 0.7071067811865476) + 1) * 0.5
    return res if out is None else _out.write(out, res, "special_ndtr")


def entr(input: Any, *, out: Any = None) -> Any:
    """-x log x (0 at x = 0, -inf for x < 0), elementwise."""
    from .ops.comparison import isnan
    from .ops.pointwise_piecewise import where

    x = as_tensor_arg(input)
    res = where(x > 0, -xlogy(x, x), where(x == 0, 0.0, float("-inf")))
    res = where(isnan(x), x, res)
    return res if out is None else _out.write(out, res, "special_entr")


def spherical_bessel_j0(x: Any, *, out: Any = None) -> Any:
    """sin(x) / x (1 at 0), elementwise."""
    from .ops.casting import as_tensor_arg
    from .ops.pointwise_math import sin
    from .ops.pointwise_piecewise import where

    x = as_tensor_arg(x)
    small = x.abs() < 1e-4
    safe = where(small, 1.0, x)
    res = where(small, 1.0 - x * x / 6.0, sin(safe) / safe)
    return res if out is None else _out.write(out, res, "special_spherical_bessel_j0")


# -- orthogonal polynomials: three-term recurrences, evaluated without a gradient (as in
# PyTorch, whose polynomial functions have no derivative) -------------------------------------

def _poly(name: str, input: Any, n: Any, first: Any, step: Any, shift: bool = False,
          out: Any = None) -> Any:
    """P_n(x) from P_0 = 1, P_1 = first(x) and P_{k+1} = step(k, x, P_k, P_{k-1}); n < 0 gives 0."""
    x = as_tensor_arg(input)
    ns = n._data if isinstance(n, Tensor) else np.asarray(n)
    if isinstance(x, Tensor):
        xd = x._data
        dt = xd.dtype if xd.dtype.kind == "f" else np.dtype(np.float32)
    else:  # a number x with a tensor n: the default float dtype, as PyTorch's x_scalar overload
        xd = _backend.xp_of(ns).asarray(x, dtype=np.float64)
        dt = np.dtype(np.float32)
    xp = _backend.xp_of(xd)
    xv = xp.asarray(xd, dtype=np.float64)
    nv = xp.asarray(ns).astype(np.int64)
    xv, nv = xp.broadcast_arrays(xv, nv)
    if shift:
        xv = 2.0 * xv - 1.0
    top = int(nv.max()) if nv.size else 0
    prev, cur = xp.ones_like(xv), first(xv)
    vals = xp.where(nv == 0, prev, xp.where(nv == 1, cur, 0.0))
    for k in range(1, top):
        prev, cur = cur, step(k, xv, cur, prev)
        vals = xp.where(nv == k + 1, cur, vals)
    res = Tensor._make(xp.asarray(vals, dtype=dt))
    return res if out is None else _out.write(out, res, "special_" + name)


def _cheb(k: int, x: Any, p: Any, q: Any) -> Any:
    return 2.0 * x * p - q


def chebyshev_polynomial_t(x: Any, n: Any, *, out: Any = None) -> Any:
    """Chebyshev polynomial of the first kind T_n(x)."""
    return _poly("chebyshev_polynomial_t", x, n, lambda x: x, _cheb, out=out)


def chebyshev_polynomial_u(x: Any, n: Any, *, out: Any = None) -> Any:
    """Chebyshev polynomial of the second kind U_n(x)."""
    return _poly("chebyshev_polynomial_u", x, n, lambda x: 2.0 * x, _cheb, out=out)


def chebyshev_polynomial_v(x: Any, n: Any, *, out: Any = None) -> Any:
    """Chebyshev polynomial of the third kind V_n(x)."""
    return _poly("chebyshev_polynomial_v", x, n, lambda x: 2.0 * x - 1.0, _cheb, out=out)


def chebyshev_polynomial_w(x: Any, n: Any, *, out: Any = None) -> Any:
    """Chebyshev polynomial of the fourth kind W_n(x)."""
    return _poly("chebyshev_polynomial_w", x, n, lambda x: 2.0 * x + 1.0, _cheb, out=out)


def shifted_chebyshev_polynomial_t(x: Any, n: Any, *, out: Any = None) -> Any:
    """T_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_t", x, n, lambda x: x, _cheb, True, out=out)


def shifted_chebyshev_polynomial_u(x: Any, n: Any, *, out: Any = None) -> Any:
    """U_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_u", x, n, lambda x: 2.0 * x, _cheb, True, out=out)


def shifted_chebyshev_polynomial_v(x: Any, n: Any, *, out: Any = None) -> Any:
    """V_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_v", x, n, lambda x: 2.0 * x - 1.0, _cheb,
                 True, out=out)


def shifted_chebyshev_polynomial_w(x: Any, n: Any, *, out: Any = None) -> Any:
    """W_n(2x - 1)."""
    return _poly("shifted_chebyshev_polynomial_w", x, n, lambda x: 2.0 * x + 1.0, _cheb,
                 True, out=out)


def hermite_polynomial_h(x: Any, n: Any, *, out: Any = None) -> Any:
    """Physicists' Hermite polynomial H_n(x): H_{k+1} = 2x H_k - 2k H_{k-1}."""
    return _poly("hermite_polynomial_h", x, n, lambda x: 2.0 * x,
                 lambda k, x, p, q: 2.0 * x * p - 2.0 * k * q, out=out)


def hermite_polynomial_he(x: Any, n: Any, *, out: Any = None) -> Any:
    """Probabilists' Hermite polynomial He_n(x): He_{k+1} = x He_k - k He_{k-1}."""
    return _poly("hermite_polynomial_he", x, n, lambda x: x,
                 lambda k, x, p, q: x * p - k * q, out=out)


def laguerre_polynomial_l(x: Any, n: Any, *, out: Any = None) -> Any:
    """Laguerre polynomial L_n(x): L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)."""
    return _poly("laguerre_polynomial_l", x, n, lambda x: 1.0 - x,
                 lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1), out=out)


def legendre_polynomial_p(x: Any, n: Any, *, out: Any = None) -> Any:
    """Legendre polynomial P_n(x): P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1)."""
    return _poly("legendre_polynomial_p", x, n, lambda x: x,
                 lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1), out=out)


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.special", name)


# NumPy's names (x= for input, axis= for dim...), as PyTorch's builtins take: ops/_aliases.py
from .ops._aliases import numpy_names as _numpy_names  # noqa: E402

for _name in __all__:
    globals()[_name] = _numpy_names(globals()[_name], _name)
del _name

# PyTorch's torch.special functions are builtins, which do not bind as methods: ember's neither
from . import _as_builtins  # noqa: E402

_as_builtins(globals(), __name__)
