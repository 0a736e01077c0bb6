"""Comparison ops (torch's "Comparison Ops"): eq, ne, lt, le, gt, ge and their aliases, equal,
isclose, allclose, maximum, minimum, fmax, fmin, and the predicates isnan, isinf, isposinf,
isneginf, isfinite, isreal. Only maximum/minimum/fmax/fmin carry a gradient.

Neighbours: sort/topk/kthvalue in ``ops/sorting.py``; the pointwise rooms ``ops/pointwise*.py``.
"""

from __future__ import annotations

import operator
from typing import Any

from .. import _backend
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _out
from ._promote import _nograd, _pr, _promote, _unordered
from .pointwise_piecewise import Where

__all__ = [
    "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal", "eq", "ne", "not_equal",
    "lt", "less", "le", "less_equal", "gt", "greater", "ge", "greater_equal", "equal",
    "isclose", "allclose", "maximum", "minimum", "fmax", "fmin",
]


def isnan(input: Any) -> Any:
    """True where an element is NaN."""
    return _nograd(_backend.xp_of(input._data).isnan, input)


def isinf(input: Any) -> Any:
    """True where an element is +inf or -inf."""
    return _nograd(_backend.xp_of(input._data).isinf, input)


def isposinf(input: Any, *, out: Any = None) -> Any:
    """True where an element is +inf."""
    _real_only(input, "isposinf")
    res = _nograd(lambda a: _backend.xp_of(a).isposinf(a) if a.dtype.kind == "f" else a != a, input)
    return res if out is None else _out.write(out, res, "isposinf")


def isneginf(input: Any, *, out: Any = None) -> Any:
    """True where an element is -inf."""
    _real_only(input, "isneginf")
    res = _nograd(lambda a: _backend.xp_of(a).isneginf(a) if a.dtype.kind == "f" else a != a, input)
    return res if out is None else _out.write(out, res, "isneginf")


def isfinite(input: Any) -> Any:
    """True where an element is neither inf nor NaN."""
    return _nograd(_backend.xp_of(input._data).isfinite, input)


def isreal(input: Any) -> Any:
    """True where an element has no imaginary part (everywhere for real tensors)."""
    if input._data.dtype.kind == "c":
        return TensorBase._make(input._data.imag == 0)
    return TensorBase._make(_backend.xp_of(input._data).ones(input._data.shape, bool))


