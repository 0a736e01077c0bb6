"""How an in-place op runs (``x.add_(y)``, ``x[i] = v``, ``x.t_()``), PyTorch's rules in one place.

The new values are always written into the tensor's own memory, so its views, its base and
``numpy()`` arrays see them, and the version counter they share is bumped (a saved tensor modified
this way makes backward raise, as in PyTorch). Under autograd the op is also recorded: on a plain
tensor it becomes the tensor's ``grad_fn``; on a view, the base's history becomes "base with the
view's window replaced" (``CopySlices``) and the view becomes that window of the new base.
``Tensor``'s in-place methods are all ``inplace(t, <the out-of-place op>, ...)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend, _dtype, _threads
from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd import grad_mode
from ..autograd.function import (
    InplaceInputWindow,
    StridedScatter,
    StridedWindow,
    check_view_inplace,
    keep_recorded_shape,
    move_retain_grad,
    no_geometry,
    refresh_view,
    window_geometry,
)
from ..autograd.node import ViewOutput
from . import inplace_direct as _direct
from .casting import copy_from, fill, zero
from .indexing import getitem, index_fill, index_put, masked_fill, setitem

__all__ = ["inplace", "restride"]


# in-place ops PyTorch lets write into memory that several elements share (an expand()ed tensor)
_OVERLAP_OK = frozenset({fill, zero, masked_fill, setitem, index_fill, index_put})


def inplace(t: TensorBase, fn: Any, *args: Any, **kwargs: Any) -> TensorBase:
    """Run ``fn(t, *args)`` and make its result this tensor's new value, PyTorch-style.

    The new values are always written into this tensor's memory, so its views, its base and
    ``numpy()`` arrays see them, and the version counter they share is bumped (a saved
    tensor modified this way makes backward raise, as in PyTorch). When autograd is tracking
    (grad mode on and the tensor or an argument requires grad) the op is also recorded: on
    a plain tensor it becomes the tensor's ``grad_fn``; on a view, the base's history
    becomes "base with the view's window replaced" (``CopySlices``) and the view becomes
    that window of the new base."""
    base = t._base
    if base is not None and t._attr_version != t._version[0]:
        if grad_mode.state.enabled:
            refresh_view(t)
    if 0 in t._data.strides:
        if fn is setitem and _repeats(t._data):
            split = _split_key(t, args[0])
            if split is not None:  # x[basic] = v through repeated memory: PyTorch's two steps
                return _setitem_in_view(t, split, args[1])
        if fn not in _OVERLAP_OK and not (fn is copy_from and _same_view(t, args[0])):
            _check_no_overlap(t)  # (x.copy_(x) with x expanded copies nothing, as PyTorch's)
    if fn not in _OVERLAP_OK:
        _check_operands_overlap(t, args)
    tracking = grad_mode.state.enabled and (
        t._rg or (base is not None and base._rg)
        or any(isinstance(a, TensorBase) and (a._rg or (a._base is not None and a._base._rg))
               for a in args)  # (an operand that is a no_grad view requires grad, as PyTorch's)
    ) and t._data.dtype.kind in "fcV"  # an integer tensor never requires grad
    if not tracking:
        if _function.tracer is None and _direct.run(t, fn, args, kwargs):
            t._bump_version()  # (written straight into t's memory: the op's values, one pass)
            return t
        with grad_mode.no_grad():
            out = fn(t, *args, **kwargs)
        _check_inplace_result(t, out, fn)
        _write(t, out._data)
        t._bump_version()
        return t
    if base is not None:
        return _inplace_on_view(t, fn, args, kwargs)
    if t._rg and t._grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "(Update parameters inside `with torch.no_grad():`, or use an out-of-place "
            "op such as x = x + y.)"
        )
    # the everyday ops whose node keeps nothing of the old value write straight into this
    # tensor's memory (inplace_direct.record); any other runs on a snapshot (it may save its
    # input), and its result is written back into that memory
    out = _direct.record(t, fn, args, kwargs) if _function.tracer is None else None
    if out is None:
        out = fn(_snapshot(t), *args, **kwargs)
        _check_inplace_result(t, out, fn)
        _write(t, out._data)
    old_fn = t._grad_fn
    t._grad_fn = out._grad_fn
    t._output_nr = out._output_nr
    t._rg = out._rg
    t._bump_version()
    _adopt_saved_output(out, t)
    move_retain_grad(t, old_fn)
    return t


def restride(t: TensorBase, fn: Any, *args: Any) -> TensorBase:
    """In-place view ops (``t_``, ``squeeze_``...): this tensor becomes the view of itself,
    in the same memory; its version is bumped, as in PyTorch (a saved copy of it is stale)."""
    if grad_mode.state.enabled and (t._rg or (t._base is not None and t._base._rg)):
        if t._base is not None:
            check_view_inplace(t, t._base)
        elif t._grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation. "
                "(Change a parameter's shape inside `with torch.no_grad():`, or use the "
                "out-of-place form, e.g. x = x.t().)"
            )
    out = fn(t, *args)
    if out._grad_fn is not None:
        t._grad_fn, t._output_nr, t._rg = out._grad_fn, out._output_nr, out._rg
    elif t._grad_fn is not None and t._base is None and out._data.shape != t._data.shape:
        keep_recorded_shape(t, t._data.shape)  # its node's gradients keep the old shape
    t._data = out._data
    t._bump_version()
    if t._base is not None and out._grad_fn is not None:
        t._attr_version = t._version[0]  # its new grad_fn already describes it
    # (under no_grad a view keeps a stale grad_fn: it is re-derived from the base when read)
    return t


def _inplace_on_view(t: TensorBase, fn: Any, args: tuple, kwargs: dict) -> TensorBase:
    """An in-place op on a view while autograd tracks (PyTorch's CopySlices): the base
    becomes "base with the view's window replaced by fn(view)", and the view becomes that
    window of the new base, so gradients flow through both."""
    base = t._base
    check_view_inplace(t, base)
    geom = window_geometry(base._data, t._data)
    if geom is None:
        no_geometry(t, base)
    old_fn = t._grad_fn
    old_base_fn = base._grad_fn
    old_base = TensorBase._make(base._data, base._rg, old_base_fn, base._output_nr)
    if old_base._rg:  # the op reads the view as the window of the base's history, as
        snapshot = InplaceInputWindow.apply(old_base, geom)  # PyTorch's CopySlices does: the
        snapshot._data = t._data.copy()  # view's own chain (and hooks on it) is not in the graph
    else:
        snapshot = TensorBase._make(t._data.copy(), t._rg, old_fn, t._output_nr)
    new_view = fn(snapshot, *args, **kwargs)
    _check_inplace_result(t, new_view, fn)
    if old_base._rg and old_fn is not None:
        _saved_input_is_the_view(new_view, snapshot, old_fn, t._output_nr)
    new_base = StridedScatter.apply(old_base, new_view, geom)
    base._data[...] = new_base._data  # the view's values change in memory too
    base._grad_fn, base._output_nr, base._rg = new_base._grad_fn, 0, new_base._rg
    t._bump_version()
    window = StridedWindow.apply(base, geom)
    t._grad_fn, t._output_nr, t._rg = window._grad_fn, 0, window._rg
    t._attr_version = t._version[0]
    _adopt_saved_output(new_view, t)
    _saved_output_is_the_view(new_view, window._grad_fn)
    move_retain_grad(t, old_fn)
    move_retain_grad(base, old_base_fn)
    return t


def _saved_input_is_the_view(out: TensorBase, snapshot: TensorBase, view_fn: Any,
                             nr: int) -> None:
    """The op saved its input (``pow_`` does): PyTorch saves a clone of the view, so under
    ``create_graph`` that saved value has the view's own history before the op (its chain, and
    a hook or ``retain_grad()`` on it, see the double-backward gradient), not the base's window
    the first-order gradient takes."""
    fn = out._grad_fn
    src = getattr(fn, "_saved_src", None) if fn is not None else None
    if src and any(s is snapshot for s in src):
        view = TensorBase._make(snapshot._data, True, view_fn, nr)
        fn._saved_src = [view if s is snapshot else s for s in src]


def _saved_output_is_the_view(out: TensorBase, view_fn: Any) -> None:
    """The op saved its result (``tanh_`` does), which lives on in the view: under
    ``create_graph`` that saved value has the view's history (PyTorch's), not the op's own node."""
    fn = out._grad_fn
    src = getattr(fn, "_saved_src", None) if fn is not None else None
    if src and view_fn is not None:
        nr = out._output_nr
        fn._saved_src = [ViewOutput(view_fn, nr) if type(s) is int and s == nr else s
                         for s in src]


