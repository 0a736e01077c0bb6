"""Operand promotion for the pointwise ops: PyTorch's ``result_type`` rules applied before NumPy
sees the operands (so a float32 tensor never meets a float64 array by accident), Python ints
wrapped into an integer tensor's range, NumPy's floating-point warnings silenced, ``out=``,
results that carry no gradient, PyTorch's "opmath" rule for float16/bfloat16 (``opmath``:
computed in float32, each result rounded once to the half type), and complex operands of
holomorphic ops (``conjugated``: PyTorch's conjugate-Wirtinger gradients from the real rules).

Shared by the pointwise rooms (``pointwise.py``, ``pointwise_math.py``,
``pointwise_piecewise.py``, ``comparison.py``, ``special.py``) and by other families that need
the same dtype rules. Casts themselves are in ``ops/casting.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd import grad_mode
from ..autograd.function import Op
from .casting import Cast, _layout_copy, as_tensor_arg, cast

__all__: list[str] = []


# Float division by zero gives inf/nan silently, as in PyTorch (NumPy would warn).
_QUIET = {"divide": "ignore", "invalid": "ignore", "over": "ignore"}


_F32 = np.dtype(np.float32)


_F16 = np.dtype(np.float16)


_OPMATH: dict = {}


_HALF_GEMM: dict = {}


_CONJUGATED: dict = {}


_REFRESHED: dict = {}


def opmath(cls: Any) -> Any:
    """``cls`` as PyTorch computes float16/bfloat16: its kernels load half inputs into float32
    (their "opmath" type), compute there, Python number operands included (never rounded to the
    half type first), and round each result once. NumPy and ml_dtypes round every intermediate
    (``x * 0.1`` rounds 0.1 to bfloat16 first; ``a + b * alpha`` rounds twice).

    The returned subclass (made once per class, same node name, same rules) runs ``cls.forward``
    on float32 copies of its half arrays and rounds its float32 results to the input's half
    dtype; arrays it saves for backward are kept as the half inputs and rounded outputs (what
    PyTorch saves) and widened again when backward runs, also in float32; the engine rounds each
    gradient once to its input's dtype. Callers pick it only when an operand is half, so the
    float32/float64 paths are untouched."""
    sub = _OPMATH.get(cls)
    if sub is None:
        sub = _OPMATH[cls] = _variant(cls, forward=_opmath_forward(cls.forward),
                                      backward=_opmath_backward(cls.backward))
    return sub


def half_gemm(cls: Any) -> Any:
    """``cls`` (a product: linear) for bfloat16 operands where the kernels multiply bfloat16
    arrays themselves (``_kernels_loader.bf16_gemm``: exact products, float32 sums). Its
    forward gets the half arrays, saves them (what PyTorch saves) and rounds its float32 result
    once; its backward gets the half gradient and returns float32 gradients, each rounded once
    to its input's dtype here, as ``opmath``'s. Against ``opmath(cls)`` (the operands widened to
    float32 for NumPy's sgemm) only the order of the float32 sums differs."""
    sub = _HALF_GEMM.get(cls)
    if sub is None:
        sub = _HALF_GEMM[cls] = _variant(cls, backward=_half_gemm_backward(cls.backward))
    return sub


def conjugated(cls: Any) -> Any:
    """``cls`` for complex operands. For a holomorphic op (one whose real backward rule multiplies
    ``grad`` by the derivative, written with real coefficients: mul, div, exp, sin, matmul...)
    PyTorch's gradient is ``grad * conj(f'(z))`` (docs: "Autograd for Complex Numbers"), which is
    ``conj(rule(conj(grad)))``: the returned subclass (made once per class, same node name) runs
    the rule between two conjugations. Callers pick it only when an operand is complex, so the
    real paths are untouched."""
    sub = _CONJUGATED.get(cls)
    if sub is None:
        sub = _CONJUGATED[cls] = _variant(cls, backward=_conjugated_backward(cls.backward))
    return sub


def refreshed(cls: Any) -> Any:
    """``cls`` for operands that ``_promote`` cast to the computation's dtype. The op saves the
    cast's copy, but PyTorch's saves the operand itself and casts it when backward runs, so a
    write through ``x.data`` after the op reaches its backward there (an in-place op on ``x``
    itself fails the version check in both). The returned subclass (made once per class, same
    node name) casts each saved copy's operand again before the rule runs. Callers pick it only
    when an operand was promoted (``_om``, ``_pr``), so same-dtype ops are untouched."""
    sub = _REFRESHED.get(cls)
    if sub is None:
        sub = _REFRESHED[cls] = _variant(cls, backward=_refreshed_backward(cls.backward))
        # its node shows the operands themselves (``_saved_self``, saved_tensors_hooks' pack
        # hook), as PyTorch's, not the copies (``Node._saved_as_tensors``)
        sub._recasts_promoted = True
    return sub


def wide(a: Any) -> Any:
    """A float16/bfloat16 array as float32 (one pass); anything else (a float32 array, a tensor
    under create_graph) as it is."""
    dt = getattr(a, "dtype", None)
    if isinstance(dt, np.dtype) and dt.itemsize == 2 and dt.kind in "fV" and hasattr(a, "ndim"):
        return _to_f32(a)
    return a


def round_half(o: Any, half: Any) -> Any:
    """A float32 array rounded to ``half`` (float16/bfloat16) once; other values as they are."""
    if getattr(o, "dtype", None) != _F32:
        return o
    out = _kernels.half_cast(o, half)  # (the eager kernel: one pass, NumPy's rounding)
    return o.astype(half) if out is None else out


class _NoGrad(Op):
    """out = fn(*args), not differentiable (``_nograd`` under compile's trace)"""

    @staticmethod
    def forward(ctx: Any, fn: Any, *args: Any) -> Any:
        return fn(*args)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return (None,) * len(ctx.needs_input_grad)


def _variant(cls: Any, **rules: Any) -> type:
    """A subclass of op ``cls`` with the same name, docs and node name whose rules are
    ``rules`` (the wrappers below make one per class and cache it)."""
    body = {"__doc__": cls.__doc__, "__module__": cls.__module__,
            "node_name": cls._node_cls.__name__}
    body.update({k: staticmethod(f) for k, f in rules.items()})
    return type(cls.__name__, (cls,), body)


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
        if a._data.dtype == b._data.dtype and not (to_float and a._data.dtype.kind not in "fVc"):
            return a, b
    elif ta and not tb:
        k = a._data.dtype.kind
        if k == "f" and type(b) is not complex:
            return a, b
        if k in "iu" and type(b) is int and not to_float:
            return a, _fit_int(b, a._data.dtype)
    elif tb and not ta:
        k = b._data.dtype.kind
        if k == "f" and type(a) is not complex:
            return a, b
        if k in "iu" and type(a) is int and not to_float:
            return _fit_int(a, b._data.dtype), b
    rt = _dtype.result_type(a, b)
    if to_float and not (rt.is_floating_point or rt.is_complex):
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
    copy never reaches the user, so nothing changes it in place itself. It keeps ``x``
    (``_promoted_from``): ``refreshed`` ops cast it again when their backward runs."""
    out = cast(x, rt)
    if out is not x:
        out._version = x._version_counter()
        out._promoted_from = x
    return out


def _pr(cls: Any, *args: Any) -> Any:
    """``refreshed(cls)`` when a tensor among ``args`` is a copy made by ``_promote``, else
    ``cls``."""
    for a in args:
        if isinstance(a, TensorBase) and getattr(a, "_promoted_from", None) is not None:
            return refreshed(cls)
    return cls


def _om(cls: Any, *args: Any) -> Any:
    """``cls``, or ``opmath(cls)`` when an operand is a float16/bfloat16 tensor (for the paths
    that already left the float32 fast path); ``refreshed`` on top when an operand was
    promoted."""
    sub = cls
    fresh = False
    for a in args:
        if isinstance(a, TensorBase):
            if getattr(a, "_promoted_from", None) is not None:  # (_pr, inlined)
                fresh = True
            if sub is cls:
                dt = a._data.dtype
                if dt.itemsize == 2 and dt.kind in "fV":
                    sub = opmath(cls)
                elif dt.kind == "c":
                    sub = conjugated(cls)
        elif type(a) is complex and sub is cls:
            sub = conjugated(cls)
    return refreshed(sub) if fresh else sub


def _is_half(dt: Any) -> bool:
    """float16 or bfloat16 (ml_dtypes' bfloat16 is NumPy kind "V")."""
    return dt.itemsize == 2 and dt.kind in "fV"


def _half_of(*args: Any) -> Any:
    """The half dtype of the first float16/bfloat16 tensor among ``args``, else None."""
    for a in args:
        if isinstance(a, TensorBase) and _is_half(a._data.dtype):
            return a._data.dtype
    return None


def _is_complex(a: Any) -> bool:
    """Whether a backward rule's array (or, under create_graph, tensor) holds complex values."""
    dt = a.dtype
    return dt.is_complex if isinstance(dt, _dtype.dtype) else dt.kind == "c"


def _conjugated_backward(bwd: Any) -> Any:
    def backward(ctx: Any, *grads: Any) -> Any:
        conj = ctx.xp.conj
        out = bwd(ctx, *[None if g is None else conj(g) for g in grads])
        if type(out) is tuple:
            return tuple([None if g is None or not hasattr(g, "dtype") else conj(g) for g in out])
        return None if out is None else conj(out)

    return backward


def _refreshed_backward(bwd: Any) -> Any:
    def backward(ctx: Any, *grads: Any) -> Any:
        saved = ctx._saved
        src = getattr(ctx, "_saved_src", None)
        if not src:
            return bwd(ctx, *grads)
        if type(saved) is not tuple:  # packed by saved_tensors_hooks: the hooks saw x
            return _recast_unpacked(ctx, bwd, grads, saved, src)
        new_saved, new_src = list(saved), list(src)
        hit = False
        for k, t in enumerate(src):
            if isinstance(t, TensorBase) and saved[k] is t._data:
                x = getattr(t, "_promoted_from", None)
                if x is None:
                    continue
                hit = True
                if ctx._tensor_mode:  # under create_graph: a recorded cast of x, as PyTorch's
                    c = cast(x, _dtype.from_numpy(t._data.dtype))
                    new_src[k], new_saved[k] = c, c._data
                else:
                    new_saved[k] = _layout_copy(x._data, t._data.dtype)
        if not hit:
            return bwd(ctx, *grads)
        ctx._saved, ctx._saved_src = tuple(new_saved), new_src
        try:
            return bwd(ctx, *grads)
        finally:
            ctx._saved, ctx._saved_src = saved, src

    return backward


def _recast_unpacked(ctx: Any, bwd: Any, grads: tuple, saved: Any, src: list) -> Any:
    """``refreshed``'s backward for a node whose saves went through saved_tensors_hooks: the
    pack hook got each promoted operand itself (as PyTorch's), so what unpack returns is cast
    to the computation's dtype here (a recorded cast under create_graph)."""
    vals = list(saved.packed)
    hit = False
    for k, t in enumerate(src):
        if not (saved.is_packed[k] and isinstance(t, TensorBase)
                and getattr(t, "_promoted_from", None) is not None):
            continue
        v = saved.unpack(vals[k])
        dt = t._data.dtype
        if isinstance(v, TensorBase) and v._data.dtype != dt:
            hit = True
            v = (cast(v, _dtype.from_numpy(dt)) if ctx._tensor_mode
                 else TensorBase._make(_layout_copy(v._data, dt)))
        vals[k] = v
    if not hit:
        return bwd(ctx, *grads)
    unpack = saved.unpack
    ctx._saved = _function.PackedSaves(
        vals, saved.is_packed,
        lambda p: p if isinstance(p, TensorBase) else unpack(p), ctx._tensor_mode)
    try:
        return bwd(ctx, *grads)
    finally:
        ctx._saved = saved


def _opmath_forward(fwd: Any) -> Any:
    def forward(ctx: Any, *args: Any) -> Any:
        half = None
        wide = {}  # id(float32 copy) -> the half input it was made from
        up = []
        for a in args:
            dt = getattr(a, "dtype", None)
            if dt is not None and dt.itemsize == 2 and dt.kind in "fV" and hasattr(a, "ndim"):
                half = dt
                w = _to_f32(a)
                wide[id(w)] = a
                a = w
            up.append(a)
        out = fwd(ctx, *up)
        if half is None:
            return out
        is_tuple = type(out) is tuple
        outs = out if is_tuple else (out,)
        rounded = tuple([round_half(o, half) for o in outs])
        saved = ctx._saved
        if saved:  # keep what PyTorch keeps: the half inputs, the rounded outputs
            by_id = {id(o): r for o, r in zip(outs, rounded)}
            ctx._saved = tuple([wide.get(id(s), by_id.get(id(s), s)) for s in saved])
        return rounded if is_tuple else rounded[0]

    return forward


def _opmath_backward(bwd: Any) -> Any:
    def backward(ctx: Any, *grads: Any) -> Any:
        if ctx._tensor_mode:  # under create_graph: ember's ops on half tensors (each rounds once)
            return bwd(ctx, *grads)
        saved = ctx._saved
        if saved:
            ctx._saved = tuple([wide(s) for s in saved])
        try:
            return _round_grads(ctx, bwd(ctx, *[wide(g) for g in grads]))
        finally:
            if saved:
                ctx._saved = saved

    return backward


def _half_gemm_backward(bwd: Any) -> Any:
    def backward(ctx: Any, *grads: Any) -> Any:
        if ctx._tensor_mode:  # under create_graph: ember's ops on half tensors, as opmath's
            return bwd(ctx, *grads)
        return _round_grads(ctx, bwd(ctx, *grads))

    return backward


def _round_grads(ctx: Any, out: Any) -> Any:
    """The float32 gradients of half inputs rounded to their dtype by the eager kernel (the
    engine's cast of each to its input's dtype, in one pass; the same values)."""
    meta = getattr(ctx, "_meta", None)  # ((shape, dtype) per input; None where not recorded)
    if not meta or _kernels.active is None:
        return out
    grads = out if type(out) is tuple else (out,)
    res = []
    for i, g in enumerate(grads):
        m = meta[i] if i < len(meta) else None
        if (m is not None and type(g) is np.ndarray and g.dtype == _F32
                and m[1].itemsize == 2 and g.shape == m[0]):
            r = None
            if g.size >= _kernels.ROUND_MIN and getattr(ctx._fn, "new_grads", False) \
                    and _cast_back_next(ctx, i):
                r = _kernels.half_round(g, m[1])  # rounds g in place: the op's own new array
            if r is None:
                r = _kernels.half_cast(g, m[1])
            g = g if r is None else r
        res.append(g)
    return tuple(res) if type(out) is tuple else res[0]


def _cast_back_next(ctx: Any, i: int) -> bool:
    """Whether input ``i``'s gradient flows to a cast from float32 with no hooks (autocast's
    cast of a float32 tensor): its backward casts the gradient straight back to float32."""
    edges = getattr(ctx, "_edges", None)
    if not edges or i >= len(edges):
        return False
    node = edges[i][0]
    if node is None or getattr(node, "_fn", None) is not Cast or node._pre_hooks is not None \
            or node._retain is not None:
        return False
    meta = node._meta[0] if node._meta else None
    return meta is not None and meta[1] == _F32


def _to_f32(a: Any) -> Any:
    """A float16/bfloat16 array as float32 (the eager kernel where it applies: one pass)."""
    out = _kernels.half_cast(a, _F32)
    return a.astype(_F32) if out is None else out


def _unary(cls: Any, x: Any) -> tuple[Any, Any]:
    """``_float_unary(x)`` and the class to apply to it: ``opmath(cls)`` for a float16/bfloat16
    ``x`` (for ops whose forward rounds more than once: ``1 / sqrt(x)``, sigmoid...)."""
    x = as_tensor_arg(x)
    dt = x._data.dtype
    if dt.kind not in "fV":
        if dt.kind == "c":
            return conjugated(cls), x
        return cls, cast(x, _dtype.get_default_dtype())
    return (opmath(cls) if dt.itemsize == 2 else cls), x


def _float_unary(x: Any) -> Any:
    """Math functions of integer tensors compute in the default float dtype, as in PyTorch;
    complex tensors are refused here (functions defined on them call ``_cunary``)."""
    x = as_tensor_arg(x)
    if x._data.dtype.kind not in "fV":
        if x._data.dtype.kind == "c":
            raise NotImplementedError(_not_complex(x))
        return cast(x, _dtype.get_default_dtype())
    return x


def _cunary(cls: Any, x: Any) -> tuple[Any, Any]:
    """The class to apply and its operand for a math function PyTorch defines on complex
    tensors (holomorphic: exp, log, sin...): ``conjugated(cls)`` for a complex ``x``; otherwise
    ``cls`` and ``_float_unary(x)`` (integers compute in the default float dtype)."""
    x = as_tensor_arg(x)
    k = x._data.dtype.kind
    if k == "c":
        return conjugated(cls), x
    if k not in "fV":
        return cls, cast(x, _dtype.get_default_dtype())
    return cls, x


def _not_complex(x: Any, name: str | None = None) -> str:
    """The error of an op that PyTorch does not define on complex tensors (it names the op's
    kernel: ``"erf_vml_cpu" not implemented for 'ComplexFloat'``)."""
    import inspect

    if name is None:  # the public function that called _float_unary
        frame = inspect.currentframe()
        for _ in range(3):
            frame = frame.f_back if frame is not None else None
            if frame is not None and not frame.f_code.co_name.startswith("_"):
                break
        name = frame.f_code.co_name if frame is not None else "this op"
    return (f"\"{name}\" not implemented for '{_dtype.legacy_name(x.dtype)}' (PyTorch has no "
            f"complex {name} either); apply it to x.real and x.imag, or to x.abs()")


def _refuse_complex(name: str, *args: Any) -> None:
    """NotImplementedError (PyTorch's class) if a tensor argument is complex: for the real-only
    ops whose NumPy kernels would otherwise raise a TypeError (fmod, copysign, signbit...)."""
    for a in args:
        if isinstance(a, TensorBase) and a._data.dtype.kind == "c":
            raise NotImplementedError(_not_complex(a, name))


def _promote_real(a: Any, b: Any, name: str) -> tuple[Any, Any]:
    """``_promote(a, b, to_float=True)`` for an op PyTorch defines on real numbers only (its
    kernel ``name``, e.g. ``"hypot_cpu"``): NotImplementedError for a complex operand."""
    _refuse_complex(name, a, b)
    return _promote(a, b, to_float=True)


def _unordered(x: Any, head: str, exc: type = NotImplementedError) -> Exception:
    """The error of an op that needs an order (lt, max, sort, clamp, floor...) on a complex
    tensor ``x``: PyTorch's class and message ``head`` (``{dt}``: the dtype's legacy name,
    'ComplexFloat'), then a way out."""
    return exc(head.replace("{dt}", _dtype.legacy_name(x.dtype)) + " (complex numbers have no "
               "order: apply it to x.abs(), x.real or x.imag)")


def _int_bounds(dt: Any) -> tuple[int, int, int]:
    info = np.iinfo(dt)
    return int(info.min), int(info.max), info.bits


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


def _out(result: Any, out: Any) -> Any:
    if out is None:
        return result
    out.copy_(result)
    return out


def _nograd(fn: Any, *args: Any) -> Any:
    """Apply a function with no gradient (integer or piecewise-constant results). Eager mode
    calls it directly; while compile traces a region it runs as a recorded op, so a comparison
    such as ``a > b`` feeding ``where`` replays from the region's values."""
    if _function.tracer is not None:
        with grad_mode.no_grad():
            return _NoGrad.apply(fn, *args)
    raw = [a._data if isinstance(a, TensorBase) else a for a in args]
    try:
        return TensorBase._make(fn(*raw))
    except ValueError:
        shapes = [tuple(r.shape) for r in raw if hasattr(r, "shape") and hasattr(r, "ndim")]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:  # PyTorch's error class for shapes that do not broadcast
            n = getattr(fn, "__name__", "")
            name = type(n if n.isidentifier() else "op", (), {})
            raise RuntimeError(_function._broadcast_message(name, raw)) from None
        raise


_INT_BOUNDS = {np.dtype(t): _int_bounds(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)}


try:  # np.errstate costs microseconds per use; setting NumPy's context variable directly does not
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ

    with np.errstate(**_QUIET):
        _QUIET_EXTOBJ = _EXTOBJ.get()
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
    _EXTOBJ = _QUIET_EXTOBJ = None
