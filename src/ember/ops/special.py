"""Special functions with their derivative rules (torch.special's differentiable core): lgamma,
digamma, polygamma, mvlgamma, erfcx, the modified Bessel functions i0, i0e, i1, i1e (the
values come from ``ember/_special.py``, vectorised NumPy/CuPy code), logit and sinc; the
incomplete gamma functions igamma/igammac (gradient in x only) and the Hurwitz zeta (gradient in
q only), as PyTorch; and, without gradients as in PyTorch, the Bessel functions J0, J1, Y0, Y1,
K0, K1 (and scaled), modified_bessel_i0/i1, and airy_ai.

Each op's backward is the next function in the family: d lgamma = digamma, d digamma =
polygamma(1), d polygamma(n) = polygamma(n + 1); I0' = I1; dP(a, x)/dx = x^(a-1) e^-x / Gamma(a);
d zeta(x, q)/dq = -x zeta(x + 1, q).

Neighbours: erf/erfc/erfinv, sigmoid, xlogy in ``ops/pointwise_math.py``;
``ember.special`` (``torch.special``) gathers them all under PyTorch's names.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _special
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _out
from ._promote import _float_unary, _not_complex, _promote, _quietly, _truediv, _unary
from .casting import as_tensor_arg

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfcx", "i0", "i0e", "i1", "i1e",
           "logit", "sinc", "igamma", "igammac", "zeta", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "airy_ai", "modified_bessel_i0",
           "modified_bessel_i1"]


def lgamma(input: Any, *, out: Any = None) -> Any:
    """log|Gamma(x)|, elementwise (integer inputs give the default float dtype)."""
    res = Lgamma.apply(_float_unary(input))
    return res if out is None else _out.write(out, res, "lgamma")


def digamma(input: Any, *, out: Any = None) -> Any:
    """The logarithmic derivative of Gamma, elementwise."""
    res = Digamma.apply(_float_unary(input), 0)
    return res if out is None else _out.write(out, res, "digamma")


def polygamma(n: int, input: Any, *, out: Any = None) -> Any:
    """The n-th derivative of digamma, elementwise (``polygamma(0, x)`` is digamma)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got n={n})")
    res = Polygamma.apply(_float_unary(input), n)
    return res if out is None else _out.write(out, res, "polygamma")


def mvlgamma(input: Any, p: int, *, out: Any = None) -> Any:
    """Multivariate log-gamma of dimension ``p``:
    p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2). Defined for x > (p - 1)/2; PyTorch 2.13 no
    longer checks that, and neither does ember (log|Gamma| of the terms, inf at the poles)."""
    x = _float_unary(input)
    p = int(p)
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    res = lgamma(x)
    for i in range(1, p):
        res = res + lgamma(x - i / 2)
    res = res + p * (p - 1) / 4 * math.log(math.pi)
    return res if out is None else _out.write(out, res, "mvlgamma")


def erfcx(input: Any, *, out: Any = None) -> Any:
    """The scaled complementary error function exp(x^2) erfc(x), accurate for large x."""
    res = Erfcx.apply(_float_unary(as_tensor_arg(input)))
    return res if out is None else _out.write(out, res, "erfcx")


def i0(input: Any, *, out: Any = None) -> Any:
    """Modified Bessel function of the first kind, order 0."""
    res = I0.apply(_float_unary(as_tensor_arg(input)), 0, False)
    return res if out is None else _out.write(out, res, "i0")


def i0e(input: Any, *, out: Any = None) -> Any:
    """Exponentially scaled I0: exp(-|x|) I0(x)."""
    res = I0e.apply(_float_unary(as_tensor_arg(input)), 0, True)
    return res if out is None else _out.write(out, res, "i0e")


def i1(input: Any, *, out: Any = None) -> Any:
    """Modified Bessel function of the first kind, order 1."""
    res = I1.apply(_float_unary(as_tensor_arg(input)), 1, False)
    return res if out is None else _out.write(out, res, "i1")


