"""``Function``: one differentiable operation, forward and backward side by side.

Every built-in op is an ``Op`` (a ``Function`` whose methods see arrays), and a user's custom op is
a ``Function`` (whose methods see tensors, as in PyTorch). ``Function.apply`` unwraps tensors,
checks devices, runs ``forward`` and, only when grad mode is on and an input requires grad,
records a ``Node`` (the ``ctx`` both methods receive) that ``backward`` will call.

Under ``create_graph=True`` a built-in op's ``backward`` sees tensors too, and ``ctx.xp`` is
ember's NumPy-like namespace of differentiable ops (``Op.tensor_xp``, registered by ``ember.ops``),
so the same rule records a graph for higher-order gradients.

Views live here too (the second half of this file): an op with ``is_view`` shares its input's
memory and version counter, and a view whose base changed in place gets its history re-derived
as a window of the base (``StridedWindow``, PyTorch's ``AsStridedBackward0``).
"""

from __future__ import annotations

import functools
import sys
import traceback
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import _backend, _native_core
from .._backend import CPU_ARRAY
from .._tensor_base import TensorBase
from . import grad_mode
from .node import FREED_MSG, NOT_INPUT, AccumulateGrad, Node, RemovableHandle

__all__ = ["Function", "FunctionCtx", "Op", "Node", "AccumulateGrad", "RemovableHandle", "FREED_MSG",
           "once_differentiable"]

anomaly_enabled = False  # set by ember.autograd.anomaly_mode.detect_anomaly
# While ``compile`` traces a region, the recorder it installs here sees every op that runs:
# ``tracer.record(cls, ctx, args, raw, outputs)`` after the op has made its outputs.
tracer: Any = None

# torch.autograd.graph.saved_tensors_hooks: the active (pack, unpack) pairs, innermost last.
# While one is active, ember._native's Function.apply hands every call to the Python one, which
# packs what each node saved (_pack_saved).
saved_hooks: list = []


class FunctionCtx(Node):
    """The ``ctx`` a custom Function's ``forward`` and ``backward`` receive (PyTorch's
    ``torch.autograd.function.FunctionCtx``): ``save_for_backward``, ``saved_tensors``,
    ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``, ``needs_input_grad``.
    A custom Function's ``grad_fn`` is one; a built-in op's is a plain ``Node``."""

    __slots__ = ()


class FunctionMeta(type):
    """Gives each Function its node class, named as PyTorch names it (``MulBackward0``)."""

    def __init__(cls, name: str, bases: tuple, ns: dict) -> None:
        super().__init__(name, bases, ns)
        node_name = ns.get("node_name") or (
            f"{name}Backward0" if cls.__module__.startswith("ember.") else f"{name}Backward"
        )
        base = FunctionCtx if cls._tensor_io else Node  # type: ignore[attr-defined]
        cls._node_cls = type(node_name, (base,), {"__slots__": (), "_fn": cls})
        # PyTorch 2's split form: forward(*args) without ctx, then setup_context(ctx, inputs,
        # output) (what torch.func needs); Function's own placeholder is reset below
        cls._split_ctx = "setup_context" in ns or any(getattr(b, "_split_ctx", False)
                                                      for b in bases)


