"""Pointwise arithmetic: add, sub, mul, div, floor_divide, remainder, fmod, pow, neg, deg2rad,
rad2deg (addcmul, addcdiv and lerp continue in ``pointwise_fused.py``), with the binary-op fast path (two tensors of one floating
dtype, or a floating tensor and a Python number, go straight to the op) and PyTorch's promotion
otherwise.

Neighbours: operand promotion in ``ops/_promote.py``, casts and copies in ``ops/casting.py``,
math functions in ``ops/pointwise_math.py``, abs/rounding/clamp/where/logical/bitwise in
``ops/pointwise_piecewise.py``, comparisons in ``ops/comparison.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype, _threads
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _out
from . import pointwise_math as _pm
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import (
    _EXTOBJ,
    _F16,
    _QUIET_EXTOBJ,
    _float_unary,
    _half_of,
    _nograd,
    _om,
    _pr,
    _promote,
    _quietly,
    _refuse_complex,
    _truediv,
    opmath,
)
from .casting import as_tensor_arg, cast
from .creation import tensor

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "true_divide", "divide",
    "floor_divide", "remainder", "fmod", "pow", "float_power", "neg", "negative", "positive",
    "deg2rad", "rad2deg",
]


def add(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    """``input + alpha * other`` with broadcasting."""
    if alpha == 1 and out is None and (_as_is(input, other) or _int64_and_int(input, other)):
        return Add.apply(input, other)
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        input = _number_tensor(input)
    input, other, scale = _scaled(input, other, alpha)
    if scale is not None:
        res = _om(ScaledAdd, input, other).apply(input, other, scale)
    else:
        res = Add.apply(input, other)
    return res if out is None else _out.write(out, res, "add")


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    """``input - alpha * other`` with broadcasting."""
    if alpha == 1 and out is None and (_as_is(input, other) or _int64_and_int(input, other)):
        return (Sub if isinstance(input, TensorBase) else Rsub).apply(input, other)
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        input = _number_tensor(input)
    if _is_bool_arg(input) or _is_bool_arg(other):
        if (isinstance(input, TensorBase) and isinstance(other, TensorBase)
                and _is_bool_arg(input) and _is_bool_arg(other)):
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. "
                "Use the `^` or `logical_xor()` operator instead."
            )
        raise RuntimeError(_BOOL_SUB_MSG)
    input, other, scale = _scaled(input, other, alpha)
    if scale is not None:
        op = ScaledSub if isinstance(input, TensorBase) else ScaledRsub
        res = _om(op, input, other).apply(input, other, scale)
    else:
        res = (Sub if isinstance(input, TensorBase) else Rsub).apply(input, other)
    return res if out is None else _out.write(out, res, "sub")


def mul(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input * other`` with broadcasting."""
    if out is None and (_as_is(input, other) or _int64_and_int(input, other)):
        return Mul.apply(input, other)
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        input = _number_tensor(input)
    input, other = _promote(input, other)
    res = _om(Mul, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "mul")


