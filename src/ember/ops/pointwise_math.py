"""Pointwise math functions: exponentials and logarithms, powers' relatives (sqrt, rsqrt,
reciprocal), trigonometric and hyperbolic functions, sigmoid, erf family, logit, sinc, and the
binary ones (atan2, logaddexp, logaddexp2, hypot, xlogy). Integer inputs compute in the
default float dtype, as in PyTorch. exp/log/roots/trigonometric/hyperbolic functions, sigmoid
and reciprocal take complex tensors (``_cunary``); the others refuse them, as PyTorch does.

Neighbours: arithmetic in ``ops/pointwise.py``, abs/rounding/clamp/where in
``ops/pointwise_piecewise.py``, lgamma/digamma/Bessel functions in ``ops/special.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _kernels_loader as _kernels
from .._special import erf as _erf
from .._special import erfc as _erfc
from .._special import erfinv as _erfinv
from .._special import logaddexp_complex as _logaddexp_c
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _blockwise as _bw
from . import _out
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import _cunary, _float_unary, _is_complex, _pr, _promote, _quietly, _truediv, _unary
from ._promote import _not_complex as _no_complex
from ._promote import _promote_real as _real_operands

__all__ = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "tanh",
    "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "sigmoid", "erf", "erfc",
    "erfinv", "frac", "reciprocal", "atan2", "arctan2", "logaddexp", "logaddexp2", "hypot",
    "xlogy",
]


def exp(input: Any, *, out: Any = None) -> Any:
    """``e ** input``, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("exp", input)
    op, x = _cunary(Exp, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "exp")


def exp2(input: Any, *, out: Any = None) -> Any:
    """``2 ** input``, elementwise."""
    op, x = _cunary(Exp2, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "exp2")


def expm1(input: Any, *, out: Any = None) -> Any:
    """``exp(input) - 1``, accurate near 0."""
    if _amp.active and out is None:
        (input,) = _amp_cast("expm1", input)
    op, x = _cunary(Expm1, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "expm1")


def log(input: Any, *, out: Any = None) -> Any:
    """The natural logarithm, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("log", input)
    op, x = _cunary(Log, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "log")


def log2(input: Any, *, out: Any = None) -> Any:
    """The base-2 logarithm, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("log2", input)
    op, x = _cunary(Log2, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "log2")


def log10(input: Any, *, out: Any = None) -> Any:
    """The base-10 logarithm, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("log10", input)
    op, x = _cunary(Log10, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "log10")


def log1p(input: Any, *, out: Any = None) -> Any:
    """``log(1 + input)``, accurate near 0."""
    if _amp.active and out is None:
        (input,) = _amp_cast("log1p", input)
    op, x = _cunary(Log1p, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "log1p")


def sqrt(input: Any, *, out: Any = None) -> Any:
    """The square root, elementwise."""
    op, x = _cunary(Sqrt, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "sqrt")


def rsqrt(input: Any, *, out: Any = None) -> Any:
    """``1 / sqrt(input)``, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("rsqrt", input)
    op, input = _unary(Rsqrt, input)
    res = op.apply(input)
    return res if out is None else _out.write(out, res, "rsqrt")


def sin(input: Any, *, out: Any = None) -> Any:
    """The sine, elementwise."""
    op, x = _cunary(Sin, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "sin")


def cos(input: Any, *, out: Any = None) -> Any:
    """The cosine, elementwise."""
    op, x = _cunary(Cos, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "cos")


def tan(input: Any, *, out: Any = None) -> Any:
    """The tangent, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("tan", input)
    op, x = _cunary(Tan, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "tan")


def asin(input: Any, *, out: Any = None) -> Any:
    """The inverse sine, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("asin", input)
    op, x = _cunary(Asin, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "asin")


arcsin = asin


def acos(input: Any, *, out: Any = None) -> Any:
    """The inverse cosine, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("acos", input)
    op, x = _cunary(Acos, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "acos")


arccos = acos


def atan(input: Any, *, out: Any = None) -> Any:
    """The inverse tangent, elementwise."""
    op, x = _cunary(Atan, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "atan")


arctan = atan


def sinh(input: Any, *, out: Any = None) -> Any:
    """The hyperbolic sine, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("sinh", input)
    op, x = _cunary(Sinh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "sinh")