class Function(metaclass=FunctionMeta):
    """Base class of differentiable operations.

    Subclass it with two static methods, as in PyTorch::

        class Exp(ember.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

        Exp.apply(t)
    """

    _tensor_io = True  # user Functions see tensors; built-in ops (ember.autograd.function.Op) see arrays
    is_view = False  # outputs share the first input's storage (and version counter)
    _node_cls: Any = Node

    @staticmethod
    def forward(ctx: Node, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Node, *grads: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx: Node, inputs: tuple, output: Any) -> None:
        """The split form's second half: given forward's inputs and output, save on ``ctx`` what
        backward needs (forward then takes no ctx, as in PyTorch 2)."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> Any:
        raw = []
        requires = False
        on_cpu = True
        enabled = grad_mode.state.enabled
        for a in args:
            if isinstance(a, TensorBase):
                d = a._data
                if enabled:
                    base = a._base
                    if base is not None:  # (no history is read under no_grad)
                        if a._attr_version != a._version[0]:
                            refresh_view(a)  # its base changed in place since the view was recorded
                        if base._rg and not a._rg:  # a view made under no_grad: the result
                            requires = True  # requires grad, but no gradient flows back (PyTorch)
                if a._rg:
                    requires = True
                if type(d) is not CPU_ARRAY:
                    on_cpu = False
                raw.append(d)
            else:
                raw.append(a)
        moved = _check_devices(cls, args, raw) if not on_cpu else None
        record = requires and enabled
        # (Node.__init__'s fields, stored here without a Python-level call: this runs per op)
        ctx = _new_node(cls._node_cls)
        ctx._saved = None
        ctx._versions = None
        ctx._n_out = 1
        if moved:
            ctx._grads_to_cpu = moved
        ctx.xp = np if on_cpu else _xp_of_args(raw)
        if record:
            # needs_input_grad, the edges and the inputs' metadata in one pass
            flags = []
            edges = []
            meta = []
            for a in args:
                if isinstance(a, TensorBase) and a._rg:
                    flags.append(True)
                    fn = a._grad_fn
                    if fn is not None:
                        edges.append((fn, a._output_nr))
                    else:
                        ref = a._accum  # the leaf's AccumulateGrad (_accumulator, inlined)
                        acc = ref() if ref is not None else None
                        edges.append((acc if acc is not None else _accumulator(a), 0))
                    d = a._data
                    meta.append((d.shape, d.dtype))
                else:
                    flags.append(False)
                    edges.append(_NO_EDGE if isinstance(a, _EDGE_TYPES)
                                 and a is not True and a is not False else NOT_INPUT)
                    meta.append(None)
            ctx.needs_input_grad = tuple(flags)
        else:
            ctx._edges = ()
            n = len(args)
            ctx.needs_input_grad = _NO_GRADS[n] if n < 8 else (False,) * n

        if cls._tensor_io:  # a user's Function: its forward sees (and returns) tensors
            if record:
                ctx._edges = tuple(edges)
                ctx._meta = meta
            return _apply_tensor_io(cls, ctx, args, raw, record)
        try:
            out = cls.forward(ctx, *raw)
        except ValueError as e:
            if "broadcast" in str(e):
                raise RuntimeError(_broadcast_message(cls, raw)) from None
            raise
        is_tuple = type(out) is tuple
        outs_raw = out if is_tuple else (out,)

        if not record:
            if is_tuple:
                outputs = [_make(o) if o is not None else None for o in outs_raw]
            else:
                outputs = [_make(outs_raw[0])]
            if cls.is_view:
                _share_version(args[0], outputs, is_tuple)
            if tracer is not None:
                tracer.record(cls, ctx, args, raw, outputs)
            return tuple(outputs) if is_tuple else outputs[0]

        # -- record the node --------------------------------------------------------------
        ctx._edges = tuple(edges)
        ctx._meta = meta
        if not is_tuple and ctx._non_diff is None:
            outputs = [_make(outs_raw[0], True, ctx, 0)]
        else:
            non_diff = ctx._non_diff
            outputs = []
            for k, o in enumerate(outs_raw):
                if o is None:
                    outputs.append(None)
                    continue
                differentiable = non_diff is None or id(o) not in non_diff
                outputs.append(_make(o, differentiable, ctx if differentiable else None, k))
            if is_tuple:
                ctx._n_out = len(outs_raw)
                ctx._out_meta = tuple([(o.shape, o.dtype) if o is not None else None for o in outs_raw])
        if cls.is_view:
            _share_version(args[0], outputs, is_tuple)
        if ctx._saved:
            _track_saved(ctx, args, raw, outs_raw, outputs)
            if saved_hooks:
                _pack_saved(ctx)
        if anomaly_enabled:
            ctx._trace = _user_stack()
        if tracer is not None:
            tracer.record(cls, ctx, args, raw, outputs)
        return tuple(outputs) if is_tuple else outputs[0]

Function._split_ctx = False  # (its setup_context is the placeholder that raises)


class Op(Function):
    """A built-in operation: ``forward``/``backward`` see backend arrays, not tensors."""

    _tensor_io = False
    # ember's NumPy-like namespace of differentiable ops (``ember.ops._xp``): ``ctx.xp`` while a
    # backward rule runs under create_graph. The ops sit above autograd, so ``ember.ops``
    # registers it here when it loads, rather than autograd importing upward.
    tensor_xp: ClassVar[Any] = None

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a custom Function's ``backward`` that cannot itself be differentiated (it may
    work on arrays): it runs under ``no_grad``, and a double backward through its result (after
    ``create_graph=True``) raises instead of silently giving a wrong second derivative."""

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with grad_mode.no_grad():
            out = backward(ctx, *grads)
        if not grad_mode.state.enabled or not any(
                isinstance(g, TensorBase) and g._rg for g in grads):
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        # fresh leaves that require grad, through a node whose backward raises
        marked = _OnceDifferentiable.apply(*[
            _make(o._data, True) if isinstance(o, TensorBase) else None for o in outs])
        res = tuple([m if isinstance(o, TensorBase) else o for m, o in zip(marked, outs)])
        return res[0] if single else res

    return wrapper


class _OnceDifferentiable(Op):
    """out = the gradients a ``@once_differentiable`` backward returned
    backward: raises (PyTorch's DelayedError)"""

    node_name = "Error"  # PyTorch prints it as <Error>

    @staticmethod
    def forward(ctx: Any, *grads: Any) -> Any:
        return grads

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable "
            "(its backward ran under create_graph=True; remove the decorator and write backward "
            "with differentiable tensor ops to get higher-order gradients)")


