"""The everyday in-place ops, computed straight into the tensor's memory (recorded or not).

``x.add_(y)`` runs as ``inplace(x, add, y)`` (``ops/inplace.py``): the out-of-place op makes a
new array, which is then copied into ``x``. Where nothing records the op (``no_grad``, tensors
that do not require grad) and the case is a plain one (a float32/float64 host tensor with
memory of its own per element; an operand of its dtype that broadcasts to its shape, or a
Python number), ``run`` instead writes the result into ``x``'s memory with the same NumPy call
the out-of-place op makes, given ``out=``: the same values in one pass instead of three (the
op, a new array's first touch, the copy), split over the threads where large
(``_threads.run_into``), as PyTorch's in-place kernels write their output. Each op has its
case here (the NumPy operands of a call it takes, or None: the general path runs then), its
write, and for ``record`` its node.

Where autograd records the op, ``record`` takes the same cases: the op's own node is made (the
class the out-of-place op would apply, with its inputs), but its forward is the write into the
tensor's memory (``_into``), so a recorded ``out += identity`` or ``relu_()`` also makes one pass
and no new array. Those forwards save what the op classes' forwards save (the old value never:
mul and div keep it for an operand that requires grad, and those go the general way).
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
_table: dict[Any, tuple] = {}  # op function -> (case, write, keeps_old, node)


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


def record(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> TensorBase | None:
    """Where ``fn(t, *args, **kwargs)`` is one of the ops here, in a case ``run`` takes, and its
    node keeps nothing of ``t``'s old value: write the result into ``t``'s memory and return the
    op's recorded output (its node, as ``fn`` would make it; its array a view of ``t``'s). None
    (nothing written) otherwise. The caller has checked the overlap and leaf rules."""
    d = t._data
    entry = _entry(d, fn)
    if entry is None or not d.flags.writeable:
        return None
    ops = entry[0](d, args, kwargs)
    if ops is None or (entry[2] and _requires_grad(args[0])):
        return None
    cls, inputs = entry[3](args, kwargs, ops)
    old = TensorBase._make(d, t._rg, t._grad_fn, t._output_nr)
    return _into(cls).apply(old, *inputs)


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
    grad (mul and div, for the operand's gradient). node: ``(args, kwargs, ops) -> (the op
    class, its inputs after t)``, as the op function chooses them in these cases."""
    from . import casting, pointwise, pointwise_fused, pointwise_piecewise

    P, C, F = pointwise, casting, pointwise_fused

    def add_node(args: tuple, kw: dict, ops: tuple) -> tuple:
        return _scaled_node(P.Add, P.ScaledAdd, args, ops)

    def sub_node(args: tuple, kw: dict, ops: tuple) -> tuple:
        return _scaled_node(P.Sub, P.ScaledSub, args, ops)

    _table.update({
        P.add: (_alpha_case, _add, False, add_node),
        P.sub: (_alpha_case, _sub, False, sub_node),
        P.mul: (_operand_case, _mul, True, lambda args, kw, ops: (P.Mul, args)),
        P.div: (_div_case, _div, True, lambda args, kw, ops: (P.Div, args)),
        pointwise_piecewise.relu: (_no_args_case, _relu, False,
                                   lambda args, kw, ops: (pointwise_piecewise.Relu, ())),
        C.zero: (_no_args_case, _zero, False, lambda args, kw, ops: (C.Zero, (0,))),
        C.fill: (_fill_case, _fill, False, lambda args, kw, ops: (C.Fill, args)),
        C.copy_from: (_copy_case, _copy, False, lambda args, kw, ops: (C.CopyFrom, args)),
        F.addcmul: (_value_case, _addcmul, False,
                    lambda args, kw, ops: (F.Addcmul, (*args, ops[2]))),
        F.addcdiv: (_addcdiv_case, _addcdiv, False,
                    lambda args, kw, ops: (F.Addcdiv, (*args, ops[2]))),
        F.lerp: (_lerp_case, _lerp, False, lambda args, kw, ops: (F.Lerp, args))})
    _forwards.update({
        P.Add: _add_into, P.ScaledAdd: _scaled_add_into, P.Sub: _sub_into,
        P.ScaledSub: _scaled_sub_into, P.Mul: _mul_into, P.Div: _div_into,
        pointwise_piecewise.Relu: _relu_into, C.Zero: _fill_into, C.Fill: _fill_into,
        C.CopyFrom: _copy_into, F.Addcmul: _addcmul_into, F.Addcdiv: _addcdiv_into,
        F.Lerp: _lerp_into})
    return _table


def _scaled_node(plain: Any, scaled: Any, args: tuple, ops: tuple) -> tuple:
    """add/sub's node: plain for alpha 1 or a number operand (scaled first, as ``_scaled``
    does), else the scaled op with alpha."""
    o, alpha = ops
    if alpha == 1:
        return plain, args
    if type(o) is not np.ndarray:
        return plain, (o * alpha,)
    return scaled, (args[0], alpha)


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