def cosh(input: Any, *, out: Any = None) -> Any:
    """The hyperbolic cosine, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("cosh", input)
    op, x = _cunary(Cosh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "cosh")


def tanh(input: Any, *, out: Any = None) -> Any:
    """The hyperbolic tangent, elementwise."""
    op, x = _cunary(Tanh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "tanh")


def asinh(input: Any, *, out: Any = None) -> Any:
    """The inverse hyperbolic sine, elementwise."""
    op, x = _cunary(Asinh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "asinh")


arcsinh = asinh


def acosh(input: Any, *, out: Any = None) -> Any:
    """The inverse hyperbolic cosine, elementwise."""
    op, x = _cunary(Acosh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "acosh")


arccosh = acosh


def atanh(input: Any, *, out: Any = None) -> Any:
    """The inverse hyperbolic tangent, elementwise."""
    op, x = _cunary(Atanh, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "atanh")


arctanh = atanh


def sigmoid(input: Any, *, out: Any = None) -> Any:
    """The logistic function ``1 / (1 + exp(-input))``, elementwise."""
    op, input = _unary(Sigmoid, input)
    res = op.apply(input)
    return res if out is None else _out.write(out, res, "sigmoid")


def erf(input: Any, *, out: Any = None) -> Any:
    """The error function, elementwise."""
    res = Erf.apply(_float_unary(input))
    return res if out is None else _out.write(out, res, "erf")


def erfc(input: Any, *, out: Any = None) -> Any:
    """The complementary error function ``1 - erf(input)``, accurate in the tail."""
    res = Erfc.apply(_float_unary(input))
    return res if out is None else _out.write(out, res, "erfc")


def erfinv(input: Any, *, out: Any = None) -> Any:
    """The inverse error function, elementwise."""
    if _amp.active and out is None:
        (input,) = _amp_cast("erfinv", input)
    res = Erfinv.apply(_float_unary(input))
    return res if out is None else _out.write(out, res, "erfinv")


def frac(input: Any, *, out: Any = None) -> Any:
    """The fractional part ``input - trunc(input)``, elementwise."""
    res = Frac.apply(_float_unary(input))
    return res if out is None else _out.write(out, res, "frac")


def reciprocal(input: Any, *, out: Any = None) -> Any:
    """``1 / input``, elementwise (integer inputs give the default float dtype)."""
    if _amp.active:
        (input,) = _amp_cast("reciprocal", input)
    op, x = _cunary(Reciprocal, input)
    res = op.apply(x)
    return res if out is None else _out.write(out, res, "reciprocal")


def atan2(input: Any, other: Any, *, out: Any = None) -> Any:
    """``atan(input / other)`` in the right quadrant (both tensors, as in PyTorch)."""
    if _amp.active:
        input, other = _amp_cast("atan2", input, other)
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, TensorBase) and isinstance(v, (int, float, bool)):
            raise TypeError(f"atan2(): argument '{name}' must be Tensor, not {type(v).__name__}; "
                            "wrap the number in a tensor: torch.atan2(y, torch.tensor(x))")
    input, other = _real_operands(input, other, "atan2_cpu")
    res = _pr(Atan2, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "atan2")


arctan2 = atan2


def logaddexp(input: Any, other: Any, *, out: Any = None) -> Any:
    """``log(exp(input) + exp(other))``, computed stably."""
    input, other = _promote(input, other, to_float=True)
    res = _pr(LogAddExp, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "logaddexp")


def logaddexp2(input: Any, other: Any, *, out: Any = None) -> Any:
    """``log2(2**input + 2**other)``, computed stably."""
    input, other = _real_operands(input, other, "logaddexp2_cpu")
    res = _pr(LogAddExp2, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "logaddexp2")


def hypot(input: Any, other: Any, *, out: Any = None) -> Any:
    """``sqrt(input**2 + other**2)`` without overflow in the squares."""
    input, other = _real_operands(input, other, "hypot_cpu")
    res = _pr(Hypot, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "hypot")


def xlogy(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    input, other = _promote(input, other, to_float=True)
    if (t := input if isinstance(input, TensorBase) else other).is_complex():  # (as PyTorch)
        raise NotImplementedError(_no_complex(t, "xlogy"))
    if not isinstance(input, TensorBase):
        res = XlogyScalarX.apply(float(input), other)
    elif not isinstance(other, TensorBase):
        res = XlogyScalarY.apply(input, float(other))
    else:
        res = _pr(Xlogy, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "xlogy")


# ---------------------------------------------------------------------------------------------
# op classes


class Exp(Op):
    """out = exp(x)          grad_x = grad * out"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _bw.fast_unary("exp", ctx.xp, x)  # (the kernel, or NumPy's ufunc split)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * out


