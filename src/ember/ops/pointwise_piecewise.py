"""Piecewise pointwise ops: abs, square, relu, sign, rounding (floor, ceil, trunc, round),
clamping, selection (where, nan_to_num, copysign, heaviside) and the logical and bitwise ops.

Neighbours: arithmetic in ``ops/pointwise.py``, math functions in ``ops/pointwise_math.py``,
comparisons, maximum/minimum and isnan/isinf in ``ops/comparison.py``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _backend, _dtype, _threads
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd import grad_mode as _grad_mode
from ..autograd.function import Op
from . import _out
from . import pointwise_complex as _pc
from ._promote import (
    _nograd,
    _pr,
    _promote,
    _quietly,
    _refuse_complex,
    _truediv,
    _unordered,
    conjugated,
)
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


def abs(input: Any, *, out: Any = None) -> Any:
    """``|input|``, elementwise (the modulus of complex values, a real tensor)."""
    if input._data.dtype == np.bool_:
        res = input.clone()
    elif input._data.dtype.kind == "c":
        res = _pc.abs_complex(input)
    else:
        res = Abs.apply(input)
    return res if out is None else _out.write(out, res, "abs")


def square(input: Any, *, out: Any = None) -> Any:
    """``input ** 2``, elementwise (bool inputs give int64)."""
    if input._data.dtype == np.bool_:
        input = cast(input, _dtype.int64)
    res = (conjugated(Square) if input._data.dtype.kind == "c" else Square).apply(input)
    return res if out is None else _out.write(out, res, "square")


def relu(input: Any) -> Any:
    """``max(input, 0)``, elementwise (bool tensors raise)."""
    k = input._data.dtype.kind
    if k == "b" or k == "c":
        if k == "c":
            raise _unordered(input, "clamp is not supported for complex types")
        raise RuntimeError("relu is not implemented for bool tensors")
    return Relu.apply(input)


def floor(input: Any, *, out: Any = None) -> Any:
    """The largest integer <= each element (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        res = input.clone()
    elif input._data.dtype.kind == "c":
        raise _unordered(input, "floor is not supported for complex inputs")
    else:
        res = _piecewise(input, _backend.xp_of(input._data).floor, Floor)
    return res if out is None else _out.write(out, res, "floor")


def ceil(input: Any, *, out: Any = None) -> Any:
    """The smallest integer >= each element (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        res = input.clone()
    elif input._data.dtype.kind == "c":
        raise _unordered(input, "ceil is not supported for complex inputs")
    else:
        res = _piecewise(input, _backend.xp_of(input._data).ceil, Ceil)
    return res if out is None else _out.write(out, res, "ceil")


def trunc(input: Any, *, out: Any = None) -> Any:
    """Each element rounded toward zero (integer tensors are returned as a copy)."""
    if input._data.dtype.kind in "iub":
        res = input.clone()
    elif input._data.dtype.kind == "c":
        raise _unordered(input, "trunc is not supported for complex inputs")
    else:
        res = _piecewise(input, _backend.xp_of(input._data).trunc, Trunc)
    return res if out is None else _out.write(out, res, "trunc")


def round(input: Any, *, decimals: int = 0, out: Any = None) -> Any:
    """Round half to even, as PyTorch does."""
    xp = _backend.xp_of(input._data)
    if input._data.dtype.kind in "iub":
        if decimals != 0:
            raise NotImplementedError(
                f"round(decimals={decimals}) is not implemented for {input.dtype} tensors (as in "
                "PyTorch); convert to a floating dtype first, e.g. x.float().round(decimals=...)")
        res = input.clone()
    elif input._data.dtype.kind == "c":
        raise _unordered(input, f"\"{'round_vml_cpu' if decimals == 0 else 'round_cpu'}\" not "
                        "implemented for '{dt}'")
    else:
        res = _piecewise(input, lambda a: xp.round(a, decimals), Round)
    return res if out is None else _out.write(out, res, "round")


def sign(input: Any, *, out: Any = None) -> Any:
    """The sign of each element: -1, 0 or 1 (0 at NaN); complex tensors: ``sgn``."""
    if input._data.dtype == np.bool_:
        res = input.clone()
    elif input._data.dtype.kind == "c":
        raise NotImplementedError(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
            "torch.sgn instead.")
    else:
        res = _piecewise(input, _sign0_of, Sign)
    return res if out is None else _out.write(out, res, "sign")


def sgn(input: Any, *, out: Any = None) -> Any:
    """The sign of each element (-1, 0 or 1; 0 at NaN); ``z / |z|`` (0 at 0) for complex ones."""
    if input._data.dtype == np.bool_:
        res = input.clone()
    elif input._data.dtype.kind == "c":
        res = _pc.sgn_complex(input)
    else:
        res = _piecewise(input, _sign0_of, Sgn)
    return res if out is None else _out.write(out, res, "sgn")


def signbit(input: Any, *, out: Any = None) -> Any:
    """True where the sign bit is set (-0.0 included), elementwise."""
    _refuse_complex("signbit", input)
    res = _nograd(np.signbit, input)
    return res if out is None else _out.write(out, res, "signbit")


def clamp(input: Any, min: Any = None, max: Any = None, *, out: Any = None) -> Any:
    """Clamp into [min, max] (numbers or tensors); both None is an error, as in PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    res = _clamp(input, min, max, (Clamp, ClampScalar))
    return res if out is None else _out.write(out, res, "clamp")


def clamp_min(input: Any, min: Any, *, out: Any = None) -> Any:
    """``max(input, min)`` elementwise."""
    res = _clamp(input, min, None, (ClampMinT, ClampMin))
    return res if out is None else _out.write(out, res, "clamp_min")


def clamp_max(input: Any, max: Any, *, out: Any = None) -> Any:
    """``min(input, max)`` elementwise."""
    res = _clamp(input, None, max, (ClampMaxT, ClampMax))
    return res if out is None else _out.write(out, res, "clamp_max")


def where(condition: Any, input: Any = None, other: Any = None, *, out: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other``; ``where(condition)`` is ``nonzero``."""
    if input is None and other is None:
        from . import indexing  # (a cycle: indexing builds on the pointwise rooms)

        res = indexing.nonzero(condition, as_tuple=True)
        return res if out is None else _out.write(out, res, "where")
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
    res = Where.apply(condition, a, b)
    return res if out is None else _out.write(out, res, "where")


def nan_to_num(
    input: Any, nan: float | None = None, posinf: float | None = None,
    neginf: float | None = None, *, out: Any = None
) -> Any:
    """Replace NaN and infinities (default: the dtype's largest finite values); complex values
    part by part."""
    if input._data.dtype.kind == "c":
        if input.requires_grad and _grad_mode.state.enabled:  # (PyTorch records none)
            raise RuntimeError("nan_to_num does not support automatic differentiation for "
                               "outputs with complex dtype. (Apply it under torch.no_grad(), or "
                               "to x.real and x.imag.)")
        res = _nograd(lambda a: np.nan_to_num(a, nan=0.0 if nan is None else nan,
                                              posinf=posinf, neginf=neginf), input)
        return res if out is None else _out.write(out, res, "nan_to_num")
    if input._data.dtype.kind != "f":
        res = input.clone()
        return res if out is None else _out.write(out, res, "nan_to_num")
    fin = np.finfo(input._data.dtype)
    hi = fin.max if posinf is None else posinf
    lo = fin.min if neginf is None else neginf
    res = NanToNum.apply(input, 0.0 if nan is None else nan, hi, lo)
    return res if out is None else _out.write(out, res, "nan_to_num")


def copysign(input: Any, other: Any, *, out: Any = None) -> Any:
    """``|input|`` with the sign of ``other`` (the sign bit: -0.0 counts as negative)."""
    input, other = _promote(input, other, to_float=True)
    _refuse_complex("copysign", input, other)
    if not isinstance(input, TensorBase):
        input = as_tensor_arg(float(input))
        input = TensorBase._make(np.asarray(input, dtype=other._data.dtype))
    op = Copysign if isinstance(other, TensorBase) else CopysignScalar
    res = _pr(op, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "copysign")


def heaviside(input: Any, values: Any, *, out: Any = None) -> Any:
    """The Heaviside step: 0 below 0, 1 above, ``values`` at 0."""
    input, values = _promote(input, values)
    for a in (input, values):
        if isinstance(a, TensorBase) and a._data.dtype.kind == "c":
            raise RuntimeError(f"heaviside is not yet implemented for complex tensors (got "
                               f"{a.dtype}), as in PyTorch")
    if any(isinstance(a, TensorBase) and a._rg for a in (input, values)):
        res = Heaviside.apply(input, values)  # recorded; its backward raises, as PyTorch's
    else:
        res = _nograd(np.heaviside, input, values)
    return res if out is None else _out.write(out, res, "heaviside")


def logical_and(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise logical AND of the truth values (a bool tensor)."""
    res = _nograd(np.logical_and, as_tensor_arg(input), as_tensor_arg(other))
    return res if out is None else _out.write(out, res, "logical_and")


def logical_or(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise logical OR of the truth values (a bool tensor)."""
    res = _nograd(np.logical_or, as_tensor_arg(input), as_tensor_arg(other))
    return res if out is None else _out.write(out, res, "logical_or")


def logical_xor(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise logical XOR of the truth values (a bool tensor)."""
    res = _nograd(np.logical_xor, as_tensor_arg(input), as_tensor_arg(other))
    return res if out is None else _out.write(out, res, "logical_xor")


def logical_not(input: Any, *, out: Any = None) -> Any:
    """Elementwise logical NOT of the truth values (a bool tensor)."""
    res = _nograd(np.logical_not, input)
    return res if out is None else _out.write(out, res, "logical_not")


def bitwise_and(input: Any, other: Any, *, out: Any = None) -> Any:
    """Bitwise AND of integer or bool tensors."""
    res = _bitwise("bitwise_and", operator.and_, input, other)
    return res if out is None else _out.write(out, res, "bitwise_and")


def bitwise_or(input: Any, other: Any, *, out: Any = None) -> Any:
    """Bitwise OR of integer or bool tensors."""
    res = _bitwise("bitwise_or", operator.or_, input, other)
    return res if out is None else _out.write(out, res, "bitwise_or")


def bitwise_xor(input: Any, other: Any, *, out: Any = None) -> Any:
    """Bitwise XOR of integer or bool tensors."""
    res = _bitwise("bitwise_xor", operator.xor, input, other)
    return res if out is None else _out.write(out, res, "bitwise_xor")


def bitwise_not(input: Any, *, out: Any = None) -> Any:
    """Bitwise NOT of an integer or bool tensor (``~input``)."""
    if input._data.dtype.kind in "fc":  # TypeError, as PyTorch's ~ (this function is ~ too)
        raise TypeError(
            f"~ (bitwise_not) is only supported for integer and bool tensors, got {input.dtype}"
        )
    res = _nograd(operator.invert, input)
    return res if out is None else _out.write(out, res, "bitwise_not")


absolute = abs


fix = trunc


clip = clamp


# ---------------------------------------------------------------------------------------------
# op classes


class Relu(Op):
    """out = max(x, 0)          grad_x = grad where not (out <= 0), else 0   (relu'(0) = 0; a NaN
    output passes the gradient, as PyTorch's threshold_backward)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        if type(x) is not np.ndarray:
            out = ctx.xp.maximum(0, x)
        elif x.dtype.itemsize == 2 and (out := _relu_half(x)) is not None:  # (float16/bfloat16)
            pass
        elif (out := _kernels.clamp(x, 0.0, None)) is not None:  # (float32/64: the same values)
            pass
        elif x.size < _threads.cut_cheap or (
                out := _threads.run(np.maximum, 0, x)) is None:  # (large: split)
            out = np.maximum(0, x)  # (0 first: a tie returns x, so -0.0 stays -0.0, as PyTorch)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        if type(grad) is np.ndarray and type(out) is np.ndarray:
            if grad.dtype.itemsize == 2 and (res := _relu_half_backward(grad, out)) is not None:
                return res
            if (res := _kernels.relu_backward(out, grad)) is not None:  # (one pass)
                return res
            if grad.size > _MASK_BLOCK and grad.shape == out.shape and \
                    grad.flags.c_contiguous and out.flags.c_contiguous:
                return _keep_where_blocks(grad, out)
            return _keep_where(grad, ~np.less_equal(out, 0))  # (a NaN output passes grad)
        return ctx.call(ReluBackward, grad, out)  # (recorded under create_graph)


class ReluBackward(Op):
    """relu's backward, recorded under ``create_graph`` (PyTorch's ThresholdBackwardBackward0):
    out = grad where not (result <= 0), else 0   (a mask, not a product: inf * 0 would be nan)
    grad_grad = the same mask on gg          grad_result = zeros (so the result, and a hook or
    ``retain_grad()`` on it, gets a zero gradient in the double backward, as PyTorch's)"""

    node_name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, grad: Any, result: Any) -> Any:
        ctx.save_for_backward(result)
        return ctx.xp.where(result <= 0, 0, grad)

    @staticmethod
    def backward(ctx: Any, gg: Any) -> Any:
        (result,) = ctx.saved
        return ctx.call(ReluBackward, gg, result), ctx.xp.zeros_like(result)


class Abs(Op):
    """out = |x|          grad_x = grad * sign(x)   (abs'(0) = 0)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        if (out := _kernels.piecewise("sign", x, grad=grad)) is not None:
            return out  # (one pass, the formula's values)
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


class Heaviside(Op):
    """out = 0 below 0, 1 above, values at 0
    backward: raises, as PyTorch's (it has no derivative for heaviside)"""

    node_name = "NotImplemented"  # PyTorch's grad_fn prints as <NotImplemented>

    @staticmethod
    def forward(ctx: Any, x: Any, values: Any) -> Any:
        return ctx.xp.heaviside(x, values)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        raise RuntimeError(
            "derivative for aten::heaviside is not implemented (as in PyTorch: the step has no "
            "gradient). detach() its inputs, or use a smooth step such as torch.sigmoid(k * x)")


class Clamp(Op):
    """out = min(max(x, lo), hi)          grad_x = grad where lo <= x <= hi, else 0
    (tensor bounds get the gradient where they are the ones selected)"""

    @staticmethod
    def forward(ctx: Any, x: Any, lo: Any, hi: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x, lo, hi)
        if (out := _kernels.clamp(x, lo, hi)) is not None:  # (one pass; number bounds)
            return out
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
        if (out := _kernels.select(cond, a, b)) is not None:
            return out  # (one pass, no branch: NumPy's where branches per element)
        if type(a) is np.ndarray and a.size >= _threads.cut and (
                out := _threads.where(cond, a, b)) is not None:
            return out  # (large: split over the threads)
        return ctx.xp.where(cond, a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (cond,) = ctx.saved
        xp = ctx.xp
        if (gs := _kernels.select_grads(cond, grad, ctx.needs_input_grad[1:])) is not None:
            return None, *gs  # (one pass each)
        if type(grad) is np.ndarray and grad.size >= _threads.cut:  # (split over the threads)
            return None, _threads.select(cond, grad, 0), _threads.select(cond, 0, grad)
        return None, xp.where(cond, grad, 0), xp.where(cond, 0, grad)


class NanToNum(Op):
    """out = x with NaN, +inf, -inf replaced          grad_x = grad where x is finite, else 0"""

    @staticmethod
    def forward(ctx: Any, x: Any, nan: Any, hi: Any, lo: Any) -> Any:
        ctx.save_for_backward(x)
        if (out := _kernels.nan_to_num(x, nan, hi, lo)) is not None:  # (one pass, the same bits)
            return out
        return ctx.xp.nan_to_num(x, nan=nan, posinf=hi, neginf=lo)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        xp = ctx.xp
        return xp.where((x - x) == 0, grad, 0.0), None, None, None  # (x - x == 0: finite)


class Copysign(Op):
    """out = |a| with the sign of b          grad_a = grad * out / a (0 where a == 0; PyTorch's
    formula: a write through a.data after the op reaches it, and an infinite a gives nan)"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = ctx.xp.copysign(a, b)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, out = ctx.saved
        xp = ctx.xp
        ratio = xp.where(a == 0, 0.0, _quietly(_truediv, out, a))
        return grad * ratio, None if not ctx.needs_input_grad[1] else grad * 0


class CopysignScalar(Copysign):
    """copysign with a number ``b`` (same rule as Copysign)."""

    node_name = "CopysignBackward1"


# ---------------------------------------------------------------------------------------------
# helpers


_MASK_BLOCK = 1 << 16  # elements per block of ReLU's backward mask


def _keep_where(grad: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``where(mask, grad, 0)`` for host arrays, as one bitwise AND of grad's bits with a mask of
    all-ones or zero words (several times faster than ``np.where`` on a mask without long runs,
    whose branches mispredict; exact for inf and nan, unlike ``grad * mask``)."""
    word = _BIT_WORDS.get(grad.dtype.itemsize)
    if word is None or grad.dtype.kind not in "fV" or grad.shape != mask.shape:
        return np.where(mask, grad, 0).astype(grad.dtype, copy=False)
    ones = np.negative(mask.view(np.int8))  # True -> -1: every bit set once widened
    return np.bitwise_and(grad.view(word), ones).view(grad.dtype)


def _keep_where_blocks(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``_keep_where(grad, out > 0)`` a block at a time: the masks take a block's bytes, not a
    quarter and an eighth of the gradient's (PyTorch's kernel builds none)."""
    res = np.empty_like(grad)
    gf, of, rf = grad.reshape(-1), out.reshape(-1), res.reshape(-1)
    for i in range(0, gf.size, _MASK_BLOCK):
        j = i + _MASK_BLOCK
        rf[i:j] = _keep_where(gf[i:j], ~np.less_equal(of[i:j], 0))
    return res


# -inf's bits (as uint16) by half dtype: the negative numbers run from 0x8001 to it, the negative
# NaNs above it. bfloat16's entry is added on first use (ml_dtypes loads lazily).
_HALF_NEG_INF: dict[Any, int] = {np.dtype(np.float16): 0xFC00}


def _half_neg_inf(dt: np.dtype) -> int | None:
    ninf = _HALF_NEG_INF.get(dt)
    if ninf is None and dt.kind == "V" and dt.name == "bfloat16":
        ninf = _HALF_NEG_INF[dt] = 0xFF80
    return ninf


def _relu_half(x: np.ndarray) -> np.ndarray | None:
    """ReLU of a float16/bfloat16 array through its bits (NumPy's float16 ``maximum`` and
    ml_dtypes' bfloat16 one are scalar loops, 15-20x slower than float32's): the negative numbers
    become +0; -0.0 and the NaNs (either sign) pass unchanged, as ``maximum(0, x)`` and PyTorch's
    relu leave them. None for other dtypes."""
    ninf = _half_neg_inf(x.dtype)
    if ninf is None:
        return None
    u = x.view(np.uint16)
    # u + 0x7FFF (mod 2**16) maps 0x8001..-inf to 0..(-inf - 0x8001): every other value lands above
    t = np.add(u, np.uint16(0x7FFF), out=np.empty_like(u))  # (x's layout, as maximum's result)
    keep = np.greater(t, np.uint16(ninf - 0x8001))
    return np.multiply(u, keep, out=t).view(x.dtype)  # (a product by 0/1: the bits, exactly)


def _relu_half_backward(grad: np.ndarray, out: np.ndarray) -> np.ndarray | None:
    """ReLU's backward for float16/bfloat16: ``grad`` where ``out > 0`` or NaN. ``out`` is ReLU's
    output, so its only values <= 0 are +-0.0: the bits other than the sign are all zero."""
    if out.dtype != grad.dtype or grad.shape != out.shape or _half_neg_inf(grad.dtype) is None:
        return None
    gu, t = grad.view(np.uint16), np.left_shift(out.view(np.uint16), np.uint16(1))
    keep = np.not_equal(t, np.uint16(0))
    if type(t) is np.ndarray and t.strides == gu.strides:  # (the result in grad's layout)
        return np.multiply(gu, keep, out=t).view(grad.dtype)
    return np.multiply(gu, keep).view(grad.dtype)


def _sign0(xp: Any, x: Any) -> Any:
    """``sign(x)`` with 0 at NaN, as PyTorch's sign (NumPy gives NaN)."""
    return xp.where(x == x, xp.sign(x), 0)


def _sign0_of(a: Any) -> Any:
    if (out := _kernels.piecewise("sign", a)) is not None:  # (one pass, the same values)
        return out
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
        if x._data.dtype.kind == "c":
            raise _unordered(x, "clamp is not supported for complex types")
        return _pr(ops[0], x, lo, hi).apply(x, lo, hi)
    if x._data.dtype.kind == "c":
        raise _unordered(x, "clamp is not supported for complex types")
    if x._data.dtype.kind in "iub" and (isinstance(lo, float) or isinstance(hi, float)):
        x = cast(x, _dtype.get_default_dtype())
    return ops[1].apply(x, lo, hi)


def _bitwise(name: str, fn: Any, a: Any, b: Any) -> Any:
    """``fn(a, b)`` on promoted integer or bool operands (floating ones raise), no gradient."""
    a, b = _promote(a, b)
    for t in (a, b):
        if isinstance(t, TensorBase) and t._data.dtype.kind in "fc":
            raise NotImplementedError(  # (PyTorch's class: "not implemented for 'Float'")
                f"{name} is only supported for integer and bool tensors, got {t.dtype}; for "
                "masks, compare first: (x > 0) & (y < 1)"
            )
    return _nograd(fn, a, b)