def _split_key(t: TensorBase, key: Any) -> tuple | None:
    """``key`` as PyTorch's ``x[key] = v`` applies it: ``(basic, advanced)``, the basic part
    (integers, slices, None, Ellipsis, bools; advanced items kept as full slices) that takes a
    view first, and the advanced part (None when there is none) indexed into that view. None
    when the write goes to the whole tensor through an advanced index or a bool."""
    items = key if type(key) is tuple else (key,)
    basic: list = []
    adv: list = []
    has_adv = False
    trivial = True
    for it in items:
        if isinstance(it, (bool, np.bool_)):
            return None  # (x[True] = v: the write goes to the whole tensor)
        if it is None or it is Ellipsis:
            basic.append(it)
            adv.append(Ellipsis if it is Ellipsis else slice(None))
            trivial = trivial and it is Ellipsis
        elif type(it) is slice:
            basic.append(it)
            adv.append(slice(None))
            trivial = trivial and it == slice(None)
        elif isinstance(it, (int, np.integer)):
            basic.append(it)  # (select: the dim is gone from the view)
            trivial = False
        else:  # a tensor, list or array: advanced, applied to the view
            nd = it.ndim if isinstance(it, TensorBase) and it.dtype == _dtype.bool_ else 1
            basic.extend([slice(None)] * nd)
            adv.append(it)
            has_adv = True
    if trivial:
        return None if has_adv else ((), None)  # x[:] = v: a copy into t itself
    return tuple(basic), (tuple(adv) if has_adv else None)


