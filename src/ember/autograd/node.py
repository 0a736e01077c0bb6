"""``Node``: one recorded op in the autograd graph, and the ``ctx`` its Function's methods get.

``tensor.grad_fn`` is a Node. Its ``_edges`` say where each input's gradient flows; the engine
(``engine.py``) calls its Function's ``backward`` with it. ``AccumulateGrad`` is the node at a
leaf: it adds the gradient that reaches it into ``leaf.grad``.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from .._tensor_base import TensorBase

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)
NOT_INPUT = tuple([None, 0])  # an edge for an argument that is not a tensor or a number


class SavedAt(int):
    """In an op's ``saved_fields``: the value it saved at this index, as a tensor."""


class ViewOutput:
    """In a node's ``_saved_src``: its output that an in-place op on a view wrote back into the
    view. Unpacked under ``create_graph``, it has the view's history at save time (the window of
    the base's ``CopySlices``, held weakly: it holds this node), as PyTorch's saved output of an
    in-place op on a view has; so a hook or ``retain_grad()`` on the view sees its gradient."""

    __slots__ = ("node", "output_nr")

    def __init__(self, node: Any, output_nr: int) -> None:
        self.node, self.output_nr = weakref.ref(node), output_nr


# ember's own bookkeeping fields whose names PyTorch's tools would take for saved values
_HIDDEN = frozenset({"_saved_src", "_saved_as_tensors", "_saved_tensor"})


class SavedField:
    """``node._saved_<name>``: the field ``name`` of the node's op's ``saved_fields`` (PyTorch's
    names for what its derivative formula saved), or AttributeError where the op has none.
    Descriptors on ``Node`` for the names any op uses (``install_saved_fields``), rather than a
    ``Node.__getattr__``: a class with ``__getattr__`` sends every attribute read of every node
    down CPython's slow path, and the engine reads nodes' attributes on each step."""

    __slots__ = ("name", "field")

    def __init__(self, name: str) -> None:
        self.name, self.field = name, name[7:]

    def __get__(self, node: Any, cls: Any = None) -> Any:
        if node is None:
            return self
        fields = getattr(node._fn, "saved_fields", None)
        if not fields or self.field not in fields:
            raise AttributeError(f"'{type(node).__name__}' object has no attribute '{self.name}'")
        spec = fields[self.field]
        if type(spec) is SavedAt:  # the op's saved value at that index
            return node._saved_tensor(spec)
        if not callable(spec):
            return spec
        try:
            return spec(node)
        except AttributeError:
            if node._freed:
                raise RuntimeError(FREED_MSG) from None
            raise