def eq(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input == other``, elementwise (a bool tensor)."""
    return _compare("eq", operator.eq, input, other, out)


def ne(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input != other``, elementwise (a bool tensor)."""
    return _compare("ne", operator.ne, input, other, out)


def lt(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input < other``, elementwise (a bool tensor)."""
    return _compare("lt", operator.lt, input, other, out, True)


def le(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input <= other``, elementwise (a bool tensor)."""
    return _compare("le", operator.le, input, other, out, True)


def gt(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input > other``, elementwise (a bool tensor)."""
    return _compare("gt", operator.gt, input, other, out, True)


def ge(input: Any, other: Any, *, out: Any = None) -> Any:
    """``input >= other``, elementwise (a bool tensor)."""
    return _compare("ge", operator.ge, input, other, out, True)


def equal(input: Any, other: Any) -> bool:
    """True when both have the same shape and elements."""
    return input._data.shape == other._data.shape and bool((input._data == other._data).all())


def isclose(
    input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    """``|input - other| <= atol + rtol * |other|``, elementwise (a bool tensor)."""
    input, other = _promote(input, other)
    xp = _backend.xp_of(input._data if isinstance(input, TensorBase) else other._data)
    return _nograd(lambda x, y: xp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan),
                   input, other)


def allclose(
    input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """True when every element of ``input`` is close to ``other`` (see isclose)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def maximum(input: Any, other: Any, *, out: Any = None) -> Any:
    """The elementwise maximum of two tensors (NaN propagates)."""
    if not (isinstance(input, TensorBase) and isinstance(other, TensorBase)):
        raise TypeError("maximum(): argument 'other' must be Tensor (use clamp(min=...) for numbers)")
    input, other = _promote(input, other)
    if input._data.dtype.kind == "c":
        raise _unordered(input, "maximum not implemented for complex tensors.", RuntimeError)
    res = _pr(Maximum, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "maximum")


def minimum(input: Any, other: Any, *, out: Any = None) -> Any:
    """The elementwise minimum of two tensors (NaN propagates)."""
    if not (isinstance(input, TensorBase) and isinstance(other, TensorBase)):
        raise TypeError("minimum(): argument 'other' must be Tensor (use clamp(max=...) for numbers)")
    input, other = _promote(input, other)
    if input._data.dtype.kind == "c":
        raise _unordered(input, "minimum not implemented for complex tensors.", RuntimeError)
    res = _pr(Minimum, input, other).apply(input, other)
    return res if out is None else _out.write(out, res, "minimum")


def fmax(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    input, other = _promote(input, other)
    if input._data.dtype.kind == "c":
        raise _unordered(input, "fmax not implemented for complex tensors.", RuntimeError)
    if input._data.dtype.kind != "f":
        res = maximum(input, other)
    else:
        res = Fmax.apply(isnan(other) | (input >= other), input, other)
    return res if out is None else _out.write(out, res, "fmax")


def fmin(input: Any, other: Any, *, out: Any = None) -> Any:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    input, other = _promote(input, other)
    if input._data.dtype.kind == "c":
        raise _unordered(input, "fmin not implemented for complex tensors.", RuntimeError)
    if input._data.dtype.kind != "f":
        res = minimum(input, other)
    else:
        res = Fmin.apply(isnan(other) | (input <= other), input, other)
    return res if out is None else _out.write(out, res, "fmin")


not_equal = ne


less = lt


less_equal = le


greater = gt


greater_equal = ge


# ---------------------------------------------------------------------------------------------
# op classes


class Maximum(Op):
    """out = max(a, b)    grad_a = grad where a > b (grad/2 at ties)    grad_b likewise"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return _split_ties(ctx, grad, a > b, a, b)


class Minimum(Op):
    """out = min(a, b)    grad_a = grad where a < b (grad/2 at ties)    grad_b likewise"""

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, b = ctx.saved
        return _split_ties(ctx, grad, a < b, a, b)


class Fmax(Where):
    """fmax as a selection by a precomputed mask (same rule as Where)."""


class Fmin(Where):
    """fmin as a selection by a precomputed mask (same rule as Where)."""


def _split_ties(ctx: Any, grad: Any, wins: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(grad where a wins, grad where b wins), each half of grad at ties. On arrays the share
    is built in grad's dtype and multiplied in place (a float64 share would double the
    gradient's bytes), and b's part is grad minus a's (exact: the shares are 0, 1/2 and 1)."""
    if ctx._tensor_mode:
        share = wins + (a == b) * 0.5
        return grad * share, grad * (1 - share)
    share = ctx.xp.array(wins, dtype=grad.dtype)  # (a copy: 0-d operands give a scalar)
    share[a == b] = 0.5
    share *= grad
    return share, grad - share


# ---------------------------------------------------------------------------------------------
# helpers


def _compare(name: str, fn: Any, a: Any, b: Any, out: Any, ordered: bool = False) -> Any:
    """``fn(a, b)`` on promoted operands, no gradient; the first operand must be a tensor.
    ``ordered`` (lt le gt ge): complex operands raise, as PyTorch's (they have no order)."""
    if not isinstance(a, TensorBase) and isinstance(a, (int, float, bool)):
        raise TypeError(
            f"{name}() received an invalid combination of arguments: the first "
            f"argument must be a Tensor, got {type(a).__name__}; write "
            f"{name}(tensor, number) instead"
        )
    a, b = _promote(a, b)
    if ordered and (a if isinstance(a, TensorBase) else b)._data.dtype.kind == "c":
        t = a if isinstance(a, TensorBase) else b
        raise _unordered(t, f"\"{name}_cpu\" not implemented for '{{dt}}'")
    res = _nograd(fn, a, b)
    return res if out is None else _out.write(out, res, name)


def _real_only(x: Any, name: str) -> None:
    """isposinf/isneginf refuse complex input, as PyTorch's (RuntimeError)."""
    if isinstance(x, TensorBase) and x._data.dtype.kind == "c":
        raise RuntimeError(f"{name} does not support complex inputs (got {x.dtype}); test "
                           f"x.real or x.imag, e.g. torch.{name}(x.real)")