def _lerp_case(d: np.ndarray, args: tuple, kw: dict) -> tuple | None:
    """lerp's (end, weight): end a tensor that ``_operand`` takes, the weight a number."""
    if len(args) != 2 or kw or not _number(w := args[1]) or not isinstance(args[0], TensorBase):
        return None
    e = _operand(d, args[0])
    return None if e is None else (e, w)


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
    """``d + value * (t1 * t2)``, Addcmul's order (one pass by the kernel where it applies)."""
    if _kernels.addc(False, d, t1, t2, d, value):
        return

    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.multiply(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    _write_expr(d, expr, t1, t2)


def _addcdiv(d: np.ndarray, t1: Any, t2: Any, value: Any) -> None:
    """``d + value * (t1 / t2)``, Addcdiv's order, NumPy's warnings off as there."""
    if _kernels.addc(True, d, t1, t2, d, value):
        return

    def expr(tmp: Any, out: Any, x: Any, a: Any, b: Any) -> None:
        np.multiply(np.divide(a, b, out=tmp), value, out=tmp)
        np.add(x, tmp, out=out)
    token = _EXTOBJ.set(_QUIET_EXTOBJ)
    try:
        _write_expr(d, expr, t1, t2)
    finally:
        _EXTOBJ.reset(token)


# -- recorded: the op classes with the write as their forward ---------------------------------
# Each forward saves what its class's forward saves (in these cases: never the old value) and
# returns a view of the tensor's memory: apply then finds a saved result among its outputs, and
# ``inplace`` points it at the tensor, as for the general path's result.

_forwards: dict[Any, Any] = {}  # op class -> its forward into its first input
_into_classes: dict[Any, Any] = {}  # op class -> the subclass with that forward


def _into(cls: Any) -> Any:
    """``cls`` with its forward writing into its first input: the same node (name, backward)."""
    sub = _into_classes.get(cls)
    if sub is None:
        sub = _into_classes[cls] = type(cls.__name__, (cls,), {
            "forward": staticmethod(_forwards[cls]),
            "node_name": cls._node_cls.__name__, "__module__": cls.__module__})
    return sub


def _add_into(ctx: Any, a: np.ndarray, b: Any) -> np.ndarray:
    _add(a, b, 1)
    return a[...]


def _sub_into(ctx: Any, a: np.ndarray, b: Any) -> np.ndarray:
    _sub(a, b, 1)
    return a[...]


def _scaled_add_into(ctx: Any, a: np.ndarray, b: Any, alpha: Any) -> np.ndarray:
    ctx.alpha = alpha
    _add(a, b, alpha)
    return a[...]


def _scaled_sub_into(ctx: Any, a: np.ndarray, b: Any, alpha: Any) -> np.ndarray:
    ctx.alpha = alpha
    _sub(a, b, alpha)
    return a[...]


def _mul_into(ctx: Any, a: np.ndarray, b: Any) -> np.ndarray:
    ctx.save_for_backward(None, b if ctx.needs_input_grad[0] else None)  # (Mul's; b needs none)
    _mul(a, b)
    return a[...]


def _div_into(ctx: Any, a: np.ndarray, b: Any) -> np.ndarray:
    ctx.save_for_backward(None, b)  # (Div's; b needs no gradient)
    _div(a, b)
    return a[...]


def _relu_into(ctx: Any, a: np.ndarray) -> np.ndarray:
    _relu(a)
    out = a[...]
    ctx.save_for_backward(out)  # (Relu's: its result)
    return out


def _fill_into(ctx: Any, a: np.ndarray, value: Any) -> np.ndarray:
    _fill(a, value)
    return a[...]


def _copy_into(ctx: Any, a: np.ndarray, src: Any) -> np.ndarray:
    _copy(a, src)
    return a[...]


def _lerp_into(ctx: Any, a: np.ndarray, end: Any, w: Any) -> np.ndarray:
    ctx.save_for_backward(None, None, w)  # (Lerp's, for a number weight)
    _lerp(a, end, w)
    return a[...]


def _addcmul_into(ctx: Any, x: np.ndarray, t1: Any, t2: Any, value: Any) -> np.ndarray:
    n = ctx.needs_input_grad  # (Addcmul's saves)
    ctx.save_for_backward(None, t1 if n[2] else None, t2 if n[1] else None,
                          value if n[1] or n[2] else None)
    _addcmul(x, t1, t2, value)
    return x[...]


def _addcdiv_into(ctx: Any, x: np.ndarray, t1: Any, t2: Any, value: Any) -> np.ndarray:
    ctx.save_for_backward(None, t1 if ctx.needs_input_grad[2] else None, t2, value)  # (Addcdiv's)
    _addcdiv(x, t1, t2, value)
    return x[...]


def _lerp(d: np.ndarray, end: Any, w: Any) -> None:
    """``d + w * (end - d)``, Lerp's roundings: in one pass by the kernel where it applies, else
    Lerp's formula (``_lerp_number``) and a copy (split as ``_write``'s)."""
    if _kernels.lerp(d, end, w, out=d) is None:
        from .pointwise_fused import _lerp_number  # (this module loads before that one)
        _threads.run_into(_threads.copy_into, d, _lerp_number(np, d, end, w))


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
