"""Piecewise pointwise ops: abs, square, relu, sign, rounding (floor, ceil, trunc, round),
clamping, selection (where, nan_to_num, copysign, heaviside) and the logical and bitwise ops.

Neighbours: arithmetic in ``ops/pointwise.py``, math functions in ``ops/pointwise_math.py``,
comparisons, maximum/minimum and isnan/isinf in ``ops/comparison.py``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd.function import Op
from ._promote import _nograd, _promote
from .casting import as_tensor_arg, cast
from .creation import tensor

__all__ = [
    "abs", "absolute", "square", "relu", "floor", "ceil", "trunc", "fix", "round", "sign",
    "sgn", "signbit", "clamp", "clip", "clamp_min", "clamp_max", "where", "nan_to_num",
    "copysign", "heaviside", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
]

# host float dtypes by size -> the integer type whose bits ``_keep_where`` masks
_BIT_WORDS = {2: np.int16, 4: np.int32, 8: np.int64}


def abs(input: Any) -> Any:
    """``|input|``, elementwise."""
    if input._data.dtype == np.bool_:
        return input.clone()
    return Abs.apply(input)


absolute = abs


def square(input: Any) -> Any:
    """``input ** 2``, elementwise (bool inputs give int64)."""
    if input._data.dtype == np.bool_:
        input = cast(input, _dtype.int64)
    return Square.apply(input)


def relu(input: Any) -> Any:
    """``max(input, 0)``, elementwise (bool tensors raise)."""
    if input._data.dtype == np.bool_:
        raise RuntimeError("relu is not implemented for bool tensors")
    return Relu.apply(input)


def floor(input: Any) -> Any:
    """The largest integer <= each element (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        return input.clone()
    return _piecewise(input, _backend.xp_of(input._data).floor, Floor)


def ceil(input: Any) -> Any:
    """The smallest integer >= each element (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        return input.clone()
    return _piecewise(input, _backend.xp_of(input._data).ceil, Ceil)


def trunc(input: Any) -> Any:
    """Each element rounded toward zero (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        return input.clone()
    return _piecewise(input, _backend.xp_of(input._data).trunc, Trunc)


fix = trunc


def round(input: Any, *, decimals: int = 0) -> Any:
    """Round half to even, as PyTorch does."""
    xp = _backend.xp_of(input._data)
    if input._data.dtype.kind in "iub":
        return input.clone()
    return _piecewise(input, lambda a: xp.round(a, decimals), Round)


def sign(input: Any) -> Any:
    """The sign of each element: -1, 0 or 1 (0 at NaN)."""
    if input._data.dtype == np.bool_:
        return input.clone()
    return _piecewise(input, _sign0_of, Sign)


def sgn(input: Any) -> Any:
    """The sign of each element (-1, 0 or 1; 0 at NaN); PyTorch's name for complex inputs too."""
    if input._data.dtype == np.bool_:
        return input.clone()
    return _piecewise(input, _sign0_of, Sgn)


def signbit(input: Any) -> Any:
    """True where the sign bit is set (-0.0 included), elementwise."""
    return _nograd(np.signbit, input)


def clamp(input: Any, min: Any = None, max: Any = None) -> Any:
    """Clamp into [min, max] (numbers or tensors); both None is an error, as in PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, (Clamp, ClampScalar))


clip = clamp


def clamp_min(input: Any, min: Any) -> Any:
    """``max(input, min)`` elementwise."""
    return _clamp(input, min, None, (ClampMinT, ClampMin))


def clamp_max(input: Any, max: Any) -> Any:
    """``min(input, max)`` elementwise."""
    return _clamp(input, None, max, (ClampMaxT, ClampMax))


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other``; ``where(condition)`` is ``nonzero``."""
    if input is None and other is None:
        from . import indexing  # (a cycle: indexing builds on the pointwise rooms)

        return indexing.nonzero(condition, as_tuple=True)
    condition = as_tensor_arg(condition)
    if condition._data.dtype != np.bool_:
        if condition._data.dtype == np.uint8:
            condition = cast(condition, _dtype.bool_)
        else:
            raise RuntimeError(
                f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                f"{condition.dtype}; compare first, e.g. where(x > 0, a, b)"
            )
    input, other = as_tensor_arg(input), as_tensor_arg(other)
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        input = tensor(input, dtype=_dtype.result_type(input, other), device=condition.device)
    a, b = _promote(input, other)
    if not isinstance(a, TensorBase) and b._data.dtype.kind == "V":
        a = b._data.dtype.type(a)  # (NumPy would widen a bfloat16 tensor to meet a number first)
    elif not isinstance(b, TensorBase) and a._data.dtype.kind == "V":
        b = a._data.dtype.type(b)
    return Where.apply(condition, a, b)


def nan_to_num(
    input: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Any:
    """Replace NaN and infinities (default: the dtype's largest finite values)."""
    if input._data.dtype.kind != "f":
        return input.clone()
    fin = np.finfo(input._data.dtype)
    hi = fin.max if posinf is None else posinf
    lo = fin.min if neginf is None else neginf
    return NanToNum.apply(input, nan, hi, lo)


def copysign(input: Any, other: Any) -> Any:
    """``|input|`` with the sign of ``other`` (the sign bit: -0.0 counts as negative)."""
    input, other = _promote(input, other, to_float=True)
    if not isinstance(input, TensorBase):
        input = as_tensor_arg(float(input))
        input = TensorBase._make(np.asarray(input, dtype=other._data.dtype))
    return (Copysign if isinstance(other, TensorBase) else CopysignScalar).apply(input, other)


def heaviside(input: Any, values: Any) -> Any:
    """The Heaviside step: 0 below 0, 1 above, ``values`` at 0."""
    input, values = _promote(input, values)
    return _nograd(np.heaviside, input, values)


def logical_and(input: Any, other: Any) -> Any:
    """Elementwise logical AND of the truth values (a bool tensor)."""
    return _nograd(np.logical_and, as_tensor_arg(input), as_tensor_arg(other))


def logical_or(input: Any, other: Any) -> Any:
    """Elementwise logical OR of the truth values (a bool tensor)."""
    return _nograd(np.logical_or, as_tensor_arg(input), as_tensor_arg(other))


def logical_xor(input: Any, other: Any) -> Any:
    """Elementwise logical XOR of the truth values (a bool tensor)."""
    return _nograd(np.logical_xor, as_tensor_arg(input), as_tensor_arg(other))


def logical_not(input: Any) -> Any:
    """Elementwise logical NOT of the truth values (a bool tensor)."""
    return _nograd(np.logical_not, input)


def bitwise_and(input: Any, other: Any) -> Any:
    """Bitwise AND of integer or bool tensors."""
    return _bitwise("bitwise_and", operator.and_, input, other)


def bitwise_or(input: Any, other: Any) -> Any:
    """Bitwise OR of integer or bool tensors."""
    return _bitwise("bitwise_or", operator.or_, input, other)


def bitwise_xor(input: Any, other: Any) -> Any:
    """Bitwise XOR of integer or bool tensors."""
    return _bitwise("bitwise_xor", operator.xor, input, other)


def bitwise_not(input: Any) -> Any:
    """Bitwise NOT of an integer or bool tensor (``~input``)."""
    if input._data.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is only supported for integer and bool tensors, got {input.dtype}"
        )
    return _nograd(operator.invert, input)


# ---------------------------------------------------------------------------------------------
# op classes


class Relu(Op):
    """out = max(x, 0)          grad_x = grad * (out > 0)   (relu'(0) = 0)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.maximum(0, x)  # (0 first: a tie returns x, so -0.0 stays -0.0, as PyTorch)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        if type(grad) is np.ndarray and type(out) is np.ndarray:
            return _keep_where(grad, np.greater(out, 0))
        return ctx.xp.where(out > 0, grad, 0)  # a mask, not a product: inf * 0 would be nan


class Abs(Op):
    """out = |x|          grad_x = grad * sign(x)   (abs'(0) = 0)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * _sign0(ctx.xp, x)


class Square(Op):
    """out = x**2          grad_x = 2 grad x   (PyTorch lowers square to pow: PowBackward0)"""

    node_name = "PowBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * 2 * x


class ZeroGrad(Op):
    """Piecewise-constant functions (floor, ceil, round, trunc, sign): grad_x = 0."""

    @staticmethod
    def forward(ctx: Any, x: Any, fn: Any) -> Any:
        return fn(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad * 0, None


class Floor(ZeroGrad):
    """floor (same rule as ZeroGrad)."""


class Ceil(ZeroGrad):
    """ceil (same rule as ZeroGrad)."""


class Round(ZeroGrad):
    """round (same rule as ZeroGrad)."""


class Trunc(ZeroGrad):
    """trunc (same rule as ZeroGrad)."""


class Sign(ZeroGrad):
    """sign (same rule as ZeroGrad)."""


class Sgn(ZeroGrad):
    """sgn (same rule as ZeroGrad)."""


class Clamp(Op):
    """out = min(max(x, lo), hi)          grad_x = grad where lo <= x <= hi, else 0
    (tensor bounds get the gradient where they are the ones selected)"""

    @staticmethod
    def forward(ctx: Any, x: Any, lo: Any, hi: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x, lo, hi)
        out = x
        if lo is not None:  # (bound first: a tie returns x's value, -0.0 kept, as PyTorch)
            out = xp.maximum(lo, out)
        if hi is not None:
            out = xp.minimum(hi, out)
        return out if out is not x else x.copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        x, lo, hi = ctx.saved
        inside = None
        glo = ghi = None
        if lo is not None:
            inside = x >= lo
            if ctx.needs_input_grad[1]:
                glo = grad * ((x < lo) if hi is None else ((x < lo) & (lo <= hi)))
        if hi is not None:
            below = x <= hi
            inside = below if inside is None else inside & below
            if ctx.needs_input_grad[2]:
                ghi = grad * ((x > hi) if lo is None else ((x > hi) | (lo > hi)))
        return ctx.xp.where(inside, grad, 0), glo, ghi  # a mask: inf * 0 would be nan


class ClampScalar(Clamp):
    """clamp with number bounds (same rule as Clamp)."""

    node_name = "ClampBackward1"


class ClampMin(Clamp):
    """clamp_min with a number (same rule as Clamp)."""


class ClampMax(Clamp):
    """clamp_max with a number (same rule as Clamp)."""


class ClampMinT(Clamp):
    """clamp_min with a tensor (same rule as Clamp)."""

    node_name = "ClampMinBackward1"


class ClampMaxT(Clamp):
    """clamp_max with a tensor (same rule as Clamp)."""

    node_name = "ClampMaxBackward1"


class Where(Op):
    """out = cond ? a : b          grad_a = grad where cond          grad_b = grad where not cond"""

    @staticmethod
    def forward(ctx: Any, cond: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(cond)
        return ctx.xp.where(cond, a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (cond,) = ctx.saved
        xp = ctx.xp
        return None, xp.where(cond, grad, 0), xp.where(cond, 0, grad)


class NanToNum(Op):
    """out = x with NaN, +inf, -inf replaced          grad_x = grad where x is finite, else 0"""

    @staticmethod
    def forward(ctx: Any, x: Any, nan: Any, hi: Any, lo: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.nan_to_num(x, nan=nan, posinf=hi, neginf=lo)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        return xp.where((x - x) == 0, grad, 0.0), None, None, None  # (x - x == 0: finite)


class Copysign(Op):
    """out = |a| with the sign of b          grad_a = grad * sign(a) * sign(b) (0 where a == 0)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = ctx.xp.copysign(a, b)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, out = ctx.saved
        xp = ctx.xp
        ratio = xp.where(a == 0, 0.0, xp.sign(a) * xp.sign(out))
        return grad * ratio, None if not ctx.needs_input_grad[1] else grad * 0


class CopysignScalar(Copysign):
    """copysign with a number ``b`` (same rule as Copysign)."""

    node_name = "CopysignBackward1"


# ---------------------------------------------------------------------------------------------
# helpers


def _keep_where(grad: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``where(mask, grad, 0)`` for host arrays, as one bitwise AND of grad's bits with a mask of
    all-ones or zero words (several times faster than ``np.where`` on a mask without long runs,
    whose branches mispredict; exact for inf and nan, unlike ``grad * mask``)."""
    word = _BIT_WORDS.get(grad.dtype.itemsize)
    if word is None or grad.dtype.kind not in "fV" or grad.shape != mask.shape:
        return np.where(mask, grad, 0).astype(grad.dtype, copy=False)
    ones = np.negative(mask.view(np.int8))  # True -> -1: every bit set once widened
    return np.bitwise_and(grad.view(word), ones).view(grad.dtype)


def _sign0(xp: Any, x: Any) -> Any:
    """``sign(x)`` with 0 at NaN, as PyTorch's sign (NumPy gives NaN)."""
    return xp.where(x == x, xp.sign(x), 0)


def _sign0_of(a: Any) -> Any:
    return _sign0(_backend.xp_of(a), a)


def _piecewise(x: Any, fn: Any, op: Any = ZeroGrad) -> Any:
    if x._rg:
        return op.apply(x, fn)
    return TensorBase._make(fn(x._data))


def _clamp(x: Any, lo: Any, hi: Any, ops: tuple) -> Any:
    """Clamp with ``ops[0]`` (tensor bounds) or ``ops[1]`` (number bounds) as the node."""
    if isinstance(lo, TensorBase) or isinstance(hi, TensorBase):
        if lo is not None:
            x, lo = _promote(x, lo)
        if hi is not None:
            x, hi = _promote(x, hi)
        return ops[0].apply(x, lo, hi)
    if x._data.dtype.kind in "iub" and (isinstance(lo, float) or isinstance(hi, float)):
        x = cast(x, _dtype.get_default_dtype())
    return ops[1].apply(x, lo, hi)


def _bitwise(name: str, fn: Any, a: Any, b: Any) -> Any:
    """``fn(a, b)`` on promoted integer or bool operands (floating ones raise), no gradient."""
    a, b = _promote(a, b)
    for t in (a, b):
        if isinstance(t, TensorBase) and t._data.dtype.kind == "f":
            raise NotImplementedError(  # (PyTorch's class: "not implemented for 'Float'")
                f"{name} is only supported for integer and bool tensors, got {t.dtype}; for "
                "masks, compare first: (x > 0) & (y < 1)"
            )
    return _nograd(fn, a, b)
