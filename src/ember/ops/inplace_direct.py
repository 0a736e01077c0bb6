"""The everyday in-place ops outside autograd, computed straight into the tensor's memory.

``x.add_(y)`` runs as ``inplace(x, add, y)`` (``ops/inplace.py``): the out-of-place op makes a
new array, which is then copied into ``x``. Where nothing records the op (``no_grad``, tensors
that do not require grad) and the case is a plain one (a float32/float64 host tensor with
memory of its own per element; an operand of its dtype that broadcasts to its shape, or a
Python number), ``run`` instead writes the result into ``x``'s memory with the same NumPy call
the out-of-place op makes, given ``out=``: the same values in one pass instead of three (the
op, a new array's first touch, the copy), split over the threads where large
(``_threads.run_into``), as PyTorch's in-place kernels write their output. Each op has two
functions here: its case (the NumPy operands of a call it takes, or None: the general path runs
then) and its write; ``saves_no_input`` reads the same cases for recorded ops.
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
_table: dict[Any, tuple] = {}  # op function -> (case, write, keeps_old)


def run(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> bool:
    """Write ``fn(t, *args, **kwargs)`` into ``t``'s memory where ``fn`` is one of the ops
    below and its case applies; False (nothing written) otherwise. The caller has checked the
    overlap rules and that autograd records nothing."""
    d = t._data
    entry = _entry(d, fn)
    if entry is None or not d.flags.writeable:
        return False
    ops = entry[0](d, args, kwargs)
    if ops is None:
        return False
    entry[1](d, *ops)
    return True


def saves_no_input(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> bool:
    """Whether ``fn(t, *args, **kwargs)`` is one of the ops here, in one of the cases ``run``
    takes (so the op is that one node), whose node keeps nothing of ``t``'s value (add, sub,
    zero, fill and copy keep nothing, relu its result, addcmul and addcdiv their other operands,
    mul and div ``t``'s value only for an operand that requires grad): a recorded in-place op
    may then run on ``t``'s memory itself rather than a copy of it (``ops/inplace.py``), as
    nothing reads the old values after."""
    d = t._data
    entry = _entry(d, fn)
    return (entry is not None and entry[0](d, args, kwargs) is not None
            and not (entry[2] and _requires_grad(args[0])))


def _entry(d: Any, fn: Any) -> tuple | None:
    """The table's entry for ``fn`` on a float32/float64 host array ``d`` with memory of its own
    per element; None where there is none."""
    if type(d) is not np.ndarray or d.dtype.char not in "fd" or 0 in d.strides:
        return None
    return _lookup(fn)


def _requires_grad(o: Any) -> bool:
    """Whether the operand ``o`` takes part in autograd (a view of a tensor that does too)."""
    return isinstance(o, TensorBase) and (o._rg or (o._base is not None and o._base._rg))


def _build() -> dict[Any, tuple]:
    """The table, keyed by the op functions (built at the first call: those modules import this
    one's importer). keeps_old: the node keeps ``t``'s old value where the operand requires
    grad (mul and div, for the operand's gradient)."""
    from . import casting, pointwise, pointwise_fused, pointwise_piecewise

    _table.update({
        pointwise.add: (_alpha_case, _add, False),
        pointwise.sub: (_alpha_case, _sub, False),
        pointwise.mul: (_operand_case, _mul, True),
        pointwise.div: (_div_case, _div, True),
        pointwise_piecewise.relu: (_no_args_case, _relu, False),
        casting.zero: (_no_args_case, _zero, False),
        casting.fill: (_fill_case, _fill, False),
        casting.copy_from: (_copy_case, _copy, False),
        pointwise_fused.addcmul: (_value_case, _addcmul, False),
        pointwise_fused.addcdiv: (_addcdiv_case, _addcdiv, False)})
    return _table


def _lookup(fn: Any) -> tuple | None:
    """The entry for ``fn``: an op function, or a Tensor method that wraps one (``__wrapped__``:
    remembered); None for any other (not remembered: some callers pass a new lambda each call)."""
    table = _table or _build()
    e = table.get(fn)
    if e is None:
        inner = getattr(fn, "__wrapped__", None)
        if inner is not None and (e := table.get(inner)) is not None:
            table[fn] = e
    return e


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


# -- the cases: (d, args, kwargs) -> the write's operands, or None ------------------------------

def _no_args_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    return None if args or kw else ()


def _operand_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    if len(args) != 1 or kw or (o := _operand(d, args[0])) is None:
        return None
    return (o,)


def _div_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """True division only (no rounding mode), where NumPy's warnings can be turned off."""
    if kw.get("rounding_mode") is not None or not kw.keys() <= {"rounding_mode"} \
            or _EXTOBJ is None:
        return None
    return _operand_case(d, args, {})


def _alpha_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """add/sub's (operand, alpha), alpha a number."""
    if len(args) != 1 or not kw.keys() <= {"alpha"}:
        return None
    o = _operand(d, args[0])
    alpha = kw.get("alpha", 1)
    return None if o is None or not _number(alpha) else (o, alpha)


def _fill_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """A number; one past float32's range goes the general way (its overflow warning)."""
    if len(args) != 1 or kw or not _number(v := args[0]):
        return None
    if d.dtype.char == "f" and abs(v) > _F32_MAX and abs(v) != float("inf"):
        return None
    return (v,)


def _copy_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """A tensor of ``d``'s dtype on the host (broadcast to ``d``'s shape)."""
    if len(args) != 1 or kw or not isinstance(args[0], TensorBase):
        return None
    return _operand_case(d, args, kw)


def _value_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """addcmul/addcdiv's (t1, t2, value): two tensors that ``_operand`` takes, value a number."""
    if len(args) != 2 or not kw.keys() <= {"value"} or not _number(value := kw.get("value", 1)) \
            or not all(isinstance(a, TensorBase) for a in args):
        return None
    ops = tuple(_operand(d, a) for a in args)
    return None if any(o is None for o in ops) else (*ops, value)


def _addcdiv_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    return None if _EXTOBJ is None else _value_case(d, args, kw)


# -- the writes ------------------------------------------------------------------------------

def _add(d: np.ndarray, o: Any, alpha: Any) -> None:
    _add_or_sub(np.add, d, o, alpha)


def _sub(d: np.ndarray, o: Any, alpha: Any) -> None:
    _add_or_sub(np.subtract, d, o, alpha)


def _add_or_sub(f: Any, d: np.ndarray, o: Any, alpha: Any) -> None:
    """``d = d +/- o * alpha`` as ``add``/``sub`` compute it: ``o * alpha`` first (ScaledAdd's
    ``a + b * alpha``; a number is scaled in Python, as ``_scaled`` does)."""
    if alpha == 1:
        _threads.run_into(f, d, d, o)
    elif type(o) is not np.ndarray:
        _threads.run_into(f, d, d, o * alpha)
    elif not _kernels.arith(f, d, o, d, alpha):  # (one pass on the kernels' pool, else blocks)
        def expr(tmp: Any, out: Any, a: Any, b: Any) -> None:
            f(a, np.multiply(b, alpha, out=tmp), out=out)
        _write_expr(d, expr, o)


def _mul(d: np.ndarray, o: Any) -> None:
    _threads.run_into(np.multiply, d, d, o)


def _div(d: np.ndarray, o: Any) -> None:
    """NumPy's warnings off as in ``Div`` (x / 0 is inf, 0 / 0 nan)."""
    token = _EXTOBJ.set(_QUIET_EXTOBJ)  # (the workers run in copies of this context)
    try:
        _threads.run_into(np.divide, d, d, o)
    finally:
        _EXTOBJ.reset(token)


def _relu(d: np.ndarray) -> None:
    if _kernels.clamp(d, 0.0, None, inplace=True) is None:  # (Relu's kernel; else its ufunc,
        _threads.run_into(np.maximum, d, 0, d)  # 0 first: a tie keeps x, -0.0 stays -0.0)


def _zero(d: np.ndarray) -> None:
    _threads.run_into(_threads.fill_into, d, 0)


def _fill(d: np.ndarray, v: Any) -> None:
    """One rounding of the number to ``d``'s dtype, as ``np.full``."""
    _threads.run_into(_threads.fill_into, d, v)


def _copy(d: np.ndarray, s: Any) -> None:
    _threads.run_into(_threads.copy_into, d, s)


def _addcmul(d: np.ndarray, t1: Any, t2: Any, value: Any) -> None:
    """``d + value * (t1 * t2)``, Addcmul's order."""
    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.multiply(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    _write_expr(d, expr, t1, t2)


def _addcdiv(d: np.ndarray, t1: Any, t2: Any, value: Any) -> None:
    """``d + value * (t1 / t2)``, Addcdiv's order, NumPy's warnings off as there."""
    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.divide(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    token = _EXTOBJ.set(_QUIET_EXTOBJ)
    try:
        _write_expr(d, expr, t1, t2)
    finally:
        _EXTOBJ.reset(token)


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
