"""``ember.special`` (``torch.special``): special functions, by their PyTorch names."""

from __future__ import annotations

from typing import Any

from .ops.elementwise import erf, erfc, erfinv, exp2, expm1, log1p, logit, sigmoid, sinc, xlogy
from .ops.extra import digamma, erfcx, lgamma, mvlgamma, polygamma
from .ops.reduction import log_softmax, logsumexp, softmax

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "sinc", "xlogy", "exp2", "expm1", "log1p",
    "log_softmax", "logsumexp", "softmax", "ndtr", "entr", "ndtri", "log_ndtr", "xlog1py",
    "round", "erfcx", "gammaln", "digamma", "psi", "polygamma", "multigammaln",
]

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def ndtri(p: Any) -> Any:
    """The inverse of the standard normal CDF: sqrt(2) erfinv(2p - 1) (-inf at 0, inf at 1)."""
    return erfinv(p * 2.0 - 1.0) * 1.4142135623730951


def log_ndtr(x: Any) -> Any:
    """log of the standard normal CDF; for x < -1 through erfcx, so the far tail stays finite:
    log(erfcx(-x/sqrt 2) / 2) - x^2 / 2."""
    from .ops.elementwise import as_tensor_arg, log, where

    x = as_tensor_arg(x)
    neg = x < -1.0
    xn = where(neg, x, -2.0)  # a point where the tail formula is finite, for the other branch
    tail = log(erfcx(xn * -0.7071067811865476) * 0.5) - xn * xn * 0.5
    body = log(ndtr(where(neg, 0.0, x)))
    return where(neg, tail, body)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), 0 where x == 0 (even where log1p(y) is infinite), NaN if y is NaN."""
    from .ops.elementwise import as_tensor_arg, isnan, where

    x, y = as_tensor_arg(x), as_tensor_arg(y)
    safe = where(x == 0, 0.0, y)
    out = where(x == 0, x * 0, x * log1p(safe))
    return where(isnan(y), y * 1, out)


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001 - PyTorch's name
    """Round half to even (``decimals`` places)."""
    from .ops.elementwise import round as _round

    return _round(input, decimals=decimals)


def ndtr(x: Any) -> Any:
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    return (erf(x * 0.7071067811865476) + 1) * 0.5


def entr(x: Any) -> Any:
    """-x log x (0 at x = 0, -inf for x < 0), elementwise."""
    from .ops.elementwise import isnan, where

    out = where(x > 0, -xlogy(x, x), where(x == 0, 0.0, float("-inf")))
    return where(isnan(x), x, out)


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.special", name)