def i1e(input: Any, *, out: Any = None) -> Any:
    """Exponentially scaled I1: exp(-|x|) I1(x)."""
    res = I1e.apply(_float_unary(as_tensor_arg(input)), 1, True)
    return res if out is None else _out.write(out, res, "i1e")


def logit(input: Any, eps: float | None = None, *, out: Any = None) -> Any:
    """``log(input / (1 - input))``, ``input`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given."""
    if isinstance(input, TensorBase) and input.is_complex():  # (PyTorch's logit is real only)
        raise NotImplementedError(_not_complex(input, "logit"))
    op, input = _unary(Logit, input)
    res = op.apply(input, eps)
    return res if out is None else _out.write(out, res, "logit")


def sinc(input: Any, *, out: Any = None) -> Any:
    """The normalized sinc, ``sin(pi * input) / (pi * input)`` (1 at 0)."""
    op, input = _unary(Sinc, input)
    res = op.apply(input)
    return res if out is None else _out.write(out, res, "sinc")


def igamma(input: Any, other: Any, *, out: Any = None) -> Any:
    """The regularised lower incomplete gamma function P(input, other) (``special.gammainc``);
    differentiable in ``other`` only, as in PyTorch."""
    a, x = _gamma_args(input, other, "igamma")
    res = Igamma.apply(a, x, False)
    return res if out is None else _out.write(out, res, "igamma")


def igammac(input: Any, other: Any, *, out: Any = None) -> Any:
    """The regularised upper incomplete gamma function Q(input, other) = 1 - P
    (``special.gammaincc``); differentiable in ``other`` only, as in PyTorch."""
    a, x = _gamma_args(input, other, "igammac")
    res = Igammac.apply(a, x, True)
    return res if out is None else _out.write(out, res, "igammac")


def zeta(input: Any, other: Any, *, out: Any = None) -> Any:
    """The Hurwitz zeta function sum_k (k + other)^-input (``special.zeta``; either argument may
    be a number); differentiable in ``other`` only, as in PyTorch."""
    x, q = _promote(input, other, to_float=True)
    if not isinstance(x, TensorBase):
        x = _full_like0(q, x)
    if not isinstance(q, TensorBase):
        q = _full_like0(x, q)
    res = Zeta.apply(x, q)
    return res if out is None else _out.write(out, res, "special_zeta")


def bessel_j0(input: Any, *, out: Any = None) -> Any:
    """The Bessel function of the first kind of order 0 (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.bessel_j0, input, out, "special_bessel_j0")


def bessel_j1(input: Any, *, out: Any = None) -> Any:
    """The Bessel function of the first kind of order 1 (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.bessel_j1, input, out, "special_bessel_j1")


def bessel_y0(input: Any, *, out: Any = None) -> Any:
    """The Bessel function of the second kind of order 0 (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.bessel_y0, input, out, "special_bessel_y0")


def bessel_y1(input: Any, *, out: Any = None) -> Any:
    """The Bessel function of the second kind of order 1 (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.bessel_y1, input, out, "special_bessel_y1")


def modified_bessel_k0(input: Any, *, out: Any = None) -> Any:
    """The modified Bessel function of the second kind of order 0 (no gradient)."""
    return _no_grad_unary(_special.modified_bessel_k0, input, out, "special_modified_bessel_k0")


def modified_bessel_k1(input: Any, *, out: Any = None) -> Any:
    """The modified Bessel function of the second kind of order 1 (no gradient)."""
    return _no_grad_unary(_special.modified_bessel_k1, input, out, "special_modified_bessel_k1")


def modified_bessel_i0(input: Any, *, out: Any = None) -> Any:
    """I0(x), as ``i0`` but without a gradient (PyTorch's ``special.modified_bessel_i0`` has
    none)."""
    return _no_grad_unary(lambda a: _bessel_i(_backend.xp_of(a), a, 0, False), input, out,
                          "special_modified_bessel_i0")


def modified_bessel_i1(input: Any, *, out: Any = None) -> Any:
    """I1(x), as ``i1`` but without a gradient (PyTorch's ``special.modified_bessel_i1`` has
    none)."""
    return _no_grad_unary(lambda a: _bessel_i(_backend.xp_of(a), a, 1, False), input, out,
                          "special_modified_bessel_i1")