def install_saved_fields(fields: Any) -> None:
    """Make ``node._saved_<f>`` readable for each name f (the ops' ``saved_fields`` keys)."""
    for f in fields:
        name = "_saved_" + f
        if name not in _HIDDEN and name not in Node.__dict__:
            setattr(Node, name, SavedField(name))


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
    _dirty: Any = None
    _grads_to_cpu: Any = None  # inputs that were 0-d CPU tensors in a CUDA op (see engine)

    def __init__(self) -> None:
        # (Function.apply stores these same fields itself, without calling __init__)
        self._edges = ()
        self._saved = None
        self._versions = None
        self._n_out = 1

    @property
    def next_functions(self) -> tuple:
        fn = self._fn
        shown = getattr(fn, "shown_edges", None)
        if shown is not None:  # a fused op shows PyTorch's nodes around it (see shown_node)
            return shown(self)
        edges = tuple(e for e in self._edges if e is not NOT_INPUT)
        n = getattr(fn, "shown_inputs", None)  # PyTorch's tensor inputs come first
        return edges if n is None else edges[:n]

    def name(self) -> str:
        return type(self).__name__

    # -- what tools read: ``_saved_<name>`` as PyTorch's derivative formulas name them ---------
    def __dir__(self) -> list:
        fields = getattr(self._fn, "saved_fields", None) or ()
        names = {n for n in super().__dir__() if n not in _HIDDEN
                 and (type(getattr(Node, n, None)) is not SavedField or n[7:] in fields)}
        if self._fn is None or not self._fn._tensor_io:  # (see saved_tensors)
            names.discard("saved_tensors")
        return sorted(names)

    def _saved_tensor(self, i: int) -> Any:
        """The ``i``-th saved value as a tensor (the input or output it came from), None when
        the op did not save it; after backward freed it, PyTorch's error."""
        saved = self._saved
        if saved is None:
            if self._freed:
                raise RuntimeError(FREED_MSG)
            return None
        if i >= len(saved) or saved[i] is None:
            return None
        return self._saved_as_tensors()[i] if not self._tensor_mode else self.saved[i]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # -- the ctx API ------------------------------------------------------------------------
    def save_for_backward(self, *values: Any) -> None:
        """Keep arrays (tensors, in a custom Function) for ``backward``."""
        self._saved = values

    @property
    def saved(self) -> tuple:
        """What ``save_for_backward`` kept: arrays in a built-in op's backward (tensors under
        ``create_graph``), tensors in a custom Function's."""
        if self._saved is None:
            if self._freed:
                raise RuntimeError(FREED_MSG)
            return ()
        if self._tensor_mode:
            if hasattr(self._saved, "tensors"):  # packed by saved_tensors_hooks
                return self._saved.tensors()
            return self._saved_as_tensors()
        return self._saved

    @property
    def saved_tensors(self) -> tuple:
        """A custom Function's saved tensors. A built-in op's node has no such attribute, as in
        PyTorch (tools such as torchviz probe it with ``hasattr``): its saved values are the
        ``_saved_<name>`` attributes, named as PyTorch's derivative formulas name them."""
        if self._fn is None or not self._fn._tensor_io:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute 'saved_tensors'")
        return self.saved

    def mark_non_differentiable(self, *outputs: Any) -> None:
        self._non_diff = {id(o) for o in outputs}

    def mark_dirty(self, *tensors: Any) -> None:
        """Say that ``forward`` modified these input tensors in place (and returns them): they
        keep their identity, their version is bumped and their history continues from this node."""
        self._dirty = {id(t) for t in tensors}

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
        return RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn: Any) -> Any:
        """``fn(grad_outputs)`` runs before this node's backward and may return replacements."""
        return self._add_pre_hook(-1, fn)

    def _add_pre_hook(self, output_nr: int, fn: Any) -> Any:
        if self._pre_hooks is None:
            self._pre_hooks = []
        entry = (output_nr, fn)
        self._pre_hooks.append(entry)
        return RemovableHandle(self._pre_hooks, entry)

    # -- engine internals -------------------------------------------------------------------
    def _saved_as_tensors(self) -> tuple:
        out = []
        # an op that casts a promoted operand's copy again in backward shows the operand itself
        # (ops/_promote.py's ``refreshed``): PyTorch saves it and casts it there
        recast = getattr(self._fn, "_recasts_promoted", False)
        for arr, src in zip(self._saved, getattr(self, "_saved_src", None) or (None,) * len(self._saved)):
            if isinstance(src, TensorBase):
                x = getattr(src, "_promoted_from", None) if recast else None
                if x is not None and (arr is src._data or arr is x._data):  # (x: unpacked)
                    src = x
                out.append(src)
            elif type(src) is int:  # an output of this very node
                out.append(TensorBase._make(arr, True, self, src))
            elif type(src) is ViewOutput:  # the output an in-place op on a view wrote back
                node = src.node()
                out.append(TensorBase._make(arr, True, node, 0) if node is not None
                           else TensorBase._make(arr, True, self, src.output_nr))
            elif isinstance(arr, TensorBase):
                out.append(arr)
            else:
                out.append(TensorBase._make(arr) if arr is not None else None)
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # a custom Function's node class (FunctionMeta makes one per Function): its backward
        # gets PyTorch's count check. (Here because both cores call a user's backward from
        # Python: engine._call_backward; the built-in ops' nodes are untouched.)
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("_fn")
        if fn is not None and fn._tensor_io:
            _count_checked_backward(fn)

    def _release(self) -> None:
        """Free what backward needed: saved arrays, and ctx attributes that hold arrays. A node
        that kept only metadata (shapes, dims) stays usable, as in PyTorch."""
        saved = self._saved
        freed = saved is not None
        if freed and type(saved) is tuple and saved and saved[0] is None and _only_nones(saved):
            freed = False  # it kept nothing (the operands no requested gradient reads): it
            # stays usable, as PyTorch's
        else:
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