class Exp2(Op):
    """out = 2 ** x          grad_x = grad * out * ln 2"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.exp2(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * out * math.log(2.0)


class Expm1(Op):
    """out = exp(x) - 1          grad_x = grad * (out + 1)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.expm1(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * (out + 1)


class Log(Op):
    """out = log(x)          grad_x = grad / x"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.log(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / x


class Log2(Op):
    """out = log2(x)          grad_x = grad / (x ln 2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.log2(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / (x * math.log(2.0))


class Log10(Op):
    """out = log10(x)          grad_x = grad / (x ln 10)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.log10(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / (x * math.log(10.0))


class Log1p(Op):
    """out = log(1 + x)          grad_x = grad / (1 + x)"""

    node_name = "Log1PBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.log1p(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / (x + 1)


class Sqrt(Op):
    """out = sqrt(x)          grad_x = grad / (2 out)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad / (out * 2)


class Rsqrt(Op):
    """out = 1 / sqrt(x)          grad_x = -grad * out**3 / 2"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = 1 / ctx.xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * out * out * out * -0.5


class Reciprocal(Op):
    """out = 1 / x          grad_x = -grad * out**2"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = 1 / x
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return -grad * out * out


class Sin(Op):
    """out = sin(x)          grad_x = grad * cos(x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.sin(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.xp.cos(x)


class Cos(Op):
    """out = cos(x)          grad_x = -grad * sin(x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.cos(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return -grad * ctx.xp.sin(x)


class Tan(Op):
    """out = tan(x)          grad_x = grad * (1 + out**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.tan(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * (out * out + 1)


class Asin(Op):
    """out = asin(x)          grad_x = grad / sqrt(1 - x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arcsin(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / ctx.xp.sqrt(1 - x * x)


class Acos(Op):
    """out = acos(x)          grad_x = -grad / sqrt(1 - x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arccos(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return -grad / ctx.xp.sqrt(1 - x * x)


class Atan(Op):
    """out = atan(x)          grad_x = grad / (1 + x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arctan(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / (x * x + 1)


class Atan2(Op):
    """out = atan2(a, b)          grad_a = grad * b / (a² + b²)          grad_b = -grad * a / (a² + b²)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.arctan2(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        r = a * a + b * b
        return grad * b / r, -grad * a / r


class Sinh(Op):
    """out = sinh(x)          grad_x = grad * cosh(x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.sinh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.xp.cosh(x)


class Cosh(Op):
    """out = cosh(x)          grad_x = grad * sinh(x)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.cosh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * ctx.xp.sinh(x)


class Tanh(Op):
    """out = tanh(x)          grad_x = grad * (1 - out**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _bw.fast_unary("tanh", ctx.xp, x)  # (the kernel, or NumPy's ufunc split)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        if type(out) is np.ndarray and type(grad) is np.ndarray and out.dtype.kind == "f":
            return _bw.run(_bw.tanh_backward, "f", out, grad)  # (one full-size array)
        return grad * (1 - out * out)


class Asinh(Op):
    """out = asinh(x)          grad_x = grad / sqrt(x**2 + 1)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arcsinh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / ctx.xp.sqrt(x * x + 1)


class Acosh(Op):
    """out = acosh(x)          grad_x = grad / sqrt(x**2 - 1)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arccosh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if _is_complex(x):  # sqrt(x - 1) sqrt(x + 1): the principal branch's derivative
            return grad / (ctx.xp.sqrt(x - 1) * ctx.xp.sqrt(x + 1))
        return grad / ctx.xp.sqrt(x * x - 1)


class Atanh(Op):
    """out = atanh(x)          grad_x = grad / (1 - x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.arctanh(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad / (1 - x * x)


class Sigmoid(Op):
    """out = 1 / (1 + exp(-x))          grad_x = grad * out * (1 - out)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        xp = ctx.xp
        if type(x) is np.ndarray and x.dtype.kind == "f":
            out = _bw.run(_bw.sig_into, "f?", x)  # (the same steps, one full-size array)
            ctx.save_for_backward(out)
            return out
        if x.dtype.kind == "c":
            out = 1 / (1 + xp.exp(-x))
        else:  # exp of a negative argument only, so large |x| never overflows
            e = xp.exp(-xp.abs(x))
            out = xp.where(x >= 0, 1, e) / (e + 1)  # (one division: 1/(1+e) or e/(1+e))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        if type(out) is np.ndarray and type(grad) is np.ndarray and out.dtype.kind == "f":
            return _bw.run(_bw.sigmoid_backward, "f", out, grad)
        return grad * out * (1 - out)


class Erf(Op):
    """out = erf(x)          grad_x = grad * 2/sqrt(pi) * exp(-x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return _erf(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        gx = _kernels.erf_backward(x, grad)  # (arrays only: not create_graph)
        return gx if gx is not None else grad * (2 / math.sqrt(math.pi)) * ctx.xp.exp(-(x * x))


class Erfc(Op):
    """out = 1 - erf(x)          grad_x = -grad * 2/sqrt(pi) * exp(-x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return _erfc(x)  # not 1 - erf(x): that loses all precision in the tail

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (gx := _kernels.erf_backward(x, grad, complement=True)) is not None:
            return gx
        return grad * (-2 / math.sqrt(math.pi)) * ctx.xp.exp(-(x * x))


class Erfinv(Op):
    """out = erfinv(x)          grad_x = grad * sqrt(pi)/2 * exp(out**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _erfinv(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        gx = _kernels.erfinv_backward(out, grad)  # (arrays only: not create_graph)
        return gx if gx is not None else grad * (math.sqrt(math.pi) / 2) * ctx.xp.exp(out * out)


class Frac(Op):
    """out = x - trunc(x)          grad_x = grad"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x - ctx.xp.trunc(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


class LogAddExp(Op):
    """out = log(exp(a) + exp(b))          grad_a = grad / (1 + exp(b - a))   (b's likewise)"""

    node_name = "LogaddexpBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        xp = ctx.xp  # (a or b may be a number)
        ctx.save_for_backward(a, b)
        cplx = np.iscomplexobj(a) or np.iscomplexobj(b)
        return _logaddexp_c(xp, a, b) if cplx else xp.logaddexp(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:  # (complex: grad times the conjugate derivative)
        (a, b), xp, n = ctx.saved, ctx.xp, ctx.needs_input_grad
        with np.errstate(over="ignore"):  # exp overflows to inf: a zero gradient, as PyTorch's
            return (grad / xp.conj(1 + xp.exp(b - a)) if n[0] else None,
                    grad / xp.conj(1 + xp.exp(a - b)) if n[1] else None)


class LogAddExp2(Op):
    """out = log2(2**a + 2**b)          grad_a = grad / (1 + 2**(b - a))   (b's likewise)"""

    node_name = "Logaddexp2Backward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.logaddexp2(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (a, b), xp, n = ctx.saved, ctx.xp, ctx.needs_input_grad
        with np.errstate(over="ignore"):
            return (grad / (1 + xp.exp2(b - a)) if n[0] else None,
                    grad / (1 + xp.exp2(a - b)) if n[1] else None)


class Hypot(Op):
    """out = sqrt(a**2 + b**2)          grad_a = grad * a / out          grad_b = grad * b / out"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = ctx.xp.hypot(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b, out = ctx.saved
        return _quietly(_truediv, grad * a, out), _quietly(_truediv, grad * b, out)


class Xlogy(Op):
    """out = x * log(y), 0 where x == 0 (unless y is NaN)
    grad_x = grad * log(y), 0 where x == 0 and y <= 0          grad_y = grad * x / y"""

    @staticmethod
    def forward(ctx: Any, x: Any, y: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x, y)
        logy = _log_any(xp, y)
        dt = x.dtype if hasattr(x, "dtype") else y.dtype
        return xp.asarray(xp.where((x == 0) & (y == y), 0.0, x * logy), dtype=dt)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, y = ctx.saved
        xp = ctx.xp
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = xp.where((x == 0) & (y <= 0), 0.0, grad * _log_any(xp, y))
        if ctx.needs_input_grad[1]:
            gy = _quietly(_truediv, grad * x, y)
        return gx, gy


class XlogyScalarX(Xlogy):
    """xlogy with a number ``x`` (same rule as Xlogy)."""

    node_name = "XlogyBackward1"


class XlogyScalarY(Xlogy):
    """xlogy with a number ``y`` (same rule as Xlogy)."""

    node_name = "XlogyBackward2"





# ---------------------------------------------------------------------------------------------
# helpers


def _log_any(xp: Any, y: Any) -> Any:
    """``log(y)`` quietly; a Python number stays a Python number (no float64 upcast)."""
    if isinstance(y, float):
        return math.log(y) if y > 0 else (-math.inf if y == 0 else math.nan)
    return _quietly(xp.log, y)
