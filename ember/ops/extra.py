"""Differentiable special functions with their derivative rules: lgamma, digamma, polygamma,
mvlgamma, erfcx (the values come from ``ember/_special.py``, vectorised NumPy/CuPy code).

Each op's backward is the next function in the family: d lgamma = digamma, d digamma =
polygamma(1), d polygamma(n) = polygamma(n + 1).
"""

from __future__ import annotations

import math
from typing import Any

from .. import _special
from ._op import Op
from .elementwise import _float_unary, as_tensor_arg

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfcx"]


class Lgamma(Op):
    """out = log|Gamma(x)|          grad_x = grad * digamma(x)"""

    node_name = "LgammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return _special.lgamma(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.call(Polygamma, x, 0)


class Polygamma(Op):
    """out = psi^(n)(x) (n = 0: digamma)          grad_x = grad * psi^(n+1)(x)"""

    node_name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, n: int) -> Any:
        ctx.save_for_backward(x)
        ctx.n = n
        return _special.polygamma(n, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.call(Polygamma, x, ctx.n + 1), None


class Digamma(Polygamma):
    """out = digamma(x) = d/dx lgamma(x)          grad_x = grad * polygamma(1, x)"""

    node_name = "DigammaBackward0"


class Erfcx(Op):
    """out = exp(x^2) erfc(x)          grad_x = grad * (2 x out - 2 / sqrt(pi))"""

    node_name = "SpecialErfcxBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _special.erfcx(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        return grad * (2.0 * x * out - 2.0 / math.sqrt(math.pi))


def lgamma(input: Any) -> Any:
    """log|Gamma(x)|, elementwise (integer inputs give the default float dtype)."""
    return Lgamma.apply(_float_unary(input))


def digamma(input: Any) -> Any:
    """The logarithmic derivative of Gamma, elementwise."""
    return Digamma.apply(_float_unary(input), 0)


def polygamma(n: int, input: Any) -> Any:
    """The n-th derivative of digamma, elementwise (``polygamma(0, x)`` is digamma)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got n={n})")
    return Polygamma.apply(_float_unary(input), n)


def mvlgamma(input: Any, p: int) -> Any:
    """Multivariate log-gamma of dimension ``p``:
    p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2); every element must exceed (p - 1)/2."""
    x = _float_unary(input)
    p = int(p)
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    if x.numel() and bool((x._data <= (p - 1) / 2).any()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 (= {(p - 1) / 2}); "
                           "mvlgamma is only defined there")
    out = lgamma(x)
    for i in range(1, p):
        out = out + lgamma(x - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def erfcx(input: Any) -> Any:
    """The scaled complementary error function exp(x^2) erfc(x), accurate for large x."""
    return Erfcx.apply(_float_unary(as_tensor_arg(input)))
