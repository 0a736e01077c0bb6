"""``Function``: one differentiable operation, forward and backward side by side.

Every built-in op is a ``Function`` subclass, and so is a user's custom op. ``Function.apply``
unwraps tensors, checks devices, runs ``forward`` and, only when grad mode is on and an input
requires grad, records a ``Node`` (the ``ctx`` both methods receive) that ``backward`` will call.

Built-in ops (subclasses of ``ember.ops._op.Op``) see raw arrays in ``forward`` and ``backward``:
the fast path. A user's ``Function`` sees tensors, as in PyTorch. Under ``create_graph=True`` a
built-in op's ``backward`` sees tensors too, and ``ctx.xp`` is ember's NumPy-like namespace, so
the same rule records a graph for higher-order gradients.
"""

from __future__ import annotations

import sys
import traceback
import weakref
from typing import Any

import numpy as np

from . import grad_mode

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

anomaly_enabled = False  # set by ember.autograd.anomaly


class Node:
    """A recorded op in the autograd graph (``tensor.grad_fn``), and the ``ctx`` of its Function.

    ``_edges`` holds, per forward argument, the edge ``(node, output_nr)`` its gradient flows to
    (``(None, 0)`` for arguments that need none); ``next_functions`` shows the edges of tensor and
    number arguments, as PyTorch does.
    """

    __slots__ = (
        "_edges", "needs_input_grad", "xp", "_saved", "_saved_src", "_versions", "_meta",
        "_n_out", "__dict__", "__weakref__",
    )
    _fn: Any = None  # the Function class whose backward this node runs
    # Rarely used fields: class-level defaults, set per node only when needed.
    _pre_hooks: Any = None
    _post_hooks: Any = None
    _retain: Any = None
    _freed = False
    _tensor_mode = False
    _non_diff: Any = None
    _materialize = True
    _trace: Any = None
    _out_meta: Any = None

    def __init__(self) -> None:
        self._edges = ()
        self._saved = None
        self._versions = None
        self._n_out = 1

    @property
    def next_functions(self) -> tuple:
        return tuple(e for e in self._edges if e is not _NOT_INPUT)

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # -- the ctx API ------------------------------------------------------------------------
    def save_for_backward(self, *values: Any) -> None:
        """Keep arrays (tensors, in a custom Function) for ``backward``."""
        self._saved = values

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            if self._freed:
                raise RuntimeError(_FREED_MSG)
            return ()
        if self._tensor_mode:
            return self._saved_as_tensors()
        return self._saved

    saved = saved_tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        self._non_diff = {id(o) for o in outputs}

    def mark_dirty(self, *tensors: Any) -> None:  # accepted for compatibility
        pass

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = bool(value)

    def call(self, op: Any, *args: Any) -> Any:
        """Run another Function from inside ``backward``: on raw arrays it is just its forward;
        under ``create_graph`` it is recorded, so the backward itself can be differentiated."""
        if self._tensor_mode:
            return op.apply(*args)
        ctx = op._node_cls()
        ctx.xp = self.xp
        ctx.needs_input_grad = (False,) * len(args)
        return op.forward(ctx, *args)

    # -- hooks ------------------------------------------------------------------------------
    def register_hook(self, fn: Any) -> Any:
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn: Any) -> Any:
        """``fn(grad_outputs)`` runs before this node's backward and may return replacements."""
        return self._add_pre_hook(-1, fn)

    def _add_pre_hook(self, output_nr: int, fn: Any) -> Any:
        if self._pre_hooks is None:
            self._pre_hooks = []
        entry = (output_nr, fn)
        self._pre_hooks.append(entry)
        return _RemovableHandle(self._pre_hooks, entry)

    # -- engine internals -------------------------------------------------------------------
    def _saved_as_tensors(self) -> tuple:
        from .._tensor import Tensor

        out = []
        for arr, src in zip(self._saved, getattr(self, "_saved_src", None) or (None,) * len(self._saved)):
            if isinstance(src, Tensor):
                out.append(src)
            elif type(src) is int:  # an output of this very node
                out.append(Tensor._make(arr, True, self, src))
            elif isinstance(arr, Tensor):
                out.append(arr)
            else:
                out.append(Tensor._make(arr) if arr is not None else None)
        return tuple(out)

    def _check_versions(self) -> None:
        for counter, seen, k in self._versions:
            if counter[0] != seen:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: saved tensor {k} of {self.name()} is at version "
                    f"{counter[0]}; expected version {seen} instead. Hint: replace the in-place "
                    "op (x += ..., x.add_(...), x[...] = ...) with its out-of-place form "
                    "(x = x + ...), or clone() the tensor before modifying it."
                )

    def _release(self) -> None:
        """Free what backward needed: saved arrays, and ctx attributes that hold arrays. A node
        that kept only metadata (shapes, dims) stays usable, as in PyTorch."""
        freed = self._saved is not None
        self._saved = None
        self._saved_src = None
        d = self.__dict__
        if d:
            for v in d.values():
                if hasattr(v, "dtype") and hasattr(v, "shape"):
                    d.clear()
                    freed = True
                    break
        if freed:
            self._freed = True