def _only_nones(saved: Any) -> bool:
    """Whether a node's saved values are all None (it saved nothing a backward needs), as an op
    keeps its operands only for the gradients requested: PyTorch's node then has nothing to
    free, and a second backward through it runs."""
    return (type(saved) is tuple and len(saved) > 0 and saved[0] is None
            and all(v is None for v in saved))


def _count_checked_backward(fn: Any) -> None:
    """Wrap the ``backward`` that custom Function ``fn`` defines (once) so it returns one gradient
    per ``forward`` argument, as PyTorch checks: extra trailing Nones are dropped; too many or too
    few gradients raise "returned an incorrect number of gradients (expected 2, got 3)"."""
    raw = fn.__dict__.get("backward")
    inner = raw.__func__ if isinstance(raw, staticmethod) else raw
    if not callable(inner) or getattr(inner, "_ember_count_checked", False):
        return  # inherited (checked where defined), or not a function

    @functools.wraps(inner)
    def backward(ctx: Any, *grads: Any) -> Any:
        out = inner(ctx, *grads)
        edges = getattr(ctx, "_edges", None)
        if not edges:  # (called by hand, not by the engine)
            return out
        got = out if type(out) is tuple else (out,)
        n = len(edges)
        if len(got) != n:
            if len(got) > n and all(g is None for g in got[n:]):
                return got[:n]
            raise RuntimeError(
                f"function {type(ctx).__name__} returned an incorrect number of gradients "
                f"(expected {n}, got {len(got)}): backward returns one gradient per argument "
                "of forward, in order (None for an argument that needs none, such as a "
                "non-tensor or a tensor that does not require grad)")
        return out

    backward._ember_count_checked = True  # type: ignore[attr-defined]
    fn.backward = staticmethod(backward) if isinstance(raw, staticmethod) else backward


class AccumulateGrad(Node):
    """The node at a leaf tensor: adds the incoming gradient into ``variable.grad``.

    ``shape`` is the leaf's shape when the node was made, as PyTorch's input metadata: a leaf
    reshaped in place later (``unsqueeze_`` under no_grad) still receives gradients of it."""

    __slots__ = ("variable", "shape")

    def __init__(self, variable: Any) -> None:
        self._edges = ()
        self._saved = None
        self._versions = None
        self._n_out = 1
        self.variable = variable
        self.shape = variable._data.shape


class _Shown:
    """The ``_fn`` of a node made by ``shown_node``: its saved fields, no backward."""

    shown_edges = None
    shown_inputs = None
    _tensor_io = False

    def __init__(self, fields: dict) -> None:
        self.saved_fields = fields


def shown_node(cls: type, edges: Any, fields: dict | None = None) -> Node:
    """A node of class ``cls`` (``TBackward0``...) that stands in ``next_functions`` for a step
    PyTorch records and a fused ember op does inside itself (``linear``'s transposed weight):
    tools that walk the graph (torchviz, a user's walk) see PyTorch's nodes, edges and
    ``_saved_*`` fields. The engine never runs it (the fused op differentiates that step), so
    hooks registered on it do not fire."""
    node = cls.__new__(cls)
    node._edges = tuple(edges)
    node._saved = None
    node._versions = None
    node._n_out = 1
    node.__dict__["_fn"] = _Shown(fields or {})
    return node


class RemovableHandle:
    __slots__ = ("_list", "_item")

    def __init__(self, lst: list, item: Any) -> None:
        self._list, self._item = lst, item

    def remove(self) -> None:
        try:
            self._list.remove(self._item)
        except ValueError:
            pass