def _apply_tensor_io(cls: Any, ctx: Node, args: tuple, raw: list, record: bool) -> Any:
    """The rest of ``Function.apply`` for a user's Function: run its forward on tensors and hand
    back the very tensors it returned, now carrying this node as their ``grad_fn`` (attributes
    set on them in forward survive, as in PyTorch). An input returned as-is comes back as a new
    view of it; an input marked dirty comes back itself, one version newer; a tensor that is a
    view comes back as a view that in-place ops refuse (the custom backward would be bypassed).
    Non-tensor outputs (and a list, which PyTorch does not unpack) pass through untouched."""
    with grad_mode.no_grad():
        if cls._split_ctx:  # forward(*args), then setup_context(ctx, inputs, output)
            out = cls.forward(*args)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args)
    is_tuple = isinstance(out, tuple)  # a namedtuple comes back as a plain tuple (PyTorch)
    outs = tuple(out) if is_tuple else (out,)
    if ctx._saved is not None:
        ctx._saved = tuple([s._data if isinstance(s, TensorBase) else s for s in ctx._saved])
    non_diff = ctx._non_diff
    dirty = ctx._dirty
    outputs = list(outs)
    outs_raw: list = [None] * len(outs)
    for k, o in enumerate(outs):
        if not isinstance(o, TensorBase):
            continue
        if dirty is not None and id(o) in dirty:
            if record:
                _check_dirty(ctx, o)
            o._bump_version()
        elif any(o is a for a in args):
            o = outputs[k] = _alias(o)
        elif o._base is not None:
            _custom_view(o)
        outs_raw[k] = o._data
        if record:
            if (non_diff is None or id(outs[k]) not in non_diff) and o._data.dtype.kind in "fcV":
                o._grad_fn, o._output_nr, o._rg = ctx, k, True
            elif o._grad_fn is ctx:  # returned twice, once marked non-differentiable
                o._grad_fn, o._rg = None, False
    if record:
        if is_tuple:
            ctx._n_out = len(outs)
            ctx._out_meta = tuple([(r.shape, r.dtype) if r is not None else None for r in outs_raw])
        if ctx._saved:
            _track_saved(ctx, args, raw, tuple(outs_raw), outputs)
            if saved_hooks:
                _pack_saved(ctx)
        if anomaly_enabled:
            ctx._trace = _user_stack()
    if tracer is not None:
        tracer.record(cls, ctx, args, raw, outputs)
    return tuple(outputs) if is_tuple else outputs[0]


def _check_dirty(ctx: Node, t: TensorBase) -> None:
    """``ctx.mark_dirty(x)`` under autograd: what PyTorch refuses, and what ember cannot track."""
    if t._rg and t._grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            f"({type(ctx).__name__} marked a leaf tensor of shape {tuple(t._data.shape)} "
            "dirty: clone() it before passing it in.)")
    if t._base is not None:
        raise RuntimeError(
            f"{type(ctx).__name__}: mark_dirty() on a view of another tensor is not "
            "supported by ember under autograd; pass the tensor itself (or a clone).")


def _custom_view(view: TensorBase) -> TensorBase:
    """Mark a custom Function's output as PyTorch's view "created inside a custom Function":
    in-place changes to it, or to its base once it is used, raise."""
    view._view_kind = CUSTOM_FUNCTION
    view._attr_version = view._version[0]
    return view


def _alias(x: TensorBase) -> TensorBase:
    """An input a custom Function returned as-is: a new tensor showing the same memory, with
    the same version counter; a view of ``x`` (under no_grad PyTorch makes it a plain alias)."""
    t = _make(x._data)
    t._version = x._version_counter()
    if grad_mode.state.enabled:
        t._base = x._base if x._base is not None else x
        _custom_view(t)
    return t


def _user_stack() -> list[str]:
    """The formatted stack of the code that called into ember, innermost last: frames are
    recognised as ember's by their module's name, not by their file's path (a clone of the
    project may sit in any folder, including one called ``ember``)."""
    frames = []
    f = sys._getframe(2)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name == "ember" or name.startswith("ember.")):
            frames.append((f, f.f_lineno))
        f = f.f_back
    frames.reverse()
    return traceback.StackSummary.extract(frames).format()


def _share_version(first: Any, outputs: list, multi: bool = False) -> None:
    """Views share their base's memory and version counter, and remember the base (the first
    tensor of the chain that is not a view) and how they were made, for in-place ops later."""
    counter = first._version_counter()
    base = first._base
    if not grad_mode.state.enabled:
        kind = NO_GRAD_VIEW
    elif multi:  # PyTorch's rule: such views of a tensor that needs no grad count as no-grad too
        kind = MULTI_OUTPUT if first._rg or (base is not None and base._rg) else (
            MULTI_OUTPUT | NO_GRAD_VIEW)
    else:
        kind = 0
    if base is None:
        base = first
    else:  # PyTorch's rule: the newest view's own kind wins, else it inherits its base's
        kind = kind or first._view_kind
    now = counter[0]
    for t in outputs:
        if t is not None:
            t._version = counter
            t._base = base
            if now:
                t._attr_version = now
            if kind:
                t._view_kind = kind