def _setitem_in_view(t: TensorBase, split: tuple, value: Any) -> TensorBase:
    """``t[key] = value`` on a tensor whose memory repeats (an ``expand()``ed view), as PyTorch
    runs it: ``t[basic]`` is taken as a view and the value is copied into it (refused when that
    view itself repeats memory, as ``copy_`` is), or index-put into it for an advanced part.
    So ``b.unsqueeze(0).expand(2, n)[0] = v`` writes ``b`` once and its gradient flows."""
    basic, adv = split
    view = getitem(t, basic) if basic else t
    if adv is not None:
        view[adv] = value
        return t
    _check_no_overlap(view)
    inplace(view, setitem, Ellipsis, value)
    return t


def _same_view(t: TensorBase, src: Any) -> bool:
    """Whether ``src`` is the same memory as ``t``, element for element (same start, shape and
    strides): PyTorch's ``copy_`` then returns at once."""
    if not isinstance(src, TensorBase):
        return False
    return _same_memory(t._data, src._data)


def _same_memory(a: Any, b: Any) -> bool:
    """Arrays ``a`` and ``b`` are the same view of one memory, as PyTorch compares them (same
    start, shape and strides, size-1 dims' too: views carry PyTorch's strides there, so
    ``s.unsqueeze(0).expand(2, -1)[-1]`` is ``s``'s view, and ``c[::2]`` of a 1-element ``c``
    or ``c0.expand(1)`` of a 0-d ``c0`` beside ``c0.reshape(1)`` are not)."""
    if a is b:
        return True
    if a.shape != b.shape or _backend.address(a) != _backend.address(b):
        return False
    return a.strides == b.strides


def _repeats(d: Any) -> bool:
    """Whether several elements of array ``d`` are one memory location (``expand()``)."""
    return d.size > 1 and any(s == 0 and n > 1 for s, n in zip(d.strides, d.shape))