def div(input: Any, other: Any, *, rounding_mode: str | None = None, out: Any = None) -> Any:
    """True division (integers give floats); ``rounding_mode`` 'trunc' or 'floor'."""
    if rounding_mode is None:
        if out is None and _as_is(input, other):
            return (Div if isinstance(input, TensorBase) else RDiv).apply(input, other)
        if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
            input = _number_tensor(input)
        input, other = _promote(input, other, to_float=True)
        if isinstance(input, TensorBase):
            res = _om(Div, input, other).apply(input, other)
            return res if out is None else _out.write(out, res, "div")
        if _half_of(other) is not None:  # PyTorch's number / tensor: tensor.reciprocal() * number
            res = mul(_pm.reciprocal(other), input)
            return res if out is None else _out.write(out, res, "div")
        res = _om(RDiv, other).apply(input, other)
        return res if out is None else _out.write(out, res, "div")
    if rounding_mode == "floor" or rounding_mode == "trunc":
        floor = rounding_mode == "floor"
        if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
            input = _number_tensor(input)
        input, other = _promote(input, other)
        if _is_float_arg(input, other):  # recorded, with zero gradients (PyTorch's DivBackward2)
            res = _om(DivRounded, input, other).apply(input, other, floor)
        else:
            _check_int_divisor(input, other, "division")
            res = _nograd(_floor_div if floor else _trunc_int_div, input, other)
        return res if out is None else _out.write(out, res, "div")
    raise RuntimeError(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def floor_divide(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input // other``: integer tensors stay integer; floats round toward -inf (no gradient)."""
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        input = _number_tensor(input)
    input, other = _promote(input, other)
    _refuse_complex("floor_divide", input, other)
    if _is_float_arg(input, other):  # recorded; its backward raises, as PyTorch's
        res = _om(FloorDivide, input, other).apply(input, other)
    else:
        _check_int_divisor(input, other, "division")
        res = _nograd(_floor_div, input, other)
    return res if out is None else _out.write(out, res, "floor_divide")


def remainder(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input % other`` with the sign of ``other`` (Python's rule); integer 0 divisors raise."""
    input, other = _promote(input, other)
    _refuse_complex("remainder", input, other)
    _check_int_divisor(input, other, "modulo")
    both = isinstance(input, TensorBase) and isinstance(other, TensorBase)
    res = _pr(RemainderT if both else Remainder, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "remainder")


def fmod(input: Any, other: Any, *, out: Any = None) -> Any:
    """C's ``fmod``: the remainder with the sign of ``input``; integer ``other == 0`` raises."""
    input, other = _promote(input, other)
    _refuse_complex("fmod", input, other)
    _check_int_divisor(input, other, "modulo")
    both = isinstance(input, TensorBase) and isinstance(other, TensorBase)
    res = _pr(FmodT if both else Fmod, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "fmod")


def pow(input: Any, exponent: Any, *, out: Any = None) -> Any:
    """``input ** exponent``. Integer tensors to a float power give floats, as in PyTorch."""
    if _amp.active:
        input, exponent = _amp_cast("pow", input, exponent)
    if (out is None and (type(exponent) is int or type(exponent) is float)
            and _as_is(input, exponent)):
        return Pow.apply(input, exponent)  # a floating tensor to a Python number: no promotion
    neg_exp = (isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool)
               and exponent < 0)
    # (promotion may wrap a negative exponent into an unsigned dtype)
    input, exponent = _promote(input, exponent)
    t = input if isinstance(input, TensorBase) else exponent
    kind = t._data.dtype.kind
    if kind == "b":
        if isinstance(exponent, TensorBase) or not isinstance(input, TensorBase):
            raise NotImplementedError(
                "\"pow\" not implemented for 'Bool' (a bool tensor exponent or base); convert "
                "first, e.g. x.long() ** y.long()"
            )
        # bool ** number: the result stays bool, as in PyTorch
        res = _nograd(_bool_pow, input, exponent)
        return res if out is None else _out.write(out, res, "pow")
    if kind in "iu":
        if isinstance(exponent, TensorBase):
            if (exponent._data < 0).any():  # integer semantics: 1, (-1)^e, or 0 (PyTorch's result)
                res = _nograd(_int_pow_neg, input, exponent)
                return res if out is None else _out.write(out, res, "pow")
        elif neg_exp:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not isinstance(input, TensorBase):
        res = (_om(RPow, exponent) if exponent._data.dtype.kind == "c" else RPow).apply(input, exponent)
        return res if out is None else _out.write(out, res, "pow")
    if isinstance(exponent, TensorBase):
        res = _om(PowTensor, input, exponent).apply(input, exponent)
        return res if out is None else _out.write(out, res, "pow")
    half = _half_of(input)
    if half is None:
        res = _om(Pow, input, exponent).apply(input, exponent)
        return res if out is None else _out.write(out, res, "pow")
    # a half tensor to a number: PyTorch rounds the exponent to the half type; float16 computes
    # in float32, while its bfloat16 kernel rounds x * x before the third factor of x ** 3 (as
    # NumPy's bfloat16 does)
    exponent = float(np.asarray(exponent).astype(half))
    res = (opmath(Pow) if half == _F16 else Pow).apply(input, exponent)
    return res if out is None else _out.write(out, res, "pow")


def float_power(input: Any, exponent: Any, *, out: Any = None) -> Any:
    """``input ** exponent`` computed in float64 (complex128 if either is complex), as
    PyTorch's float_power."""
    a, b = as_tensor_arg(input), as_tensor_arg(exponent)
    c = any(x.is_complex() if isinstance(x, TensorBase) else isinstance(x, complex) for x in (a, b))
    dt, num = (_dtype.complex128, complex) if c else (_dtype.float64, float)
    input = cast(a, dt) if isinstance(a, TensorBase) else num(a)
    exponent = cast(b, dt) if isinstance(b, TensorBase) else num(b)
    res = pow(input, exponent)
    return res if out is None else _out.write(out, res, "float_power")


def neg(input: Any, *, out: Any = None) -> Any:
    """``-input``, elementwise (bool tensors raise: use ``~`` or logical_not)."""
    if input._data.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    res = Neg.apply(input)
    return res if out is None else _out.write(out, res, "neg")


def positive(input: Any) -> Any:
    """``input`` itself (``+input``)."""
    return input


def deg2rad(input: Any, *, out: Any = None) -> Any:
    """Degrees to radians."""
    if isinstance(input, TensorBase) and input.is_complex():
        raise RuntimeError(f"deg2rad is not supported for complex tensors (got {input.dtype})")
    input = _float_unary(input)
    res = _om(Deg2Rad, input).apply(input, math.pi / 180)
    return res if out is None else _out.write(out, res, "deg2rad")


def rad2deg(input: Any, *, out: Any = None) -> Any:
    """Radians to degrees."""
    if isinstance(input, TensorBase) and input.is_complex():
        raise RuntimeError(f"rad2deg is not supported for complex tensors (got {input.dtype})")
    input = _float_unary(input)
    res = _om(Rad2Deg, input).apply(input, 180 / math.pi)
    return res if out is None else _out.write(out, res, "rad2deg")


def subtract(input: Any, other: Any, alpha: Any = 1, *, out: Any = None) -> Any:
    """``sub`` with ``alpha`` also positional, as PyTorch's ``subtract`` (its number overload)."""
    return sub(input, other, alpha=alpha, out=out)


multiply = mul


def true_divide(input: Any, other: Any, *, out: Any = None) -> Any:
    """``div`` without ``rounding_mode``, as PyTorch's."""
    return div(input, other, out=out)


divide = div


negative = neg


# ---------------------------------------------------------------------------------------------
# op classes


class Add(Op):
    """out = a + b          grad_a = grad          grad_b = grad"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        if type(a) is np.ndarray and a.size >= _threads.cut_arith and (
                out := _threads.run(np.add, a, b)) is not None:
            return out  # (large: split over the threads)
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, grad


class Sub(Op):
    """out = a - b          grad_a = grad          grad_b = -grad"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        if type(a) is np.ndarray and a.size >= _threads.cut_arith and (
                out := _threads.run(np.subtract, a, b)) is not None:
            return out
        return a - b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, -grad if ctx.needs_input_grad[1] else None


class Rsub(Sub):
    """``number - tensor``: PyTorch's node for a reversed subtraction (same rule as Sub)."""

    node_name = "RsubBackward1"


class RsubT(Sub):
    """``torch.rsub(tensor, tensor)``: other - input (same rule as Sub, operands swapped)."""

    node_name = "RsubBackward0"


class ScaledAdd(Op):
    """out = a + b * alpha          grad_a = grad          grad_b = grad * alpha

    ``add(a, b, alpha=k)`` as one node that saves nothing, as PyTorch's AddBackward0 (a
    separate multiplication would save alpha and refuse a second backward)."""

    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, alpha: Any) -> Any:
        ctx.alpha = alpha
        return _scaled_sum(np.add, a, b, alpha)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, grad * ctx.alpha if ctx.needs_input_grad[1] else None, None


class ScaledSub(Op):
    """out = a - b * alpha          grad_a = grad          grad_b = -grad * alpha"""

    node_name = "SubBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, alpha: Any) -> Any:
        ctx.alpha = alpha
        return _scaled_sum(np.subtract, a, b, alpha)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, -grad * ctx.alpha if ctx.needs_input_grad[1] else None, None


class ScaledRsub(ScaledSub):
    """``number - alpha * tensor`` (same rule as ScaledSub)."""

    node_name = "RsubBackward1"


class ScaledRsubT(ScaledSub):
    """``torch.rsub(tensor, tensor, alpha=k)`` (same rule as ScaledSub, operands swapped)."""

    node_name = "RsubBackward0"


class Mul(Op):
    """out = a * b          grad_a = grad * b          grad_b = grad * a"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        if type(a) is np.ndarray and a.size >= _threads.cut_arith and (
                out := _threads.run(np.multiply, a, b)) is not None:
            return out
        return a * b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        if type(grad) is np.ndarray and grad.size >= _threads.cut_arith:
            return (_split_mul(grad, b) if ctx.needs_input_grad[0] else None,
                    _split_mul(grad, a) if ctx.needs_input_grad[1] else None)
        return (grad * b if ctx.needs_input_grad[0] else None,
                grad * a if ctx.needs_input_grad[1] else None)


class Div(Op):
    """out = a / b          grad_a = grad / b          grad_b = -grad * ((a / b) / b)

    grad_b divides twice instead of by b * b, as PyTorch does: b * b underflows to 0 for tiny
    float32 b, and its derivative 2b (0 at b == 0) would turn an infinite second derivative
    into nan."""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        if type(a) is np.ndarray and a.size >= _threads.cut_arith:
            return _quietly(_split_div, a, b)
        if _safe_divisor(b):
            return a / b
        if _EXTOBJ is None:  # pragma: no cover
            return _quietly(_truediv, a, b)
        token = _EXTOBJ.set(_QUIET_EXTOBJ)  # (_quietly, inlined: this is a hot path)
        try:
            return a / b
        finally:
            _EXTOBJ.reset(token)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        div = (_split_div if type(grad) is np.ndarray and grad.size >= _threads.cut_arith
               else _truediv)
        ga = _quietly(div, grad, b) if ctx.needs_input_grad[0] else None
        gb = _quietly(_div_other_grad, grad, a, b) if ctx.needs_input_grad[1] else None
        return ga, gb


class DivRounded(Op):
    """out = floor(a / b) or trunc(a / b) (div's rounding modes, floating operands)
    grad_a = grad_b = 0 (PyTorch's DivBackward2)"""

    node_name = "DivBackward2"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, floor: bool) -> Any:
        ctx.save_for_backward(a, b)  # what PyTorch's node keeps (its a / b rule's inputs)
        if floor:
            return _quietly(_floordiv, a, b)
        return ctx.xp.trunc(_quietly(_truediv, a, b))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        zero = ctx.xp.zeros_like(grad)
        need = ctx.needs_input_grad
        return (zero if need[0] else None), (zero if need[1] else None), None


class FloorDivide(Op):
    """out = floor(a / b) (``//`` of floating operands)
    backward: raises, as PyTorch's (it has no derivative for floor_divide)"""

    node_name = "NotImplemented"  # PyTorch's grad_fn prints as <NotImplemented>

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        return _quietly(_floordiv, a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise RuntimeError(
            "derivative for aten::floor_divide is not implemented (as in PyTorch: `//` and "
            "floor_divide have no gradient). Use torch.div(a, b, rounding_mode='floor'), whose "
            "gradient is zero, or detach() the result of a // b")


class RDiv(Div):
    """``number / tensor``: PyTorch computes it as ``tensor.reciprocal() * number``, whose node
    is a MulBackward0 (same rule as Div)."""

    node_name = "MulBackward0"


class Neg(Op):
    """out = -x          grad_x = -grad"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return -x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return -grad


class Pow(Op):
    """out = a ** b
    grad_a = grad * b * a ** (b - 1)
    grad_b = grad * out * log(a)   (0 where a == 0 and b >= 0)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = _pow(ctx.xp, a, b)
        ctx.save_for_backward(a, b, out if ctx.needs_input_grad[1] else None)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b, out = ctx.saved
        xp = ctx.xp
        ga = gb = None
        if ctx.needs_input_grad[0]:
            if isinstance(b, (int, float)) and b == 2:
                ga = grad * 2 * a
            elif isinstance(b, (int, float)) and b == 0:
                ga = grad * 0
            elif type(b) is float and b == 0.5:  # as rsqrt: -inf at -0.0, nan at -inf
                ga = _quietly(_truediv, grad * 0.5, ctx.xp.sqrt(a))
            elif isinstance(b, (int, float)):
                ga = grad * b * _pow(xp, a, b - 1)
            else:  # a tensor exponent: 0 where it is 0 (a**-1 may be inf there)
                ga = xp.where(b == 0, 0, grad * b * a ** (b - 1))
        if ctx.needs_input_grad[1]:
            if isinstance(a, (int, float)) and not ctx._tensor_mode:
                gb = grad * out  # a number base (2 ** x): one array, scaled in place
                gb *= math.log(a) if a > 0 else -math.inf if a == 0 else math.nan
                if a == 0:  # 0 ** b: no gradient where b >= 0 (PyTorch's mask)
                    gb[b >= 0] = 0
            else:
                zero = (a == 0) & (b.real >= 0)  # (a complex exponent: its real part, as PyTorch)
                safe = xp.where(zero, 1, a) if not isinstance(a, (int, float)) else (a or 1)
                gb = xp.where(zero, 0, grad * out * xp.log(safe))
        return ga, gb


class PowTensor(Pow):
    """``tensor ** tensor`` (same rule as Pow)."""

    node_name = "PowBackward1"


class RPow(Pow):
    """``number ** tensor`` (same rule as Pow)."""

    node_name = "PowBackward2"


class Remainder(Op):
    """out = a - floor(a / b) * b          grad_a = grad          grad_b = -grad * floor(a / b)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        out = _quietly(ctx.xp.remainder, a, b)
        if out.dtype.kind == "f":  # a zero takes a's sign, as PyTorch's (NumPy gives b's)
            zero = out == 0
            if zero.any():
                out = ctx.xp.where(zero, ctx.xp.copysign(out, a), out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return grad, -grad * ctx.xp.floor(_quietly(_truediv, a, b))


class RemainderT(Remainder):
    """remainder by a tensor (same rule as Remainder)."""

    node_name = "RemainderBackward1"


class Fmod(Op):
    """out = a - trunc(a / b) * b          grad_a = grad          grad_b = -grad * trunc(a / b)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return _quietly(ctx.xp.fmod, a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return grad, -grad * ctx.xp.trunc(_quietly(_truediv, a, b))


class FmodT(Fmod):
    """fmod by a tensor (same rule as Fmod)."""

    node_name = "FmodBackward1"


class Deg2Rad(Mul):
    """x * pi / 180 (same rule as Mul)."""


class Rad2Deg(Mul):
    """x * 180 / pi (same rule as Mul)."""


def _scaled_sum(f: Any, a: Any, b: Any, alpha: Any) -> Any:
    """``a + b * alpha`` (``f`` add) or ``a - b * alpha`` (subtract), the product rounded first:
    one pass on the kernels' pool for host float arrays where ``a`` has the result's shape
    (``_kernels_loader.arith``, the same values), else NumPy's two calls."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.size >= 4096 and b.ndim <= a.ndim:
        out = np.empty(a.shape, a.dtype)
        if _kernels.arith(f, a, b, out, alpha):
            return out
    return a + b * alpha if f is np.add else a - b * alpha  # (operators: any array type)


def _split_mul(a: Any, b: Any) -> Any:
    """``a * b`` for a large host array a: split over the threads where ``_threads.run``
    applies."""
    out = _threads.run(np.multiply, a, b)
    return a * b if out is None else out


def _split_div(a: Any, b: Any) -> Any:
    """``a / b`` for a large host array a (called under ``_quietly``; the workers run in a copy
    of this context, so they are quiet too)."""
    out = _threads.run(np.divide, a, b)
    return a / b if out is None else out


def _div_other_grad(grad: Any, a: Any, b: Any) -> Any:
    return -grad * ((a / b) / b)


def _pow(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` for a number ``b``, with PyTorch's special exponents: 2 and 3 as products,
    -1 and -2 as reciprocals of them, 0.5 as sqrt, -0.5 as rsqrt (nan at -inf). That gives its
    results bit for bit, and NumPy's float32 ``power`` with exponent 3 runs a libm pow per
    element (about 50 ns: 150x a product)."""
    if type(b) is float or type(b) is int:
        if b == 2 or b == 3:
            if getattr(a, "dtype", None) is not None and a.dtype.kind in "fcV":
                sq = a * a
                if b == 3:
                    sq *= a  # (the product's own array: in place, no second allocation)
                return sq
        elif b == -0.5 and type(b) is float:
            return _quietly(_truediv, 1, xp.sqrt(a))
        elif getattr(a, "dtype", None) is not None and a.dtype.kind in "fcV":
            if b == 0.5:
                return xp.sqrt(a)
            if b == -1 or b == -2:
                return _quietly(_truediv, 1, a if b == -1 else a * a)
    return a**b


# ---------------------------------------------------------------------------------------------
# helpers


_BOOL_SUB_MSG = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


_INT64 = np.dtype(np.int64)


_BIG = 1 << 63


def zeros_like_bool(b: Any) -> Any:
    """A bool tensor of False shaped like ``b`` (``alpha * b`` for alpha == 0 on bools)."""
    return TensorBase._make(_backend.xp_of(b._data).zeros_like(b._data))


def _as_is(a: Any, b: Any) -> bool:
    """True when no promotion is needed (the hot path): two tensors of one floating dtype, or a
    float32/float64 tensor and a Python number (a float16/bfloat16 one computes in float32: the
    slow path's ``opmath``)."""
    T = TensorBase
    if isinstance(a, T):
        da = a._data.dtype
        if isinstance(b, T):
            return b._data.dtype == da and da.kind == "f"
        return da.char in "fd" and (type(b) is float or type(b) is int)
    return isinstance(b, T) and b._data.dtype.char in "fd" and (type(a) is float or type(a) is int)


def _int64_and_int(a: Any, b: Any) -> bool:
    """An int64 tensor and a Python int in int64's range: add, sub and mul keep int64 without
    promotion (``i + 1`` for an index taken from a tensor, as in nanoGPT's get_batch)."""
    if type(b) is int:
        return isinstance(a, TensorBase) and a._data.dtype == _INT64 and -_BIG <= b < _BIG
    return (type(a) is int and isinstance(b, TensorBase) and b._data.dtype == _INT64
            and -_BIG <= a < _BIG)


def _scaled(a: Any, b: Any, alpha: Any) -> tuple[Any, Any, Any]:
    """``a``, ``b`` and the scale for add/sub, in the dtype ``a`` and ``b`` promote to (as
    PyTorch: a float64 0-d tensor plus ``alpha *`` a bool tensor stays float64). The scale is
    None when ``b`` is already scaled (a number, bools, alpha 1); otherwise the caller's op
    multiplies ``b`` by it inside one node, as PyTorch's AddBackward0 (nothing saved)."""
    a, b = _promote(a, b)
    t = a if isinstance(a, TensorBase) else b
    kind = t._data.dtype.kind  # (an int tensor with a float number was cast to float)
    if isinstance(alpha, complex) and kind != "c":
        raise RuntimeError(f"For non-complex input tensors, argument alpha must not be a complex "
                           f"number (got alpha={alpha} with {t.dtype} operands)")
    if isinstance(alpha, float) and kind in "iub":
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number "
            f"(got alpha={alpha} with {t.dtype} operands); pass an integer alpha or convert "
            "the operands to a floating dtype"
        )
    if alpha == 1 and type(alpha) is not bool:
        return a, b, None
    half = _half_of(a, b)
    if half is not None:  # PyTorch rounds alpha to the half type, then computes in float32
        alpha = float(np.asarray(alpha).astype(half))
    if kind == "b":  # bool arithmetic: alpha * b is b, or False when alpha is 0
        if not isinstance(b, TensorBase):
            return a, bool(b) and bool(alpha), None
        return a, b if alpha else zeros_like_bool(b), None
    if not isinstance(b, TensorBase):
        return (*_promote(a, b * alpha), None)
    return a, b, alpha


def _number_tensor(x: Any) -> Any:
    """A Python number as a 0-d tensor (int64, bool or the default float dtype), so that
    ``torch.add(2, 3)`` gives ``tensor(5)`` as PyTorch's add/sub/mul/div do; anything else is
    returned as is (and refused by the promotion that follows)."""
    if isinstance(x, np.generic):  # NumPy scalars act as Python numbers, as in PyTorch
        x = x.item()
    if isinstance(x, (bool, int, float)):
        return tensor(x)
    return x


def _is_bool_arg(x: Any) -> bool:
    return x._data.dtype == np.bool_ if isinstance(x, TensorBase) else isinstance(x, (bool, np.bool_))


def _rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``other - alpha * input`` (``torch.rsub``), with sub's checks and promotion."""
    if _is_bool_arg(input) or _is_bool_arg(other):
        raise RuntimeError(_BOOL_SUB_MSG)
    o, i, scale = _scaled(other, input, alpha)
    if scale is not None:
        op = ScaledRsubT if isinstance(o, TensorBase) else ScaledRsub
        return _om(op, o, i).apply(o, i, scale)
    return (RsubT if isinstance(o, TensorBase) else Rsub).apply(o, i)


def _safe_divisor(b: Any) -> bool:
    """True when dividing by ``b`` cannot raise a NumPy floating-point warning (a Python number
    of magnitude >= 1): the hot ``x / 2`` path skips ``_quietly``."""
    return (type(b) is float or type(b) is int) and (b >= 1 or b <= -1)


def _is_int_arg(x: Any) -> bool:
    """An integer (or bool) tensor, or a Python/NumPy integer: its division is exact."""
    if isinstance(x, TensorBase):
        return x._data.dtype.kind in "iub"
    return isinstance(x, (int, np.integer))


def _is_float_arg(a: Any, b: Any) -> bool:
    """Whether promoted operands are floating (or complex): a result autograd may record."""
    t = a if isinstance(a, TensorBase) else b
    return t._data.dtype.kind in "fcV"


def _check_int_divisor(a: Any, b: Any, name: str) -> None:
    """Integer division and remainder by zero raise, as in PyTorch (a ``RuntimeError`` whose
    message is ``ZeroDivisionError``); NumPy would give 0 with a warning."""
    if not (_is_int_arg(a) and _is_int_arg(b)):
        return
    # (after promotion)
    if any(isinstance(t, TensorBase) and t._data.dtype == np.bool_ for t in (a, b)):
        raise NotImplementedError(
            f"integer {name} is not implemented for 'Bool' tensors (as in PyTorch); convert "
            "first, e.g. x.long()"
        )
    if any(isinstance(t, TensorBase) and t._data.size == 0 for t in (a, b)):
        return  # an empty result divides nothing
    zero = bool((b._data == 0).any()) if isinstance(b, TensorBase) else b == 0
    if zero:
        raise RuntimeError(
            f"ZeroDivisionError: integer {name} by zero (the divisor"
            f"{' tensor' if isinstance(b, TensorBase) else ''} holds 0). Integer tensors have no "
            "inf/nan: check the divisor first, or divide as floats (x.float()) to get inf/nan"
        )


def _trunc_int_div(x: Any, y: Any) -> Any:
    q = _quietly(np.floor_divide, x, y)  # (INT_MIN // -1 wraps, as in PyTorch)
    return q + ((q < 0) & (_quietly(np.remainder, x, y) != 0))


def _floor_div(x: Any, y: Any) -> Any:
    return _quietly(_floordiv, x, y)


def _floordiv(x: Any, y: Any) -> Any:
    return x // y


def _bool_pow(a: Any, b: Any) -> Any:
    return a.copy() if b else _backend.xp_of(a).ones_like(a)


def _int_pow_neg(a: Any, b: Any) -> Any:
    """``a ** b`` for integers with some negative exponents: 1 ** e = 1, (-1) ** e = +-1,
    anything else to a negative power truncates to 0."""
    xp = _backend.xp_of(b)
    dt = b.dtype if not hasattr(a, "dtype") else np.result_type(a, b)
    a = xp.asarray(a, dtype=dt)
    b = b.astype(dt, copy=False)
    pos = a ** xp.maximum(b, 0)
    neg = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b % 2), 0)) if a.dtype.kind == "i" \
        else xp.where(a == 1, 1, 0)
    return xp.where(b < 0, neg, pos).astype(dt, copy=False)