class AccumulateGrad(Node):
    """The node at a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        Node.__init__(self)
        self.variable = variable


class _RemovableHandle:
    __slots__ = ("_list", "_item")

    def __init__(self, lst: list, item: Any) -> None:
        self._list, self._item = lst, item

    def remove(self) -> None:
        try:
            self._list.remove(self._item)
        except ValueError:
            pass


class FunctionMeta(type):
    """Gives each Function its node class, named as PyTorch names it (``MulBackward0``)."""

    def __init__(cls, name: str, bases: tuple, ns: dict) -> None:
        super().__init__(name, bases, ns)
        node_name = ns.get("node_name") or (
            f"{name}Backward0" if cls.__module__.startswith("ember.") else f"{name}Backward"
        )
        cls._node_cls = type(node_name, (Node,), {"__slots__": (), "_fn": cls})


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

    _tensor_io = True  # user Functions see tensors; built-in ops (ember.ops._op.Op) see arrays
    is_view = False  # outputs share the first input's storage (and version counter)
    _node_cls: Any = Node

    @staticmethod
    def forward(ctx: Node, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Node, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> Any:
        Tensor = _Tensor or _load_tensor()
        make = Tensor._make
        raw = []
        flags = []
        requires = False
        on_cpu = True
        enabled = grad_mode.state.enabled
        for a in args:
            if isinstance(a, Tensor):
                d = a._data
                base = a._base
                if base is not None and enabled:  # (no history is read under no_grad)
                    if a._attr_version != a._version[0]:
                        _refresh_view(a)  # its base changed in place since the view was recorded
                    if base._rg and not a._rg:  # a view made under no_grad: the result requires
                        requires = True  # grad, but no gradient flows back through it (PyTorch)
                if a._rg:
                    requires = True
                    flags.append(True)
                else:
                    flags.append(False)
                if type(d) is not np.ndarray:
                    on_cpu = False
                raw.append(d)
            else:
                raw.append(a)
                flags.append(False)
        if not on_cpu:
            _check_devices(cls, args, raw)
        record = requires and enabled
        ctx = cls._node_cls()
        ctx.xp = np if on_cpu else _xp_of_args(raw)
        ctx.needs_input_grad = tuple(flags) if record else _no_grads(len(args))

        if cls._tensor_io:
            with grad_mode.no_grad():
                out = cls.forward(ctx, *args)
            is_tuple = type(out) is tuple
            outs = out if is_tuple else (out,)
            outs_raw = tuple([o._data if isinstance(o, Tensor) else o for o in outs])
            if ctx._saved is not None:
                ctx._saved = tuple([s._data if isinstance(s, Tensor) else s for s in ctx._saved])
            if ctx._non_diff is not None:
                ctx._non_diff = {id(o._data) for o in outs if id(o) in ctx._non_diff}
        else:
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
                outputs = [make(o) if o is not None else None for o in outs_raw]
            else:
                outputs = [make(outs_raw[0])]
            if cls.is_view:
                _share_version(args[0], outputs, is_tuple)
            return tuple(outputs) if is_tuple else outputs[0]

        # -- record the node --------------------------------------------------------------
        edges = []
        meta = []
        for a in args:
            if isinstance(a, Tensor) and a._rg:
                fn = a._grad_fn
                edges.append((fn, a._output_nr) if fn is not None else (_accumulator(a), 0))
                d = a._data
                meta.append((d.shape, d.dtype))
            else:
                edges.append(_NO_EDGE if isinstance(a, Tensor | float | int) and a is not True
                             and a is not False else _NOT_INPUT)
                meta.append(None)
        ctx._edges = tuple(edges)
        ctx._meta = meta
        if not is_tuple and ctx._non_diff is None:
            outputs = [make(outs_raw[0], True, ctx, 0)]
        else:
            non_diff = ctx._non_diff
            outputs = []
            for k, o in enumerate(outs_raw):
                if o is None:
                    outputs.append(None)
                    continue
                differentiable = non_diff is None or id(o) not in non_diff
                outputs.append(make(o, differentiable, ctx if differentiable else None, k))
            if is_tuple:
                ctx._n_out = len(outs_raw)
                ctx._out_meta = tuple([(o.shape, o.dtype) if o is not None else None for o in outs_raw])
        if cls.is_view:
            _share_version(args[0], outputs, is_tuple)
        if ctx._saved:
            _track_saved(ctx, args, raw, outs_raw, outputs)
        if anomaly_enabled:
            ctx._trace = _user_stack()
        return tuple(outputs) if is_tuple else outputs[0]


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
        kind = _NO_GRAD_VIEW
    elif multi:  # PyTorch's rule: such views of a tensor that needs no grad count as no-grad too
        kind = _MULTI_OUTPUT if first._rg or (base is not None and base._rg) else (
            _MULTI_OUTPUT | _NO_GRAD_VIEW)
    else:
        kind = 0
    if base is None:
        base = first
    else:
        kind |= first._view_kind
    now = counter[0]
    for t in outputs:
        if t is not None:
            t._version = counter
            t._base = base
            if now:
                t._attr_version = now
            if kind:
                t._view_kind = kind


def link_view(first: Any, out: Any) -> Any:
    """Mark ``out`` (made without ``apply``) as a view of ``first``; returns ``out``."""
    _share_version(first, [out])
    return out


_NO_GRADS = [(False,) * n for n in range(8)]


def _no_grads(n: int) -> tuple:
    return _NO_GRADS[n] if n < 8 else (False,) * n
_NO_EDGE = (None, 0)
_NOT_INPUT = tuple([None, 0])  # a distinct object: an argument that is not a tensor or a number
_Tensor: Any = None
_refresh_view: Any = None
_MULTI_OUTPUT = 1  # view kinds (Tensor._view_kind): made by an op returning several views
_NO_GRAD_VIEW = 2  # made while grad mode was off


def _load_tensor() -> Any:
    global _Tensor, _refresh_view
    from .. import _tensor

    _Tensor = _tensor.Tensor
    _refresh_view = _tensor._refresh_view
    return _Tensor


def _track_saved(ctx: Node, args: tuple, raw: list, outs_raw: tuple, outputs: list) -> None:
    """Remember where each saved array came from (for version checks and double backward):
    an input tensor, an output index, or None for an intermediate array."""
    src = []
    versions = []
    k = 0
    for s in ctx._saved:
        found: Any = None
        if s is not None:
            i = 0
            for r in raw:
                if r is s and isinstance(args[i], _Tensor):
                    found = args[i]
                    counter = found._version
                    if counter is None:
                        counter = found._version = [0]
                    versions.append((counter, counter[0], k))
                    break
                i += 1
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
                            versions.append((counter, 0, k))
                        break
                    j += 1
        src.append(found)
        k += 1
    ctx._saved_src = src
    ctx._versions = versions or None


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


def _accumulator(leaf: Any) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, shared by every op that uses the leaf in this graph."""
    ref = leaf._accum
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(leaf)
        leaf._accum = weakref.ref(acc)
    return acc


def _xp_of_args(raw: list) -> Any:
    from .._backend import is_array, xp_of

    for r in raw:
        if is_array(r):
            return xp_of(r)
    return np


def _check_devices(cls: Any, args: tuple, raw: list) -> None:
    """All tensor arguments on one device (0-d CPU tensors may join a CUDA op, as in PyTorch)."""
    from .._backend import device_of, to_device

    devs = []
    for i, a in enumerate(args):
        if hasattr(a, "_data") and hasattr(a, "grad_fn"):
            devs.append((i, device_of(raw[i]), a))
    main = [(d, a) for i, d, a in devs if not (d.type == "cpu" and a._data.ndim == 0)]
    if not main:
        return
    # the device to move to: the parameters' (leaves that require grad), else the first tensor's
    params = [d for d, a in main if a._rg and a.grad_fn is None]
    target = params[0] if params else main[0][0]
    for i, d, a in devs:
        if d != target:
            if d.type == "cpu" and a._data.ndim == 0:
                raw[i] = to_device(raw[i], target)
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