def airy_ai(x: Any, *, out: Any = None) -> Any:
    """The Airy function Ai(x) (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.airy_ai, x, out, "special_airy_ai")


def scaled_modified_bessel_k0(x: Any, *, out: Any = None) -> Any:
    """exp(x) K0(x) (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.scaled_modified_bessel_k0, x, out,
                          "special_scaled_modified_bessel_k0")


def scaled_modified_bessel_k1(x: Any, *, out: Any = None) -> Any:
    """exp(x) K1(x) (no gradient, as in PyTorch)."""
    return _no_grad_unary(_special.scaled_modified_bessel_k1, x, out,
                          "special_scaled_modified_bessel_k1")


# ---------------------------------------------------------------------------------------------
# op classes


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


class BesselI(Op):
    """out = I_n(x) (n = 0, 1), or e^{-|x|} I_n(x) when scaled
    grad: I0' = I1; I1' = I0 - I1 / x (1/2 at 0); scaled: I0e' = I1e - sgn(x) I0e,
    I1e' = I0e - I1e (sgn(x) + 1/x)"""

    @staticmethod
    def forward(ctx: Any, x: Any, order: int, scaled: bool) -> Any:
        ctx.order, ctx.scaled = order, scaled
        out = _bessel_i(ctx.xp, x, order, scaled)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, out = ctx.saved
        xp = ctx.xp
        if ctx.order == 0:
            d = ctx.call(BesselI, x, 1, ctx.scaled)
            if ctx.scaled:
                d = d - xp.sign(x) * out
        else:
            i0 = ctx.call(BesselI, x, 0, ctx.scaled)
            safe = xp.where(x == 0, 1.0, x)
            d = xp.where(x == 0, 0.5, i0 - out / safe)
            if ctx.scaled:
                d = d - xp.sign(x) * out
        return grad * d, None, None


class I0(BesselI):
    """I_0(x) (same rule as BesselI)."""

    node_name = "I0Backward0"


class I0e(BesselI):
    """exp(-|x|) I_0(x) (same rule as BesselI)."""

    node_name = "SpecialI0EBackward0"


class I1(BesselI):
    """I_1(x) (same rule as BesselI)."""

    node_name = "SpecialI1Backward0"


class I1e(BesselI):
    """exp(-|x|) I_1(x) (same rule as BesselI)."""

    node_name = "SpecialI1EBackward0"


class Logit(Op):
    """out = log(z / (1 - z)), z = clamp(x, eps, 1 - eps) when eps is given
    grad_x = grad / (x (1 - x)); NaN outside [0, 1] (no eps) or 0 outside [eps, 1 - eps]"""

    @staticmethod
    def forward(ctx: Any, x: Any, eps: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x, eps)
        z = x if eps is None else xp.clip(x, eps, 1 - eps)
        return _quietly(_logit_raw, xp, z)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, eps = ctx.saved
        xp = ctx.xp
        d = x * (1 - x)
        g = _quietly(_truediv, grad, xp.where(d == 0, 0.0, d))  # (+0: +inf at x = -0.0 too)
        if eps is None:
            return xp.where((x < 0) | (x > 1), math.nan, g), None
        return xp.where((x < eps) | (x > 1 - eps), 0.0, g), None