def internal_view(t: TensorBase) -> TensorBase:
    """Make ``t``, an op's fresh result that autograd did not record, a view of a hidden tensor
    over the same memory, as PyTorch returns some results (``einsum`` with a contraction,
    ``linear`` of a batch with a bias) as a view of the op's own temporary: views taken of ``t``
    later show that temporary, so ``t.requires_grad_()`` leaves them alone, and ``t`` made under
    no_grad refuses an in-place op that autograd would track. Returns ``t``."""
    _share_version(_make(t._data), [t])
    return t


def link_view(first: Any, out: Any) -> Any:
    """Mark ``out`` (made without ``apply``) as a view of ``first``; returns ``out``."""
    _share_version(first, [out])
    return out


_NO_GRADS = [(False,) * n for n in range(8)]


def _no_grads(n: int) -> tuple:
    return _NO_GRADS[n] if n < 8 else (False,) * n


_NO_EDGE = (None, 0)
# arguments that take an edge slot (a tuple: isinstance() on a union type is 5x slower)
_EDGE_TYPES = (TensorBase, float, int)
_make = TensorBase._make
_new_node = object.__new__


def _track_saved(ctx: Node, args: tuple, raw: list, outs_raw: tuple, outputs: list) -> None:
    """Remember where each saved array came from (for version checks and double backward):
    an input tensor, an output index, or None for an intermediate array."""
    src = []
    versions = []
    scalars = []
    k = 0
    n = len(raw)
    for s in ctx._saved:
        found: Any = None
        if s is not None:
            # an op saves its arguments in order, so the k-th argument is tried first: two
            # arguments sharing one array (y and y.detach()) then keep their own histories
            if k < n and raw[k] is s and isinstance(args[k], TensorBase):
                i = k
            else:
                i = 0
                for r in raw:
                    if r is s and isinstance(args[i], TensorBase):
                        break
                    i += 1
            if i < n:
                found = args[i]
                counter = found._version
                if counter is None:
                    counter = found._version = [0]
                versions.append((counter, counter[0], k))
            else:
                j = 0
                for o in outs_raw:
                    if o is s:
                        found = j
                        t = outputs[j]
                        if t is not None:
                            counter = t._version
                            if counter is None:
                                counter = t._version = [0]
                            versions.append((counter, counter[0], k))
                            if t._data is not s:  # a NumPy scalar the output holds as a 0-d
                                scalars.append((k, t._data))  # array: save that array
                        break
                    j += 1
        src.append(found)
        k += 1
    if scalars:  # (so a write through y.data reaches backward, as PyTorch's saved output does)
        saved = list(ctx._saved)
        for k, arr in scalars:
            saved[k] = arr
        ctx._saved = tuple(saved)
    ctx._saved_src = src
    ctx._versions = versions or None


class PackedSaves:
    """A node's saved values after ``saved_tensors_hooks``' pack hook took them: what pack
    returned, unpacked on each access (``a, b = self._saved`` in a backward), as PyTorch
    unpacks a saved tensor each time backward reads it. Values that are no tensor (a Python
    number an op keeps, None) are kept as they are, as PyTorch keeps scalars."""

    __slots__ = ("packed", "is_packed", "unpack", "tensor_mode")

    def __init__(self, packed: list, is_packed: list, unpack: Any, tensor_mode: bool) -> None:
        self.packed, self.is_packed = packed, is_packed
        self.unpack, self.tensor_mode = unpack, tensor_mode

    def __len__(self) -> int:
        return len(self.packed)

    def tensors(self) -> tuple:
        """As ``Node._saved_as_tensors``: every value a tensor (a kept number too)."""
        return tuple([self.unpack(p) if k else (None if p is None else _make(p))
                      for p, k in zip(self.packed, self.is_packed)])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        p = self.packed[i]
        if not self.is_packed[i]:
            return p
        t = self.unpack(p)
        return t if self.tensor_mode or not isinstance(t, TensorBase) else t._data

    def __iter__(self) -> Any:
        return iter([self[i] for i in range(len(self.packed))])


def _pack_saved(ctx: Node) -> None:
    """Hand each saved tensor or array to the innermost pack hook (as a tensor: the input or
    output itself when it is one, else a tensor over the array) and keep what it returns."""
    pack, unpack = saved_hooks[-1]
    tensors = ctx._saved_as_tensors()
    packed, is_packed = [], []
    for raw, t in zip(ctx._saved, tensors):
        k = raw is not None and hasattr(raw, "shape") and hasattr(raw, "dtype")
        packed.append(pack(t) if k else raw)
        is_packed.append(k)
    ctx._saved = PackedSaves(packed, is_packed, unpack, ctx._tensor_mode)