def _check_no_overlap(t: TensorBase) -> None:
    d = t._data
    if _repeats(d):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            f"single memory location (shape {tuple(d.shape)}, stride {t.stride()}: made by "
            "expand() or broadcast_to()). Please clone() the tensor before performing the "
            "operation."
        )


def _check_operands_overlap(t: TensorBase, args: tuple) -> None:
    d = t._data
    for a in args:
        if (isinstance(a, TensorBase) and a._data is not d and _backend.partial_overlap(d, a._data)
                and not _same_memory(d, a._data)):
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                f"performing the operation. (The in-place op writes a tensor of shape "
                f"{tuple(d.shape)} while reading an argument of shape {tuple(a._data.shape)} that "
                "views the same memory differently, e.g. x.mul_(x.t()): use x.mul_(x.t().clone()).)"
            )


def _snapshot(t: TensorBase) -> TensorBase:
    """t's value before a tracked in-place op, as a tensor of its own with t's history (the op
    may save it). A separate function so compile's tracer sees it (``_compile/trace.py``)."""
    return TensorBase._make(t._data.copy(), t._rg, t._grad_fn, t._output_nr)


def _write(t: TensorBase, arr: Any) -> None:
    """Put ``arr``'s values into t's memory (or take ``arr`` when t's memory is read-only)."""
    d = t._data
    if arr is d:
        return
    if d.flags.writeable:
        if d.size > 1 and 0 in d.strides:  # expand()ed memory (fill_, x[i] = v...): write only
            changed = arr != d  # what changed, or unchanged copies would overwrite it
            d[changed] = arr[changed]
            return
        if d.size >= _threads.cut_arith and type(d) is np.ndarray and type(arr) is np.ndarray \
                and arr.dtype == d.dtype:
            _threads.run_into(_threads.copy_into, d, arr)  # (large: over the threads)
        else:
            d[...] = arr
    else:
        t._data = arr.astype(d.dtype, copy=True) if arr.dtype != d.dtype else arr


def _adopt_saved_output(out: TensorBase, t: TensorBase) -> None:
    """An in-place op's own result lives on in ``t``: if the op saved it for backward (``exp_``
    saves its result), a later in-place change of ``t`` must fail that backward, as in PyTorch."""
    fn = out._grad_fn
    if fn is None or fn._saved is None:
        return
    od, td = out._data, t._data
    if od is not td and od.shape == td.shape and any(v is od for v in fn._saved):
        # the saved result is t's own memory from now on (as in PyTorch), not a second copy
        fn._saved = tuple([td if v is od else v for v in fn._saved])
    own = out._version
    if own is None or fn._versions is None:
        return
    counter = t._version
    now = counter[0]
    fn._versions = [(counter, now, k) if c is own else (c, seen, k) for c, seen, k in fn._versions]


def _check_inplace_result(t: TensorBase, out: TensorBase, fn: Any) -> None:
    if out._data.shape != t._data.shape:
        raise RuntimeError(
            f"output with shape {list(t._data.shape)} doesn't match the broadcast shape "
            f"{list(out._data.shape)} (in-place {getattr(fn, '__name__', 'op')}_ on a tensor of "
            f"shape {tuple(t._data.shape)}); use the out-of-place form, which can grow the shape"
        )
    if out._data.dtype != t._data.dtype:
        src, dst = _dtype.from_numpy(out._data.dtype), _dtype.from_numpy(t._data.dtype)
        if dst.is_complex and getattr(fn, "__name__", "") == "abs":  # (|z| is real)
            raise RuntimeError("In-place abs is not supported for complex tensors (a "
                               f"{dst} tensor); use z.abs(), which returns a real tensor")
        if not _dtype.can_cast(src, dst):
            raise RuntimeError(
                f"result type {_dtype.legacy_name(src)} can't be cast to the desired output type "
                f"{_dtype.legacy_name(dst)} (in-place {getattr(fn, '__name__', 'op')}_ on a {dst} "
                f"tensor); convert the tensor first, e.g. x = x.float()"
            )
        out._data = out._data.astype(t._data.dtype)