class Sinc(Op):
    """out = sin(pi x) / (pi x), 1 at 0
    grad_x = grad * (cos(pi x) pi x - sin(pi x)) / (pi x**2), 0 at 0"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.sinc(x).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        zero = x == 0
        px = xp.where(zero, 1.0, x * math.pi)
        d = (xp.cos(px) * px - xp.sin(px)) / (px * xp.where(zero, 1.0, x))
        return grad * xp.where(zero, 0.0, d)


class Igamma(Op):
    """out = P(a, x) (Q(a, x) when upper)
    grad_x = +- grad * x^(a-1) e^-x / Gamma(a)          grad_a: not implemented (as PyTorch)"""

    @staticmethod
    def forward(ctx: Any, a: Any, x: Any, upper: bool) -> Any:
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        fn = _special.gammaincc if upper else _special.gammainc
        return fn(a, x).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved
        xp = ctx.xp
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise RuntimeError(f"the derivative for '{name}: input' is not implemented.")
        with np.errstate(all="ignore"):
            d = xp.exp((a - 1) * xp.log(x) - x - _special.lgamma(a))
        d = d.astype(grad.dtype, copy=False)
        return None, (-grad * d if ctx.upper else grad * d), None


class Igammac(Igamma):
    """Q(a, x) (same rule as Igamma)."""

    node_name = "IgammacBackward0"


class Zeta(Op):
    """out = zeta(x, q)          grad_q = -grad * x * zeta(x + 1, q)
    grad_x: not implemented (as PyTorch)"""

    node_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, q: Any) -> Any:
        ctx.save_for_backward(x, q)
        return _special.zeta(x, q).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, q = ctx.saved
        if ctx.needs_input_grad[0]:
            raise RuntimeError("the derivative for 'zeta' is not implemented.")
        d = -x * _special.zeta(x + 1, q)
        return None, grad * d.astype(grad.dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# helpers


def _bessel_i(xp: Any, x: Any, order: int, scaled: bool) -> Any:
    """I_order(x) (times exp(-|x|) when ``scaled``), in float64: the power series
    sum_k (x/2)^(2k+order) / (k! (k+order)!) for |x| <= 30 (80 terms), the asymptotic series
    exp(|x|) / sqrt(2 pi |x|) * sum_k (-1)^k prod_j (4 order^2 - (2j-1)^2) / (k! (8|x|)^k)
    beyond (I_1 is odd, I_0 even)."""
    x64 = x.astype(xp.float64)
    ax = xp.abs(x64)
    small = ax <= 30.0
    xs = xp.where(small, ax, 0.0)
    half_sq = (xs * 0.5) ** 2
    term = xp.ones_like(xs) if order == 0 else xs * 0.5
    total = term
    for k in range(1, 80):
        term = term * half_sq / (k * (k + order))
        total = total + term
    if scaled:
        total = total * xp.exp(-xs)
    xl = xp.where(small, 31.0, ax)
    mu = 4.0 * order * order
    coef = xp.ones_like(xl)
    acc = coef
    for k in range(1, 25):
        coef = coef * -(mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
        acc = acc + coef
    large = acc / xp.sqrt(2.0 * math.pi * xl)
    if not scaled:
        large = large * xp.exp(xl)
    out = xp.where(small, total, large)
    if order == 1:
        out = xp.where(x64 < 0, -out, out)
    return xp.where(xp.isnan(x64), x64, out).astype(x.dtype)


def _logit_raw(xp: Any, z: Any) -> Any:    return xp.log(z / (1 - z))


def _gamma_args(a: Any, x: Any, name: str) -> tuple[Any, Any]:
    """Two tensors of one floating dtype (PyTorch's igamma has no integer or number forms)."""
    a, x = as_tensor_arg(a), as_tensor_arg(x)
    for t in (a, x):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{name}(): both arguments must be tensors, not {type(t).__name__} "
                            f"(wrap the number with torch.tensor)")
    a, x = _promote(a, x)
    if a._data.dtype.kind not in "fV":
        raise RuntimeError(f"{name}: not implemented for {a._data.dtype} tensors; "
                           "convert them with .float() or .double()")
    return a, x


def _no_grad_unary(fn: Any, input: Any, out: Any, name: str) -> Any:
    """``fn`` on ``input``'s array (integer inputs in the default float dtype); the result
    carries no gradient, as PyTorch's Bessel functions."""
    x = _float_unary(as_tensor_arg(input))
    res = TensorBase._make(fn(x._data).astype(x._data.dtype, copy=False))
    return res if out is None else _out.write(out, res, name)


def _full_like0(ref: Any, value: Any) -> Any:
    """A 0-d tensor holding the number ``value`` in ``ref``'s dtype, on its device."""
    return TensorBase._make(_backend.xp_of(ref._data).asarray(value, dtype=ref._data.dtype))
