"""The everyday in-place ops outside autograd, computed straight into the tensor's memory.

``x.add_(y)`` runs as ``inplace(x, add, y)`` (``ops/inplace.py``): the out-of-place op makes a
new array, which is then copied into ``x``. Where nothing records the op (``no_grad``, tensors
that do not require grad) and the case is a plain one (a float32/float64 host tensor with
memory of its own per element; an operand of its dtype that broadcasts to its shape, or a
Python number), ``run`` instead writes the result into ``x``'s memory with the same NumPy call
the out-of-place op makes, given ``out=``: the same values in one pass instead of three (the
op, a new array's first touch, the copy), split over the threads where large
(``_threads.run_into``), as PyTorch's in-place kernels write their output. Every function here
returns False, having written nothing, where its case does not apply; the general path runs then.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _kernels_loader as _kernels
from .. import _threads
from .._tensor_base import TensorBase
from ._promote import _EXTOBJ, _QUIET_EXTOBJ

_EXACT = 1 << 53  # a Python int past this would round on its way to a float
_F32_MAX = float(np.finfo(np.float32).max)
_table: dict[Any, Any] = {}


def run(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> bool:
    """Write ``fn(t, *args, **kwargs)`` into ``t``'s memory where ``fn`` is one of the ops
    below and its case applies; False (nothing written) otherwise. The caller has checked the
    overlap rules and that autograd records nothing."""
    d = t._data
    if type(d) is not np.ndarray or d.dtype.char not in "fd" or not d.flags.writeable \
            or 0 in d.strides:
        return False
    f = _lookup(fn)
    return f is not None and f(d, *args, **kwargs)


def saves_no_input(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> bool:
    """Whether ``fn(t, *args, **kwargs)`` is one of the ops here whose node keeps nothing of
    ``t``'s value (add, sub, zero, fill and copy keep nothing, relu its result, addcmul and
    addcdiv their other operands, mul and div ``t``'s value only for an operand that requires
    grad) in one of the cases ``run`` takes (so the op is that one node): a recorded in-place op
    may then run on ``t``'s memory itself rather than a copy of it (``ops/inplace.py``), as
    nothing reads the old values after."""
    d = t._data
    if type(d) is not np.ndarray or d.dtype.char not in "fd" or 0 in d.strides:
        return False
    f = _lookup(fn)
    if f is _relu or f is _zero:
        return not args and not kwargs
    if f is _fill:
        return len(args) == 1 and not kwargs and _number(args[0])
    if f is _copy:
        return (len(args) == 1 and not kwargs and isinstance(args[0], TensorBase)
                and _operand(d, args[0]) is not None)
    if f is _mul or f is _div:  # (they keep the old value for the operand's gradient only)
        return (len(args) == 1 and (not kwargs if f is _mul else kwargs.keys() <= {"rounding_mode"}
                                    and kwargs.get("rounding_mode") is None)
                and _operand(d, args[0]) is not None and not _requires_grad(args[0]))
    if f is _addcmul or f is _addcdiv:  # (they keep t1 and t2, never the old value)
        return _tensor_operands(d, args, kwargs) is not None
    return ((f is _add or f is _sub) and len(args) == 1 and kwargs.keys() <= {"alpha"}
            and _number(kwargs.get("alpha", 1)) and _operand(d, args[0]) is not None)


def _requires_grad(o: Any) -> bool:
    """Whether the operand ``o`` takes part in autograd (a view of a tensor that does too)."""
    return isinstance(o, TensorBase) and (o._rg or (o._base is not None and o._base._rg))


def _build() -> dict[Any, Any]:
    """The table, keyed by the op functions (built at the first call: those modules import this
    one's importer)."""
    from . import casting, pointwise, pointwise_fused, pointwise_piecewise

    _table.update({
        pointwise.add: _add, pointwise.sub: _sub, pointwise.mul: _mul, pointwise.div: _div,
        pointwise_piecewise.relu: _relu, casting.zero: _zero, casting.fill: _fill,
        casting.copy_from: _copy, pointwise_fused.addcmul: _addcmul,
        pointwise_fused.addcdiv: _addcdiv})
    return _table


def _lookup(fn: Any) -> Any:
    """The function here for ``fn``: an op function, or a Tensor method that wraps one
    (``__wrapped__``: remembered); None for any other (not remembered: some callers pass a new
    lambda each call)."""
    table = _table or _build()
    f = table.get(fn)
    if f is None:
        inner = getattr(fn, "__wrapped__", None)
        if inner is not None and (f := table.get(inner)) is not None:
            table[fn] = f
    return f


def _operand(d: np.ndarray, o: Any) -> Any:
    """``o`` as the NumPy operand the out-of-place op would use: a tensor's array of ``d``'s
    dtype that broadcasts to ``d``'s shape, or a Python number; None where neither."""
    if isinstance(o, TensorBase):
        a = o._data
        if type(a) is not np.ndarray or a.dtype != d.dtype:
            return None
        if a.shape != d.shape:
            if a.ndim > d.ndim:
                return None
            try:
                if np.broadcast_shapes(a.shape, d.shape) != d.shape:
                    return None
            except ValueError:
                return None
        return a
    return o if _number(o) else None


def _number(v: Any) -> bool:
    return type(v) is float or (type(v) is int and -_EXACT <= v <= _EXACT)


def _add(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    return _add_or_sub(np.add, d, args, kw)


def _sub(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    return _add_or_sub(np.subtract, d, args, kw)


def _add_or_sub(f: Any, d: np.ndarray, args: tuple, kw: dict) -> bool:
    """``d = d +/- o * alpha`` as ``add``/``sub`` compute it: ``o * alpha`` first (ScaledAdd's
    ``a + b * alpha``; a number is scaled in Python, as ``_scaled`` does)."""
    if len(args) != 1 or not kw.keys() <= {"alpha"}:
        return False
    o = _operand(d, args[0])
    alpha = kw.get("alpha", 1)
    if o is None or not _number(alpha):
        return False
    if alpha == 1:
        _threads.run_into(f, d, d, o)
    elif type(o) is not np.ndarray:
        _threads.run_into(f, d, d, o * alpha)
    elif _kernels.arith(f, d, o, d, alpha):  # (one pass on the kernels' pool)
        pass
    else:
        def expr(tmp: Any, out: Any, a: Any, b: Any) -> None:
            f(a, np.multiply(b, alpha, out=tmp), out=out)
        _write_expr(d, expr, o)
    return True


def _addcmul(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    """``d + value * (t1 * t2)``, Addcmul's order."""
    ops = _tensor_operands(d, args, kw)
    if ops is None:
        return False
    value = kw.get("value", 1)

    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.multiply(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    _write_expr(d, expr, *ops)
    return True


def _addcdiv(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    """``d + value * (t1 / t2)``, Addcdiv's order, NumPy's warnings off as there."""
    ops = _tensor_operands(d, args, kw)
    if ops is None or _EXTOBJ is None:
        return False
    value = kw.get("value", 1)

    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.divide(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    token = _EXTOBJ.set(_QUIET_EXTOBJ)
    try:
        _write_expr(d, expr, *ops)
    finally:
        _EXTOBJ.reset(token)
    return True


def _tensor_operands(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """addcmul/addcdiv's (t1, t2) as arrays, where both are tensors that ``_operand`` takes and
    ``value`` is a number; None otherwise."""
    if len(args) != 2 or not kw.keys() <= {"value"} or not _number(kw.get("value", 1)) \
            or not all(isinstance(a, TensorBase) for a in args):
        return None
    ops = tuple(_operand(d, a) for a in args)
    return None if any(o is None for o in ops) else ops


_BLOCK = 1 << 18  # elements per block of _write_expr: its temporaries stay in the caches


def _write_expr(d: np.ndarray, expr: Any, *ops: Any) -> None:
    """``expr(tmp, d, d, *ops)``: an elementwise ``expr`` of NumPy calls that writes its result
    into its second argument, using ``tmp`` (an array of the result's shape) for the
    intermediate values. Block by block where every operand is a C-ordered array of ``d``'s
    shape (so the intermediate values are read back from the cache, not memory), the blocks
    split over the threads; else at once. The same values either way (each element's operations
    are the same)."""
    if d.size > _BLOCK and d.flags.c_contiguous and all(
            o.shape == d.shape and o.flags.c_contiguous for o in ops):
        _threads.run_into(_in_blocks(expr), d, d, *ops)
    else:
        expr(np.empty_like(d), d, d, *ops)


def _in_blocks(expr: Any) -> Any:
    def part(*xs: Any, out: Any) -> None:  # (run_into's form: C-ordered parts)
        flat = [x.reshape(-1) for x in xs]
        o = out.reshape(-1)
        tmp = np.empty(min(o.size, _BLOCK), o.dtype)
        for i in range(0, o.size, _BLOCK):
            j = min(i + _BLOCK, o.size)
            expr(tmp[:j - i], o[i:j], *(x[i:j] for x in flat))
    return part


def _mul(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    if len(args) != 1 or kw or (o := _operand(d, args[0])) is None:
        return False
    _threads.run_into(np.multiply, d, d, o)
    return True


def _div(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    """True division, NumPy's warnings off as in ``Div`` (x / 0 is inf, 0 / 0 nan)."""
    if len(args) != 1 or kw.get("rounding_mode") is not None or not kw.keys() <= {"rounding_mode"} \
            or (o := _operand(d, args[0])) is None or _EXTOBJ is None:
        return False
    token = _EXTOBJ.set(_QUIET_EXTOBJ)  # (the workers run in copies of this context)
    try:
        _threads.run_into(np.divide, d, d, o)
    finally:
        _EXTOBJ.reset(token)
    return True


def _relu(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    if args or kw:
        return False
    if _kernels.clamp(d, 0.0, None, inplace=True) is None:  # (Relu's kernel; else its ufunc,
        _threads.run_into(np.maximum, d, 0, d)  # 0 first: a tie keeps x, -0.0 stays -0.0)
    return True


def _zero(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    if args or kw:
        return False
    _threads.run_into(_threads.fill_into, d, 0)
    return True


def _fill(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    """A number (one float32 rounding of it, as ``np.full``); one past float32's range goes the
    general way (its overflow warning)."""
    if len(args) != 1 or kw or not _number(v := args[0]):
        return False
    if d.dtype.char == "f" and abs(v) > _F32_MAX and abs(v) != float("inf"):
        return False
    _threads.run_into(_threads.fill_into, d, v)
    return True


def _copy(d: np.ndarray, *args: Any, **kw: Any) -> bool:
    """``copy_`` from a tensor of ``d``'s dtype on the host (broadcast to ``d``'s shape)."""
    if len(args) != 1 or kw or not isinstance(args[0], TensorBase):
        return False
    s = _operand(d, args[0])
    if s is None:
        return False
    _threads.run_into(_threads.copy_into, d, s)
    return True