def _broadcast_message(cls: Any, raw: list) -> str:
    shapes = [tuple(r.shape) for r in raw if hasattr(r, "shape") and hasattr(r, "ndim")]
    detail = ""
    if len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        for i in range(1, min(len(a), len(b)) + 1):
            if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
                dim = max(len(a), len(b)) - i
                detail = (f"The size of tensor a ({a[-i]}) must match the size of tensor b "
                          f"({b[-i]}) at non-singleton dimension {dim}. ")
                break
    listed = " and ".join(str(s) for s in shapes)
    return (f"{detail}{cls.__name__.lower()}: shapes {listed} do not broadcast. Shapes broadcast "
            "when, aligned from the right, each pair of sizes is equal or one of them is 1; "
            "reshape one operand (e.g. x.unsqueeze(-1), x.view(-1, 1)) so they line up.")


def _accumulator_python(leaf: Any) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, shared by every op that uses the leaf in this graph
    (``_accumulator``; made again for each graph once the last one is gone, so it is in C in the
    native core)."""
    ref = leaf._accum
    acc = ref() if ref is not None else None
    if acc is None:
        acc = _new_node(AccumulateGrad)  # (AccumulateGrad.__init__'s fields, without the call)
        acc._edges = ()
        acc._saved = None
        acc._versions = None
        acc._n_out = 1
        acc.variable = leaf
        acc.shape = leaf._data.shape
        leaf._accum = weakref.ref(acc)
    return acc


_accumulator = _accumulator_python


def _xp_of_args(raw: list) -> Any:
    for r in raw:
        if _backend.is_array(r):
            return _backend.xp_of(r)
    return np


def _check_devices(cls: Any, args: tuple, raw: list) -> tuple[int, ...] | None:
    """All tensor arguments on one device (0-d CPU tensors may join a CUDA op, as in PyTorch).
    Returns the positions of the 0-d CPU tensors moved to the op's device: their gradients go
    back to the CPU in backward, as PyTorch's engine does."""
    devs = []
    for i, a in enumerate(args):
        if isinstance(a, TensorBase):
            devs.append((i, _backend.device_of(raw[i]), a))
    main = [(d, a) for i, d, a in devs if not (d.type == "cpu" and a._data.ndim == 0)]
    if not main:
        return None
    moved = []
    # the device to move to: the parameters' (leaves that require grad), else the first tensor's
    params = [d for d, a in main if a._rg and a._grad_fn is None]
    target = params[0] if params else main[0][0]
    for i, d, a in devs:
        if d != target:
            if d.type == "cpu" and a._data.ndim == 0:
                raw[i] = _backend.to_device(raw[i], target)
                moved.append(i)
                continue
            described = ", ".join(
                f"arg {j}: shape {tuple(t._data.shape)} on {dd}" for j, dd, t in devs
            )
            name = cls._node_cls.__name__.removesuffix("Backward0").removesuffix("Backward")
            where = "the model's parameters are" if params else "the first tensor is"
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{target} and {d}! ({name}: {described}). {where.capitalize()} on {target}: "
                f"move the other tensors there, e.g. x = x.to({str(target)!r}) for each batch, "
                "or move the model once with model.to(device)."
            )
    return tuple(moved) or None


# =============================================================================================
# Views: memory shared with a base, and the history of a view whose base changed in place

MULTI_OUTPUT = 1  # view kinds (tensor._view_kind): made by an op returning several views
NO_GRAD_VIEW = 2  # made while grad mode was off
CUSTOM_FUNCTION = 4  # a custom Function's output that is a view (or an input returned as-is)


def _in_memory_order(arr: Any, xp: Any, perm: tuple) -> Any:
    """``arr``'s elements as a flat array in the memory order of a base laid out as ``perm``
    (the base's dims from largest stride to smallest). For the base itself this is a view of
    its memory; for a gradient (any layout, broadcast included) it is a copy in that order."""
    t = arr if perm == tuple(range(arr.ndim)) else arr.transpose(perm)
    return xp.ascontiguousarray(t).reshape(-1)


def _window(flat: Any, xp: Any, shape: tuple, strides: tuple, offset: int) -> Any:
    """The strided window of a flat array (strides and offset in elements)."""
    item = flat.itemsize
    return xp.lib.stride_tricks.as_strided(
        flat[offset:], shape=shape, strides=tuple(s * item for s in strides)
    )


def _from_memory_order(flat: Any, shape: tuple, perm: tuple) -> Any:
    """Inverse of ``_in_memory_order``: the flat memory as an array of ``shape``."""
    if perm == tuple(range(len(shape))):
        return flat.reshape(shape)
    permuted = flat.reshape(tuple(shape[p] for p in perm))
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return permuted.transpose(inverse)


