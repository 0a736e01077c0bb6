"""Elementwise ops: arithmetic, math functions, comparisons, logic, clamping, casting.

Binary ops promote their operands with PyTorch's ``result_type`` rules before NumPy sees them,
so a float32 tensor never meets a float64 array by accident.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._special import erf as _erf
from .._special import erfc as _erfc
from .._special import erfinv as _erfinv
from .._tensor_base import TensorBase
from ..autograd.function import Op

__all__ = [
    "clone",
    "add",
    "sub",
    "subtract",
    "mul",
    "multiply",
    "div",
    "true_divide",
    "divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "float_power",
    "neg",
    "negative",
    "positive",
    "addcmul",
    "addcdiv",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "arcsin",
    "acos",
    "arccos",
    "atan",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "arcsinh",
    "acosh",
    "arccosh",
    "atanh",
    "arctanh",
    "sigmoid",
    "erf",
    "erfc",
    "erfinv",
    "frac",
    "reciprocal",
    "atan2",
    "arctan2",
    "relu",
    "abs",
    "absolute",
    "square",
    "floor",
    "ceil",
    "trunc",
    "fix",
    "round",
    "sign",
    "sgn",
    "signbit",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "where",
    "lerp",
    "logaddexp",
    "logaddexp2",
    "hypot",
    "xlogy",
    "copysign",
    "heaviside",
    "deg2rad",
    "rad2deg",
    "logit",
    "sinc",
    "lgamma",
    "digamma",
    "mvlgamma",
    "nan_to_num",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "isreal",
    "eq",
    "ne",
    "not_equal",
    "lt",
    "less",
    "le",
    "less_equal",
    "gt",
    "greater",
    "ge",
    "greater_equal",
    "equal",
    "isclose",
    "allclose",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
]



def _is_t(x: Any) -> bool:
    return isinstance(x, TensorBase)


def as_tensor_arg(x: Any) -> Any:
    """Numbers stay numbers; NumPy arrays and lists become tensors."""
    if isinstance(x, TensorBase):
        return x
    if isinstance(x, np.generic):  # NumPy scalars act as Python scalars, as in PyTorch
        return x.item()
    if isinstance(x, int | float | bool):
        return x
    from .creation import tensor

    return tensor(x)


def _int_bounds(dt: Any) -> tuple[int, int, int]:
    info = np.iinfo(dt)
    return int(info.min), int(info.max), info.bits


_INT_BOUNDS = {np.dtype(t): _int_bounds(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)}


def _fit_int(v: int, dt: Any) -> int:
    """A Python int operand of an integer tensor op, wrapped into ``dt``'s range as PyTorch
    does (``uint8_tensor + -3`` adds 253); NumPy would raise OverflowError."""
    bounds = _INT_BOUNDS.get(dt)
    if bounds is None:
        return v
    lo, hi, bits = bounds
    if lo <= v <= hi:
        return v
    v &= (1 << bits) - 1
    return v - (1 << bits) if v > hi else v


def _promote(a: Any, b: Any, to_float: bool = False) -> tuple[Any, Any]:
    """Cast tensor operands to ``result_type(a, b)`` (floating when ``to_float``)."""
    T = TensorBase
    ta, tb = isinstance(a, T), isinstance(b, T)
    if not ta:
        a = as_tensor_arg(a)
        ta = isinstance(a, T)
    if not tb:
        b = as_tensor_arg(b)
        tb = isinstance(b, T)
    if ta and tb:
        if a._data.dtype == b._data.dtype and not (to_float and a._data.dtype.kind not in "fV"):
            return a, b
    elif ta and not tb:
        k = a._data.dtype.kind
        if k == "f" and not to_float:
            return a, b
        if k == "f":
            return a, b
        if k in "iu" and type(b) is int and not to_float:
            return a, _fit_int(b, a._data.dtype)
    elif tb and not ta:
        k = b._data.dtype.kind
        if k == "f":
            return a, b
        if k in "iu" and type(a) is int and not to_float:
            return _fit_int(a, b._data.dtype), b
    rt = _dtype.result_type(a, b)
    if to_float and not rt.is_floating_point:
        rt = _dtype.get_default_dtype()
    if ta and a._data.dtype != rt.np:
        a = _promoted(a, rt)
    if tb and b._data.dtype != rt.np:
        b = _promoted(b, rt)
    if not ta and not tb:
        raise TypeError("expected at least one tensor operand")
    if not ta and rt.is_floating_point is False and isinstance(a, float):
        a = rt.np.type(a)
    if not ta and type(a) is int:
        a = _fit_int(a, rt.np)
    elif not tb and type(b) is int:
        b = _fit_int(b, rt.np)
    return a, b


def _promoted(x: Any, rt: Any) -> Any:
    """``x`` cast for an op's computation. The copy shares x's version counter: an op that saves
    it must fail, as PyTorch's (which saves x itself) does, if x is later changed in place. The
    copy never reaches the user, so nothing changes it in place itself."""
    out = cast(x, rt)
    if out is not x:
        out._version = x._version_counter()
    return out


def _float_unary(x: Any) -> Any:
    """Math functions of integer tensors compute in the default float dtype, as in PyTorch."""
    x = as_tensor_arg(x)
    if x._data.dtype.kind not in "fV":
        return cast(x, _dtype.get_default_dtype())
    return x


# ---------------------------------------------------------------------------------------------
# casting and copies


class Cast(Op):
    """out = x as another dtype          grad_x = grad (cast back by the engine)"""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, np_dtype: Any) -> Any:
        # PyTorch's preserve_format: a dense x keeps its layout, anything else (an expanded or
        # strided slice) becomes C-contiguous; NumPy's astype would keep the strides' order
        if x.flags.c_contiguous or _dense(x):
            return x.astype(np_dtype)
        return x.astype(np_dtype, order="C")

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, None


def cast(x: Any, dt: Any) -> Any:
    dt = _dtype.to_dtype(dt)
    if x._data.dtype == dt.np:
        return x
    if x._rg and not dt.is_floating_point:
        # integer results carry no gradient
        return TensorBase._make(x._data.astype(dt.np))
    return Cast.apply(x, dt.np)


class ToDevice(Op):
    """out = x on another device          grad_x = grad moved back"""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, dev: Any) -> Any:
        ctx.src = _backend.device_of(x)
        return _backend.to_device(x, dev)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(ToDevice, grad, ctx.src), None


def to_device(x: Any, dev: Any) -> Any:
    return ToDevice.apply(x, dev)


def _dense(a: Any) -> bool:
    """True when ``a``'s elements fill its memory span without gaps or overlaps (a permuted,
    flipped or contiguous array; not a strided slice or an expanded one)."""
    expect = a.itemsize
    for st, n in sorted((-st if st < 0 else st, n) for st, n in zip(a.strides, a.shape) if n != 1):
        if st != expect:
            return False
        expect *= n
    return True


def _layout_copy(a: Any) -> Any:
    """A copy of ``a`` with PyTorch's ``preserve_format`` layout: ``a``'s dim order when ``a``
    is dense (a transposed tensor's clone is transposed too), C order otherwise."""
    if a.flags.c_contiguous or not _dense(a):
        return a.copy()
    return a.copy(order="K")


class Clone(Op):
    """out = copy of x (in x's layout when dense, as PyTorch's preserve_format)
    grad_x = grad"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return _layout_copy(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


class CloneContiguous(Clone):
    """clone(memory_format=torch.contiguous_format): a C-order copy (same rule as Clone)."""

    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.copy()


def clone(x: Any, memory_format: Any = None) -> Any:
    """A copy of ``x`` in ``x``'s layout (``preserve_format``, the default) or in C order
    (``memory_format=torch.contiguous_format``)."""
    if memory_format is not None and getattr(memory_format, "_name", "") == "contiguous_format":
        return CloneContiguous.apply(x)
    return Clone.apply(x)


class CopyFrom(Op):
    """out = src broadcast to x's shape and cast to x's dtype          grad_src = grad"""

    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any) -> Any:
        xp = ctx.xp
        if _backend.device_of(src) != _backend.device_of(x):
            src = _backend.to_device(src, _backend.device_of(x))
        return xp.broadcast_to(xp.asarray(src, dtype=x.dtype), x.shape).copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        # x's old values are overwritten: they get a zero gradient (x stays in the graph)
        return (ctx.xp.zeros_like(grad) if ctx.needs_input_grad[0] else None), grad


def copy_from(x: Any, src: Any) -> Any:
    """The value ``x.copy_(src)`` writes (src broadcast to x's shape, in x's dtype).

    ``src`` may live on another device, as in PyTorch: it is moved to x's device first by a
    recorded ``ToDevice`` (so a gradient flows back to src's device), and the copy itself then
    sees two tensors on one device."""
    if not _is_t(src):
        src = as_tensor_arg(src)
        if not _is_t(src):  # a number
            src = TensorBase._make(np.asarray(src, dtype=x._data.dtype))
    dev = _backend.device_of(x._data)
    if _backend.device_of(src._data) != dev:
        src = to_device(src, dev)
    return CopyFrom.apply(x, src)


def fill(x: Any, value: Any) -> Any:
    """The value ``x.fill_(value)`` writes."""
    if _is_t(value):
        if value._data.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        return copy_from(x, value)
    return Fill.apply(x, value)


def zero(x: Any) -> Any:
    """The value ``x.zero_()`` writes."""
    return Zero.apply(x, 0)


class Fill(Op):
    """out = value everywhere (x's shape and dtype)          grad_x = 0"""

    node_name = "FillBackward2"

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any) -> Any:
        return ctx.xp.full(x.shape, value, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.xp.zeros_like(grad), None


class Zero(Fill):
    """out = 0 everywhere (x's shape and dtype)          grad_x = 0"""

    node_name = "ZeroBackward0"


# ---------------------------------------------------------------------------------------------
# arithmetic


class Add(Op):
    """out = a + b          grad_a = grad          grad_b = grad"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, grad


class Sub(Op):
    """out = a - b          grad_a = grad          grad_b = -grad"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        return a - b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, -grad


class Rsub(Sub):
    """``number - tensor``: PyTorch's node for a reversed subtraction (same rule as Sub)."""

    node_name = "RsubBackward1"


class Mul(Op):
    """out = a * b          grad_a = grad * b          grad_b = grad * a"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return (grad * b if ctx.needs_input_grad[0] else None,
                grad * a if ctx.needs_input_grad[1] else None)


# Float division by zero gives inf/nan silently, as in PyTorch (NumPy would warn).
_QUIET = {"divide": "ignore", "invalid": "ignore", "over": "ignore"}
try:  # np.errstate costs microseconds per use; setting NumPy's context variable directly does not
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ

    with np.errstate(**_QUIET):
        _QUIET_EXTOBJ = _EXTOBJ.get()
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
    _EXTOBJ = None


def _quietly(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with NumPy's floating-point warnings off (division by zero, 0/0...)."""
    if _EXTOBJ is None:  # pragma: no cover
        with np.errstate(**_QUIET):
            return fn(*args)
    token = _EXTOBJ.set(_QUIET_EXTOBJ)
    try:
        return fn(*args)
    finally:
        _EXTOBJ.reset(token)


def _truediv(a: Any, b: Any) -> Any:
    return a / b


def _safe_divisor(b: Any) -> bool:
    """True when dividing by ``b`` cannot raise a NumPy floating-point warning (a Python number
    of magnitude >= 1): the hot ``x / 2`` path skips ``_quietly``."""
    return (type(b) is float or type(b) is int) and (b >= 1 or b <= -1)


class Div(Op):
    """out = a / b          grad_a = grad / b          grad_b = -grad * a / b**2"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
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
        ga = _quietly(_truediv, grad, b) if ctx.needs_input_grad[0] else None
        gb = _quietly(_truediv, -grad * a, b * b) if ctx.needs_input_grad[1] else None
        return ga, gb


class RsubT(Sub):
    """``torch.rsub(tensor, tensor)``: other - input (same rule as Sub, operands swapped)."""

    node_name = "RsubBackward0"


def _rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``other - alpha * input`` (``torch.rsub``), with sub's checks and promotion."""
    if _is_bool_arg(input) or _is_bool_arg(other):
        raise RuntimeError(_BOOL_SUB_MSG)
    o, i = _scaled(other, input, alpha)
    return (RsubT if _is_t(o) else Rsub).apply(o, i)


class RDiv(Div):
    """``number / tensor``: PyTorch computes it as ``tensor.reciprocal() * number``, whose node
    is a MulBackward0 (same rule as Div)."""

    node_name = "MulBackward0"


def _is_int_arg(x: Any) -> bool:
    """An integer (or bool) tensor, or a Python/NumPy integer: its division is exact."""
    if _is_t(x):
        return x._data.dtype.kind in "iub"
    return isinstance(x, int | np.integer)


def _check_int_divisor(a: Any, b: Any, name: str) -> None:
    """Integer division and remainder by zero raise, as in PyTorch (a ``RuntimeError`` whose
    message is ``ZeroDivisionError``); NumPy would give 0 with a warning."""
    if not (_is_int_arg(a) and _is_int_arg(b)):
        return
    if any(_is_t(t) and t._data.dtype == np.bool_ for t in (a, b)):  # (after promotion)
        raise NotImplementedError(
            f"integer {name} is not implemented for 'Bool' tensors (as in PyTorch); convert "
            "first, e.g. x.long()"
        )
    if any(_is_t(t) and t._data.size == 0 for t in (a, b)):
        return  # an empty result divides nothing
    zero = bool((b._data == 0).any()) if _is_t(b) else b == 0
    if zero:
        raise RuntimeError(
            f"ZeroDivisionError: integer {name} by zero (the divisor"
            f"{' tensor' if _is_t(b) else ''} holds 0). Integer tensors have no inf/nan: check "
            "the divisor first, or divide as floats (x.float()) to get inf/nan"
        )


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
        if type(b) is float and b == -0.5:  # PyTorch computes it as rsqrt (nan at -inf)
            out = _quietly(_truediv, 1, ctx.xp.sqrt(a))
        else:
            out = a**b
        ctx.save_for_backward(a, b, out if ctx.needs_input_grad[1] else None)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b, out = ctx.saved
        xp = ctx.xp
        ga = gb = None
        if ctx.needs_input_grad[0]:
            if isinstance(b, int | float) and b == 2:
                ga = grad * 2 * a
            elif isinstance(b, int | float) and b == 0:
                ga = grad * 0
            elif type(b) is float and b == 0.5:  # as rsqrt: -inf at -0.0, nan at -inf
                ga = _quietly(_truediv, grad * 0.5, ctx.xp.sqrt(a))
            elif isinstance(b, int | float):
                ga = grad * b * a ** (b - 1)
            else:  # a tensor exponent: 0 where it is 0 (a**-1 may be inf there)
                ga = xp.where(b == 0, 0, grad * b * a ** (b - 1))
        if ctx.needs_input_grad[1]:
            safe = xp.where((a == 0) & (b >= 0), 1, a) if not isinstance(a, int | float) else (a or 1)
            gb = xp.where((a == 0) & (b >= 0), 0, grad * out * xp.log(safe))
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
        return _quietly(ctx.xp.remainder, a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return grad, -grad * ctx.xp.floor(_quietly(_truediv, a, b))


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


def _as_is(a: Any, b: Any) -> bool:
    """True when no promotion is needed (the hot path): two tensors of one floating dtype, or a
    floating tensor and a Python number."""
    T = TensorBase
    if isinstance(a, T):
        da = a._data.dtype
        if isinstance(b, T):
            return b._data.dtype == da and da.kind == "f"
        return da.kind == "f" and (type(b) is float or type(b) is int)
    return isinstance(b, T) and b._data.dtype.kind == "f" and (type(a) is float or type(a) is int)


def _scaled(a: Any, b: Any, alpha: Any) -> tuple[Any, Any]:
    """``a`` and ``alpha * b`` for add/sub, computed in the dtype ``a`` and ``b`` promote to
    (as PyTorch: a float64 0-d tensor plus ``alpha *`` a bool tensor stays float64)."""
    a, b = _promote(a, b)
    t = a if _is_t(a) else b
    kind = t._data.dtype.kind  # (an int tensor with a float number was cast to float)
    if isinstance(alpha, float) and kind in "iub":
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number "
            f"(got alpha={alpha} with {t.dtype} operands); pass an integer alpha or convert "
            "the operands to a floating dtype"
        )
    if alpha == 1 and type(alpha) is not bool:
        return a, b
    if kind == "b":  # bool arithmetic: alpha * b is b, or False when alpha is 0
        if not _is_t(b):
            return a, bool(b) and bool(alpha)
        return a, b if alpha else zeros_like_bool(b)
    if not _is_t(b):
        return _promote(a, b * alpha)
    return a, mul(b, alpha)


def zeros_like_bool(b: Any) -> Any:
    """A bool tensor of False shaped like ``b`` (``alpha * b`` for alpha == 0 on bools)."""
    return TensorBase._make(_backend.xp_of(b._data).zeros_like(b._data))


def add(a: Any, b: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    """``a + alpha * b`` with broadcasting."""
    if alpha == 1 and out is None and _as_is(a, b):
        return Add.apply(a, b)
    a, b = _scaled(a, b, alpha)
    return _out(Add.apply(a, b), out)


_BOOL_SUB_MSG = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


def _is_bool_arg(x: Any) -> bool:
    return x._data.dtype == np.bool_ if _is_t(x) else isinstance(x, bool | np.bool_)


def sub(a: Any, b: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    """``a - alpha * b`` with broadcasting."""
    if alpha == 1 and out is None and _as_is(a, b):
        return (Sub if _is_t(a) else Rsub).apply(a, b)
    if _is_bool_arg(a) or _is_bool_arg(b):
        if _is_t(a) and _is_t(b) and _is_bool_arg(a) and _is_bool_arg(b):
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. "
                "Use the `^` or `logical_xor()` operator instead."
            )
        raise RuntimeError(_BOOL_SUB_MSG)
    a, b = _scaled(a, b, alpha)
    return _out((Sub if _is_t(a) else Rsub).apply(a, b), out)


subtract = sub


def mul(a: Any, b: Any, *, out: Any = None) -> Any:
    """``a * b`` with broadcasting."""
    if out is None and _as_is(a, b):
        return Mul.apply(a, b)
    a, b = _promote(a, b)
    return _out(Mul.apply(a, b), out)


multiply = mul


def div(a: Any, b: Any, *, rounding_mode: str | None = None, out: Any = None) -> Any:
    """True division (integers give floats); ``rounding_mode`` 'trunc' or 'floor'."""
    if rounding_mode is None:
        if out is None and _as_is(a, b):
            return (Div if _is_t(a) else RDiv).apply(a, b)
        a, b = _promote(a, b, to_float=True)
        return _out((Div if _is_t(a) else RDiv).apply(a, b), out)
    if rounding_mode == "floor":
        return floor_divide(a, b)
    if rounding_mode == "trunc":
        a2, b2 = _promote(a, b)
        t = a2 if _is_t(a2) else b2
        if t._data.dtype.kind in "iub":
            _check_int_divisor(a2, b2, "division")
            return _nograd(_trunc_int_div, a2, b2)
        return trunc(div(a, b))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def _trunc_int_div(x: Any, y: Any) -> Any:
    q = _quietly(np.floor_divide, x, y)  # (INT_MIN // -1 wraps, as in PyTorch)
    return q + ((q < 0) & (_quietly(np.remainder, x, y) != 0))


def _floor_div(x: Any, y: Any) -> Any:
    return _quietly(_floordiv, x, y)


def _floordiv(x: Any, y: Any) -> Any:
    return x // y


true_divide = div
divide = div


def floor_divide(a: Any, b: Any) -> Any:
    """``a // b``: integer tensors stay integer; floats round toward -inf (no gradient)."""
    a, b = _promote(a, b)
    _check_int_divisor(a, b, "division")
    return _nograd(_floor_div, a, b)


class RemainderT(Remainder):
    """remainder by a tensor (same rule as Remainder)."""

    node_name = "RemainderBackward1"


class FmodT(Fmod):
    """fmod by a tensor (same rule as Fmod)."""

    node_name = "FmodBackward1"


def remainder(a: Any, b: Any) -> Any:
    """``a % b`` with the sign of ``b`` (Python's rule); integer ``b == 0`` raises."""
    a, b = _promote(a, b)
    _check_int_divisor(a, b, "modulo")
    return (RemainderT if _is_t(a) and _is_t(b) else Remainder).apply(a, b)


def fmod(a: Any, b: Any) -> Any:
    """C's ``fmod``: the remainder with the sign of ``a``; integer ``b == 0`` raises."""
    a, b = _promote(a, b)
    _check_int_divisor(a, b, "modulo")
    return (FmodT if _is_t(a) and _is_t(b) else Fmod).apply(a, b)


def pow(a: Any, b: Any) -> Any:
    """``a ** b``. Integer tensors to a float power give floats, as in PyTorch."""
    neg_exp = isinstance(b, int | np.integer) and not isinstance(b, bool) and b < 0
    a, b = _promote(a, b)  # (which may wrap a negative exponent into an unsigned dtype)
    t = a if _is_t(a) else b
    kind = t._data.dtype.kind
    if kind == "b":
        if _is_t(b) or not _is_t(a):
            raise NotImplementedError(
                "\"pow\" not implemented for 'Bool' (a bool tensor exponent or base); convert "
                "first, e.g. x.long() ** y.long()"
            )
        return _nograd(_bool_pow, a, b)  # bool ** number: the result stays bool, as in PyTorch
    if kind in "iu":
        if _is_t(b):
            if (b._data < 0).any():  # integer semantics: 1, (-1)^e, or 0 (PyTorch's result)
                return _nograd(_int_pow_neg, a, b)
        elif neg_exp:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not _is_t(a):
        return RPow.apply(a, b)
    return (PowTensor if _is_t(b) else Pow).apply(a, b)


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


def float_power(a: Any, b: Any) -> Any:
    a = cast(as_tensor_arg(a), _dtype.float64) if _is_t(as_tensor_arg(a)) else float(a)
    b = cast(as_tensor_arg(b), _dtype.float64) if _is_t(as_tensor_arg(b)) else float(b)
    return pow(a, b)


def neg(x: Any) -> Any:
    if x._data.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return Neg.apply(x)


negative = neg


def positive(x: Any) -> Any:
    return x


class Addcmul(Op):
    """out = x + value * t1 * t2
    grad_x = grad          grad_t1 = grad * value * t2          grad_t2 = grad * value * t1"""

    @staticmethod
    def forward(ctx: Any, x: Any, t1: Any, t2: Any, value: Any) -> Any:
        ctx.save_for_backward(t1, t2, value)
        return x + value * (t1 * t2)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        t1, t2, value = ctx.saved
        n = ctx.needs_input_grad
        return (grad, grad * value * t2 if n[1] else None, grad * value * t1 if n[2] else None,
                None)


class Addcdiv(Op):
    """out = x + value * t1 / t2
    grad_x = grad          grad_t1 = grad * value / t2          grad_t2 = -grad * value * t1 / t2**2"""

    @staticmethod
    def forward(ctx: Any, x: Any, t1: Any, t2: Any, value: Any) -> Any:
        ctx.save_for_backward(t1, t2, value)
        return x + value * _quietly(_truediv, t1, t2)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        t1, t2, value = ctx.saved
        n = ctx.needs_input_grad
        g1 = _quietly(_truediv, grad * value, t2) if n[1] else None
        g2 = _quietly(_truediv, -grad * value * t1, t2 * t2) if n[2] else None
        return grad, g1, g2, None


def _promote3(x: Any, t1: Any, t2: Any) -> tuple[Any, Any, Any]:
    """Cast three tensor operands to their common dtype."""
    x, t1, t2 = as_tensor_arg(x), as_tensor_arg(t1), as_tensor_arg(t2)
    t1, t2 = _promote(t1, t2)
    x, t1 = _promote(x, t1)
    if _is_t(t2) and _is_t(t1) and t2._data.dtype != t1._data.dtype:
        t2 = _promoted(t2, _dtype.from_numpy(t1._data.dtype))
    return x, t1, t2


def addcmul(x: Any, t1: Any, t2: Any, *, value: Any = 1) -> Any:
    """``x + value * t1 * t2``."""
    x, t1, t2 = _promote3(x, t1, t2)
    return Addcmul.apply(x, t1, t2, value)


def addcdiv(x: Any, t1: Any, t2: Any, *, value: Any = 1) -> Any:
    """``x + value * t1 / t2`` (floating tensors only, as in PyTorch)."""
    if _is_int_arg(t1) and _is_int_arg(t2) and _is_t(t1) and _is_t(t2):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. Convert tensor1 or "
            "tensor2 to a floating dtype first (e.g. t1.float())"
        )
    x, t1, t2 = _promote3(x, t1, t2)
    return Addcdiv.apply(x, t1, t2, value)


def _out(result: Any, out: Any) -> Any:
    if out is None:
        return result
    out.copy_(result)
    return out


def _nograd(fn: Any, *args: Any) -> Any:
    """Apply a function with no gradient (integer or piecewise-constant results)."""
    raw = [a._data if _is_t(a) else a for a in args]
    return TensorBase._make(fn(*raw))


# ---------------------------------------------------------------------------------------------
# unary math


class Exp(Op):
    """out = exp(x)          grad_x = grad * out"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = ctx.xp.exp(x)
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
        out = ctx.xp.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
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
        # exp of a negative argument only, so large |x| never overflows
        e = xp.exp(-xp.abs(x))
        out = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (out,) = ctx.saved
        return grad * out * (1 - out)


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


def _sign0(xp: Any, x: Any) -> Any:
    """``sign(x)`` with 0 at NaN, as PyTorch's sign (NumPy gives NaN)."""
    return xp.where(x == x, xp.sign(x), 0)


class Erf(Op):
    """out = erf(x)          grad_x = grad * 2/sqrt(pi) * exp(-x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return _erf(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
        return grad * (2 / math.sqrt(math.pi)) * ctx.xp.exp(-(x * x))


class Erfc(Op):
    """out = 1 - erf(x)          grad_x = -grad * 2/sqrt(pi) * exp(-x**2)"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return _erfc(x)  # not 1 - erf(x): that loses all precision in the tail

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved
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
        return grad * (math.sqrt(math.pi) / 2) * ctx.xp.exp(out * out)


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


class Frac(Op):
    """out = x - trunc(x)          grad_x = grad"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x - ctx.xp.trunc(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


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


def _unary(op: Any) -> Any:
    def fn(x: Any, *, out: Any = None) -> Any:
        return _out(op.apply(_float_unary(x)), out)

    fn.__name__ = op.__name__.lower()
    fn.__doc__ = op.__doc__
    return fn


exp = _unary(Exp)
exp2 = _unary(Exp2)
expm1 = _unary(Expm1)
log = _unary(Log)
log2 = _unary(Log2)
log10 = _unary(Log10)
log1p = _unary(Log1p)
sqrt = _unary(Sqrt)
rsqrt = _unary(Rsqrt)
sin = _unary(Sin)
cos = _unary(Cos)
tan = _unary(Tan)
asin = arcsin = _unary(Asin)
acos = arccos = _unary(Acos)
atan = arctan = _unary(Atan)
sinh = _unary(Sinh)
cosh = _unary(Cosh)
tanh = _unary(Tanh)
asinh = arcsinh = _unary(Asinh)
acosh = arccosh = _unary(Acosh)
atanh = arctanh = _unary(Atanh)
sigmoid = _unary(Sigmoid)
erf = _unary(Erf)
erfc = _unary(Erfc)
erfinv = _unary(Erfinv)
frac = _unary(Frac)


def reciprocal(x: Any) -> Any:
    return Reciprocal.apply(_float_unary(x))


def atan2(a: Any, b: Any) -> Any:
    """``atan(a / b)`` in the right quadrant (both tensors, as in PyTorch)."""
    for name, v in (("input", a), ("other", b)):
        if not _is_t(v) and isinstance(v, int | float | bool):
            raise TypeError(
                f"atan2(): argument '{name}' must be Tensor, not {type(v).__name__}; wrap the "
                "number in a tensor: torch.atan2(y, torch.tensor(x))"
            )
    a, b = _promote(a, b, to_float=True)
    return Atan2.apply(a, b)


arctan2 = atan2


def relu(x: Any) -> Any:
    if x._data.dtype == np.bool_:
        raise RuntimeError("relu is not implemented for bool tensors")
    return Relu.apply(x)


def abs(x: Any) -> Any:
    if x._data.dtype == np.bool_:
        return x.clone()
    return Abs.apply(x)


absolute = abs


def square(x: Any) -> Any:
    if x._data.dtype == np.bool_:
        x = cast(x, _dtype.int64)
    return Square.apply(x)


def _piecewise(x: Any, fn: Any, op: Any = ZeroGrad) -> Any:
    if x._rg:
        return op.apply(x, fn)
    return TensorBase._make(fn(x._data))


def floor(x: Any) -> Any:
    return x.clone() if x._data.dtype.kind in "iub" else _piecewise(x, _backend.xp_of(x._data).floor, Floor)


def ceil(x: Any) -> Any:
    return x.clone() if x._data.dtype.kind in "iub" else _piecewise(x, _backend.xp_of(x._data).ceil, Ceil)


def trunc(x: Any) -> Any:
    return x.clone() if x._data.dtype.kind in "iub" else _piecewise(x, _backend.xp_of(x._data).trunc, Trunc)


fix = trunc


def round(x: Any, *, decimals: int = 0) -> Any:
    """Round half to even, as PyTorch does."""
    xp = _backend.xp_of(x._data)
    if x._data.dtype.kind in "iub":
        return x.clone()
    return _piecewise(x, lambda a: xp.round(a, decimals), Round)


def sign(x: Any) -> Any:
    if x._data.dtype == np.bool_:
        return x.clone()
    return _piecewise(x, _sign0_of, Sign)


class Sgn(ZeroGrad):
    """sgn (same rule as ZeroGrad)."""


def sgn(x: Any) -> Any:
    """The sign of each element (-1, 0 or 1; 0 at NaN); PyTorch's name for complex inputs too."""
    if x._data.dtype == np.bool_:
        return x.clone()
    return _piecewise(x, _sign0_of, Sgn)


def _sign0_of(a: Any) -> Any:
    return _sign0(_backend.xp_of(a), a)


def signbit(x: Any) -> Any:
    return _nograd(np.signbit, x)


# ---------------------------------------------------------------------------------------------
# binary math, clamping, selection


class Maximum(Op):
    """out = max(a, b)    grad_a = grad where a > b (grad/2 at ties)    grad_b likewise"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        share = (a > b) + (a == b) * 0.5
        return grad * share, grad * (1 - share)


class Minimum(Op):
    """out = min(a, b)    grad_a = grad where a < b (grad/2 at ties)    grad_b likewise"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        share = (a < b) + (a == b) * 0.5
        return grad * share, grad * (1 - share)


def maximum(a: Any, b: Any) -> Any:
    if not (_is_t(a) and _is_t(b)):
        raise TypeError("maximum(): argument 'other' must be Tensor (use clamp(min=...) for numbers)")
    a, b = _promote(a, b)
    return Maximum.apply(a, b)


def minimum(a: Any, b: Any) -> Any:
    if not (_is_t(a) and _is_t(b)):
        raise TypeError("minimum(): argument 'other' must be Tensor (use clamp(max=...) for numbers)")
    a, b = _promote(a, b)
    return Minimum.apply(a, b)


def fmax(a: Any, b: Any) -> Any:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    a, b = _promote(a, b)
    if a._data.dtype.kind != "f":
        return maximum(a, b)
    return Fmax.apply(isnan(b) | (a >= b), a, b)


def fmin(a: Any, b: Any) -> Any:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    a, b = _promote(a, b)
    if a._data.dtype.kind != "f":
        return minimum(a, b)
    return Fmin.apply(isnan(b) | (a <= b), a, b)


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


def clamp(x: Any, min: Any = None, max: Any = None) -> Any:
    """Clamp into [min, max] (numbers or tensors); both None is an error, as in PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(x, min, max, (Clamp, ClampScalar))


def _clamp(x: Any, lo: Any, hi: Any, ops: tuple) -> Any:
    """Clamp with ``ops[0]`` (tensor bounds) or ``ops[1]`` (number bounds) as the node."""
    if _is_t(lo) or _is_t(hi):
        if lo is not None:
            x, lo = _promote(x, lo)
        if hi is not None:
            x, hi = _promote(x, hi)
        return ops[0].apply(x, lo, hi)
    if x._data.dtype.kind in "iub" and (isinstance(lo, float) or isinstance(hi, float)):
        x = cast(x, _dtype.get_default_dtype())
    return ops[1].apply(x, lo, hi)


clip = clamp


def clamp_min(x: Any, min: Any) -> Any:
    """``max(x, min)`` elementwise."""
    return _clamp(x, min, None, (ClampMinT, ClampMin))


def clamp_max(x: Any, max: Any) -> Any:
    """``min(x, max)`` elementwise."""
    return _clamp(x, None, max, (ClampMaxT, ClampMax))


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


class Fmax(Where):
    """fmax as a selection by a precomputed mask (same rule as Where)."""


class Fmin(Where):
    """fmin as a selection by a precomputed mask (same rule as Where)."""


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``where(cond, a, b)`` picks from a where cond else b; ``where(cond)`` is ``nonzero``."""
    if input is None and other is None:
        from . import indexing

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
    if not _is_t(input) and not _is_t(other):
        from .creation import tensor

        input = tensor(input, dtype=_dtype.result_type(input, other), device=condition.device)
    a, b = _promote(input, other)
    return Where.apply(condition, a, b)


class Lerp(Op):
    """out = start + w * (end - start)
    grad_start = grad * (1 - w)          grad_end = grad * w          grad_w = grad * (end - start)"""

    @staticmethod
    def forward(ctx: Any, start: Any, end: Any, w: Any) -> Any:
        diff = end - start
        ctx.save_for_backward(diff if ctx.needs_input_grad[2] else None, w)
        return start + w * diff

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        diff, w = ctx.saved
        n = ctx.needs_input_grad
        return (grad * (1 - w) if n[0] else None, grad * w if n[1] else None,
                grad * diff if n[2] else None)


class LerpT(Lerp):
    """lerp with a tensor weight (same rule as Lerp)."""

    node_name = "LerpBackward1"


def lerp(start: Any, end: Any, weight: Any) -> Any:
    """``start + weight * (end - start)``."""
    start, end = _promote(start, end)
    if _is_t(weight):
        start, weight = _promote(start, weight)
        return LerpT.apply(start, end, weight)
    return Lerp.apply(start, end, weight)


class LogAddExp(Op):
    """out = log(exp(a) + exp(b))          grad_a = grad * exp(a - out)          grad_b = grad * exp(b - out)"""

    node_name = "LogaddexpBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = ctx.xp.logaddexp(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b, out = ctx.saved
        xp = ctx.xp
        return grad * xp.exp(a - out), grad * xp.exp(b - out)


def logaddexp(a: Any, b: Any) -> Any:
    a, b = _promote(a, b, to_float=True)
    return LogAddExp.apply(a, b)


class LogAddExp2(Op):
    """out = log2(2**a + 2**b)          grad_a = grad * 2**(a - out)          grad_b = grad * 2**(b - out)"""

    node_name = "Logaddexp2Backward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        out = ctx.xp.logaddexp2(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b, out = ctx.saved
        xp, ln2 = ctx.xp, math.log(2.0)
        return grad * xp.exp((a - out) * ln2), grad * xp.exp((b - out) * ln2)


def logaddexp2(a: Any, b: Any) -> Any:
    """``log2(2**a + 2**b)``, computed stably."""
    a, b = _promote(a, b, to_float=True)
    return LogAddExp2.apply(a, b)


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


def hypot(a: Any, b: Any) -> Any:
    """``sqrt(a**2 + b**2)`` without overflow in the squares."""
    a, b = _promote(a, b, to_float=True)
    return Hypot.apply(a, b)


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


def _log_any(xp: Any, y: Any) -> Any:
    """``log(y)`` quietly; a Python number stays a Python number (no float64 upcast)."""
    if isinstance(y, float):
        return math.log(y) if y > 0 else (-math.inf if y == 0 else math.nan)
    return _quietly(xp.log, y)


class XlogyScalarX(Xlogy):
    """xlogy with a number ``x`` (same rule as Xlogy)."""

    node_name = "XlogyBackward1"


class XlogyScalarY(Xlogy):
    """xlogy with a number ``y`` (same rule as Xlogy)."""

    node_name = "XlogyBackward2"


def xlogy(a: Any, b: Any) -> Any:
    """``a * log(b)``, 0 where ``a == 0`` (unless ``b`` is NaN)."""
    a, b = _promote(a, b, to_float=True)
    if not _is_t(a):
        return XlogyScalarX.apply(float(a), b)
    if not _is_t(b):
        return XlogyScalarY.apply(a, float(b))
    return Xlogy.apply(a, b)


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


def copysign(a: Any, b: Any) -> Any:
    """``|a|`` with the sign of ``b`` (the sign bit: -0.0 counts as negative)."""
    a, b = _promote(a, b, to_float=True)
    if not _is_t(a):
        a = as_tensor_arg(float(a))
        a = TensorBase._make(np.asarray(a, dtype=b._data.dtype))
    return (Copysign if _is_t(b) else CopysignScalar).apply(a, b)


def heaviside(x: Any, values: Any) -> Any:
    x, values = _promote(x, values)
    return _nograd(np.heaviside, x, values)


class Deg2Rad(Mul):
    """x * pi / 180 (same rule as Mul)."""


class Rad2Deg(Mul):
    """x * 180 / pi (same rule as Mul)."""


def deg2rad(x: Any) -> Any:
    """Degrees to radians."""
    return Deg2Rad.apply(_float_unary(x), math.pi / 180)


def rad2deg(x: Any) -> Any:
    """Radians to degrees."""
    return Rad2Deg.apply(_float_unary(x), 180 / math.pi)


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


def _logit_raw(xp: Any, z: Any) -> Any:
    return xp.log(z / (1 - z))


def logit(x: Any, eps: float | None = None) -> Any:
    """``log(x / (1 - x))``, with ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return Logit.apply(_float_unary(x), eps)


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


def sinc(x: Any) -> Any:
    """The normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0)."""
    return Sinc.apply(_float_unary(x))


def lgamma(x: Any) -> Any:
    from .._special import lgamma as _lgamma

    return _nograd(_lgamma, _float_unary(x))


def digamma(x: Any) -> Any:
    from .._special import digamma as _digamma

    return _nograd(_digamma, _float_unary(x))


def mvlgamma(x: Any, p: int) -> Any:
    raise NotImplementedError("ember does not implement torch.mvlgamma yet")


def nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Any:
    """Replace NaN and infinities (default: the dtype's largest finite values)."""
    if x._data.dtype.kind != "f":
        return x.clone()
    fin = np.finfo(x._data.dtype)
    hi = fin.max if posinf is None else posinf
    lo = fin.min if neginf is None else neginf
    return NanToNum.apply(x, nan, hi, lo)


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


# ---------------------------------------------------------------------------------------------
# predicates and comparisons (no gradient)


def isnan(x: Any) -> Any:
    return _nograd(_backend.xp_of(x._data).isnan, x)


def isinf(x: Any) -> Any:
    return _nograd(_backend.xp_of(x._data).isinf, x)


def isposinf(x: Any) -> Any:
    return _nograd(lambda a: _backend.xp_of(a).isposinf(a) if a.dtype.kind == "f" else a != a, x)


def isneginf(x: Any) -> Any:
    return _nograd(lambda a: _backend.xp_of(a).isneginf(a) if a.dtype.kind == "f" else a != a, x)


def isfinite(x: Any) -> Any:
    return _nograd(_backend.xp_of(x._data).isfinite, x)


def isreal(x: Any) -> Any:
    return _nograd(lambda a: a == a if False else _backend.xp_of(a).ones(a.shape, bool), x)


def _compare(fn: Any) -> Any:
    def compare(a: Any, b: Any, *, out: Any = None) -> Any:
        if not _is_t(a) and isinstance(a, int | float | bool):
            raise TypeError(
                f"{compare.__name__}() received an invalid combination of arguments: the first "
                f"argument must be a Tensor, got {type(a).__name__}; write "
                f"{compare.__name__}(tensor, number) instead"
            )
        a, b = _promote(a, b)
        return _out(_nograd(fn, a, b), out)

    compare.__name__ = fn.__name__
    return compare


eq = _compare(lambda a, b: a == b)
ne = not_equal = _compare(lambda a, b: a != b)
lt = less = _compare(lambda a, b: a < b)
le = less_equal = _compare(lambda a, b: a <= b)
gt = greater = _compare(lambda a, b: a > b)
ge = greater_equal = _compare(lambda a, b: a >= b)
for _f, _n in ((eq, "eq"), (ne, "ne"), (lt, "lt"), (le, "le"), (gt, "gt"), (ge, "ge")):
    _f.__name__ = _n


def equal(a: Any, b: Any) -> bool:
    """True when both have the same shape and elements."""
    return a._data.shape == b._data.shape and bool((a._data == b._data).all())


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    a, b = _promote(a, b)
    xp = _backend.xp_of(a._data if _is_t(a) else b._data)
    return _nograd(lambda x, y: xp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), a, b)


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def _logical(fn: Any, name: str) -> Any:
    def logical(a: Any, b: Any) -> Any:
        a, b = as_tensor_arg(a), as_tensor_arg(b)
        return _nograd(fn, a, b)

    logical.__name__ = name
    return logical


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


def logical_not(x: Any) -> Any:
    return _nograd(np.logical_not, x)


def _bitwise(fn: Any, name: str) -> Any:
    def bitwise(a: Any, b: Any) -> Any:
        a, b = _promote(a, b)
        for t in (a, b):
            if _is_t(t) and t._data.dtype.kind == "f":
                raise NotImplementedError(  # (PyTorch's class: "not implemented for 'Float'")
                    f"{name} is only supported for integer and bool tensors, got {t.dtype}; for "
                    "masks, compare first: (x > 0) & (y < 1)"
                )
        return _nograd(fn, a, b)

    bitwise.__name__ = name
    return bitwise


bitwise_and = _bitwise(lambda a, b: a & b, "bitwise_and")
bitwise_or = _bitwise(lambda a, b: a | b, "bitwise_or")
bitwise_xor = _bitwise(lambda a, b: a ^ b, "bitwise_xor")


def bitwise_not(x: Any) -> Any:
    if x._data.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is only supported for integer and bool tensors, got {x.dtype}"
        )
    return _nograd(lambda a: ~a, x)