def window_geometry(base: Any, view: Any) -> tuple | None:
    """Where ``view`` lies in ``base``'s memory: ``(perm, shape, strides, offset)``, with strides
    and offset in elements of the base's memory block, or None when that cannot be expressed.

    The base may have any dense layout (C-contiguous, or a permutation of it, as NumPy gives
    for elementwise ops on transposed inputs): ``perm`` orders its dims by decreasing stride."""
    if base.dtype != view.dtype:
        return None
    item = base.itemsize
    if any(s < 0 or s % item for s in base.strides) or any(s < 0 or s % item for s in view.strides):
        return None
    perm = tuple(sorted(range(base.ndim), key=lambda d: (-base.strides[d], d)))
    if not (base.transpose(perm).flags.c_contiguous if base.ndim else True):
        return _logical_window(base, view)
    off, rem = divmod(_backend.address(view) - _backend.address(base), item)
    extent = off + sum((n - 1) * (s // item) for n, s in zip(view.shape, view.strides)) + 1
    if rem or off < 0 or (view.size and extent > max(base.size, 1)):
        return None
    return perm, tuple(view.shape), tuple(s // item for s in view.strides), int(off)


def _element_offsets(a: Any) -> Any:
    """The memory offset (in elements) of each element of CPU array ``a``, in C order."""
    item = a.itemsize
    off = np.zeros(a.shape, np.int64)
    for d, (n, st) in enumerate(zip(a.shape, a.strides)):
        off += (np.arange(n, dtype=np.int64) * (st // item)).reshape((n,) + (1,) * (a.ndim - d - 1))
    return off.reshape(-1)


def _logical_window(base: Any, view: Any) -> tuple | None:
    """``window_geometry`` for a base whose memory is not dense (a detached column, say): the
    view as a strided window of the base's elements in C order (perm is the identity), or
    None when the view's elements are not such a window, or not a CPU array's."""
    item = base.itemsize
    if (type(base) is not CPU_ARRAY or type(view) is not CPU_ARRAY or base.size == 0
            or view.size == 0 or any(s % item for s in base.strides + view.strides)):
        return None
    flat = _element_offsets(base)
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    if ranked.size > 1 and not (ranked[1:] != ranked[:-1]).all():
        return None  # the base repeats memory (expand())
    start, rem = divmod(_backend.address(view) - _backend.address(base), item)
    want = _element_offsets(view) + start
    pos = np.searchsorted(ranked, want)
    if rem or (pos >= ranked.size).any() or (ranked[np.minimum(pos, ranked.size - 1)] != want).any():
        return None
    idx = order[pos].reshape(view.shape)  # each view element's index in the base's C order
    offset = int(idx.reshape(-1)[0])
    strides = tuple(int(idx[(0,) * d + (1,) + (0,) * (view.ndim - d - 1)]) - offset if n > 1
                    else 0 for d, n in enumerate(view.shape))
    if any(st < 0 for st in strides):
        return None
    expect = np.full(view.shape, offset, np.int64)
    for d, (n, st) in enumerate(zip(view.shape, strides)):
        expect += (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (view.ndim - d - 1))
    if not (expect == idx).all():
        return None
    return tuple(range(base.ndim)), tuple(view.shape), strides, offset


class StridedWindow(Op):
    """out = the window of base's memory that a view shows (a view)
    grad_base = zeros with grad written into the window"""

    node_name = "AsStridedBackward0"
    is_view = True
    empty_is_constant = True

    @staticmethod
    def forward(ctx: Any, base: Any, geom: tuple) -> Any:
        ctx.base_shape, ctx.dtype, ctx.geom = base.shape, base.dtype, geom
        perm, shape, strides, offset = geom
        return _window(_in_memory_order(base, ctx.xp, perm), ctx.xp, shape, strides, offset)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        perm, shape, strides, offset = ctx.geom
        if 0 in shape and ctx._fn.empty_is_constant:  # an empty window: fresh zeros, no graph
            return ctx.xp.zeros(ctx.base_shape, ctx.dtype), None  # under create_graph (PyTorch's)
        if _expanded(shape, strides):  # an expand()ed window: the
            dims = tuple(i for i, (s, n) in enumerate(zip(strides, shape)) if s == 0 and n > 1)
            grad = grad.sum(axis=dims, keepdims=True)  # copies of one element sum their grads
            shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
        zeros = ctx.xp.zeros(ctx.base_shape, ctx.dtype)
        return ctx.call(StridedScatter, zeros, grad, (perm, shape, strides, offset)), None


class InplaceInputWindow(StridedWindow):
    """The view an in-place op on a view reads: a window of the base's history (so gradients
    bypass the view's own chain, as PyTorch's CopySlices). Its gradient keeps its graph even
    for an empty window, as CopySlices' copy into the base's gradient does."""

    empty_is_constant = False


def _expanded(shape: tuple, strides: tuple) -> bool:
    """Whether a window shows one memory element at several positions (an ``expand()``ed view);
    an empty window shows none, whatever its strides."""
    return 0 not in shape and any(s == 0 and n > 1 for s, n in zip(strides, shape))


class StridedScatter(Op):
    """out = base with the window of its memory that a view shows replaced by src
    grad_base = grad with the window zeroed          grad_src = grad's window"""

    node_name = "CopySlices"

    @staticmethod
    def forward(ctx: Any, base: Any, src: Any, geom: tuple) -> Any:
        ctx.geom = geom
        ctx.save_for_backward()  # like PyTorch's CopySlices: released after one backward
        perm, shape, strides, offset = geom
        flat = _in_memory_order(base, ctx.xp, perm).copy()
        window = _window(flat, ctx.xp, shape, strides, offset)
        if _expanded(shape, strides):  # expand()ed: write only
            changed = ctx.xp.broadcast_to(src, shape) != window  # what changed, or unchanged
            window[changed] = ctx.xp.broadcast_to(src, shape)[changed]  # copies overwrite it
        else:
            window[...] = src
        return _from_memory_order(flat, base.shape, perm)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        _, shape, strides, _ = ctx.geom
        if _expanded(shape, strides):  # PyTorch refuses here too
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                f"operation. (An in-place op wrote through an expand()ed view of shape "
                f"{list(shape)}; its gradient cannot be split among the elements.)"
            )
        window = ctx.call(StridedWindow, grad, ctx.geom)
        g_base = ctx.call(StridedScatter, grad, ctx.xp.zeros_like(window), ctx.geom)
        return g_base, window, None


def refresh_view(t: TensorBase) -> None:
    """Re-derive a view's history after its base (or another view of it) changed in place.

    The view's recorded ``grad_fn`` describes the base as it was; PyTorch re-creates it as the
    view's window of the base's current history. We do the same, lazily, when the view's
    ``grad_fn``/``requires_grad`` is read or the view is used by an op."""
    base = t._base
    if not base._rg:
        return  # the base has no history to derive from: the view keeps its own (and stays
        # due for a refresh, as PyTorch re-checks at every grad_fn read)
    t._attr_version = t._version[0]
    if t._view_kind & CUSTOM_FUNCTION:
        t._attr_version = -1  # stays stale: every use raises
        raise RuntimeError(
            f"Output {t._output_nr} of {_view_op_name(t)} is a view and its base or another view "
            f"of its base has been modified inplace. {_CUSTOM_VIEW}")
    if t._view_kind & NO_GRAD_VIEW:
        t._attr_version = -1  # stays stale: every use raises
        raise RuntimeError(
            "A view was created in no_grad mode and its base or another view of its base has been "
            "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
            "error-prone, it is forbidden. You can clarify your code by moving both the view and "
            "the inplace either both inside the no_grad block (if you don't want the inplace to "
            "be tracked) or both outside (if you want the inplace to be tracked)."
        )
    if t._view_kind & MULTI_OUTPUT:
        t._attr_version = -1  # stays stale: every use raises
        raise RuntimeError(
            f"Output {t._output_nr} of {_view_op_name(t)} is a view and its base or another view "
            "of its base has been modified inplace. This view is the output of a function that "
            "returns multiple views (unbind, split, chunk, iterating over a tensor). Such functions "
            "do not allow the output views to be modified inplace. You should replace the inplace "
            "operation by an out-of-place one, or clone() the views before the in-place change."
        )
    geom = window_geometry(base._data, t._data)
    if geom is None:
        no_geometry(t, base)
    with grad_mode.enable_grad():
        window = StridedWindow.apply(base, geom)
    old_fn = t._grad_fn
    t._grad_fn, t._output_nr, t._rg = window._grad_fn, 0, True
    move_retain_grad(t, old_fn)


def no_geometry(t: TensorBase, base: TensorBase) -> None:
    raise RuntimeError(
        f"ember cannot express this view (shape {tuple(t.shape)}, stride {t.stride()}) as a "
        f"window of its base (shape {tuple(base.shape)}, stride {base.stride()}), which it needs "
        "to track an in-place change to either of them under autograd (the base's memory is not "
        "C-contiguous). Call .contiguous() on the base before taking the view, or use "
        "out-of-place ops."
    )


def check_view_inplace(view: TensorBase, base: TensorBase) -> None:
    """The in-place ops on views that PyTorch refuses while autograd tracks."""
    kind = view._view_kind
    if kind & CUSTOM_FUNCTION:
        raise RuntimeError(
            f"Output {view._output_nr} of {_view_op_name(view)} is a view and is being modified "
            f"inplace. {_CUSTOM_VIEW}")
    if kind & MULTI_OUTPUT:
        if kind & NO_GRAD_VIEW:
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. This view is the output of a function that returns multiple views. "
                "Such functions do not allow the output views to be modified inplace. You should "
                "replace the inplace operation by an out-of-place one."
            )
        raise RuntimeError(
            f"Output {view._output_nr} of {_view_op_name(view)} is a view and is being modified "
            "inplace. This view is the output of a function that returns multiple views (unbind, "
            "split, chunk, iterating over a tensor). Such functions do not allow the output views "
            "to be modified inplace. You should replace the inplace operation by an out-of-place "
            "one, or clone() the view first."
        )
    if kind & NO_GRAD_VIEW:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            "inside the no_grad block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked)."
        )
    if base._grad_fn is None and (base._rg or view._rg):  # (PyTorch's test: the view requires
        raise RuntimeError(  # grad and its base is a leaf, e.g. requires_grad_() on a view)
            "a view of a leaf Variable that requires grad is being used in an in-place operation. "
            "(Modify the parameter itself inside `with torch.no_grad():`, or build a new tensor "
            "out of place, e.g. with torch.cat or torch.where.)"
        )


def _view_op_name(view: TensorBase) -> str:
    fn = view._grad_fn
    name = type(fn).__name__ if fn is not None else "the view op"
    if view._view_kind & CUSTOM_FUNCTION:  # a user's Function: its node is "<Name>Backward"
        return name.removesuffix("Backward")
    return name.removesuffix("Backward0")


_CUSTOM_VIEW = (
    "This view was created inside a custom Function (or because an input was returned as-is) and "
    "the autograd logic to handle view+inplace would override the custom backward associated with "
    "the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
    "this by cloning the output of the custom Function (or, inside forward, returning x.clone() "
    "instead of x or a view of it).")


def move_retain_grad(t: TensorBase, old_fn: Any) -> None:
    """``retain_grad()`` follows the tensor to its new place in the graph, as in PyTorch."""
    if old_fn is None or old_fn._retain is None:
        return
    mine = [e for e in old_fn._retain if e[1]() is t]
    if mine:
        old_fn._retain = [e for e in old_fn._retain if e[1]() is not t] or None
        if t._grad_fn is not None:
            register_retain(t)


def keep_recorded_shape(t: TensorBase, shape: tuple) -> None:
    """``t``, a non-leaf that is not a view, was reshaped in place without being recorded
    (``t_()``, ``unsqueeze_()``... under no_grad): it keeps its ``grad_fn``, whose output had
    ``shape``. A gradient reaching that node in ``t``'s new shape is summed back to ``shape``
    where it broadcasts from it, else raises, as PyTorch's engine checks each gradient against
    the metadata the node recorded (so a retained ``.grad`` keeps that shape too)."""
    node = t._grad_fn
    hooks = node._pre_hooks
    if hooks and type(hooks[0][1]) is _RecordedShapes:
        hooks[0][1].shapes.setdefault(t._output_nr, tuple(shape))  # (the first reshape's)
        return
    fix = _RecordedShapes(node, {t._output_nr: tuple(shape)})
    if hooks is None:
        node._pre_hooks = [(-1, fix)]
    else:
        hooks.insert(0, (-1, fix))  # before the tensor hooks and retain_grad(), as PyTorch's


class _RecordedShapes:
    """A node pre-hook (``keep_recorded_shape``): sums each output's gradient to the shape the
    node recorded for it."""

    __slots__ = ("name", "shapes")

    def __init__(self, node: Node, shapes: dict) -> None:
        self.name, self.shapes = node.name(), shapes

    def __call__(self, grads: tuple) -> tuple:
        out = list(grads)
        for nr, shape in self.shapes.items():
            g = out[nr] if nr < len(out) else None
            if g is None or tuple(g.shape) == shape:
                continue
            have = tuple(g.shape)
            lead = len(have) - len(shape)
            if lead < 0 or any(s != 1 and s != h for s, h in zip(shape, have[lead:])):
                raise RuntimeError(
                    f"Function {self.name} got an invalid gradient at index {nr} - got "
                    f"{list(have)} but expected shape compatible with {list(shape)} (the tensor "
                    "was reshaped in place, e.g. by t_() or unsqueeze_() under no_grad, after "
                    f"{self.name} made it; reshape it out of place instead)")
            axes = tuple(range(lead)) + tuple(
                lead + i for i, s in enumerate(shape) if s == 1 and have[lead + i] != 1)
            if isinstance(g, TensorBase):
                g = g.sum(dim=axes, keepdim=True) if axes else g  # type: ignore[attr-defined]
            elif axes:
                g = g.sum(axis=axes, keepdims=True)
            out[nr] = g.reshape(shape)
        return tuple(out)


def register_retain(t: TensorBase) -> None:
    """Make ``t``'s node fill ``t.grad`` when backward reaches it (``retain_grad()``)."""
    fn = t._grad_fn
    if fn._retain is None:
        fn._retain = []
    fn._retain.append((t._output_nr, weakref.ref(t)))


# ember._native's Function.apply does a built-in op's common call in C and hands every other call
# (a user's Function, another device, a stale view, anomaly mode, compile's tracer) to
# this Python function, the reference (docs/design.md, "The native core").
_apply_python = Function.__dict__["apply"].__func__
if _native_core.native is not None:
    _native_core.native.function_init(globals())
    Function.apply = classmethod(_native_core.native.function_apply)  # type: ignore[assignment]
    _accumulator = _native_core.native.accumulator
