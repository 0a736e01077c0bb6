"""Tracing a compiled region: run it eagerly once with a recorder installed, and turn what the
recorder saw into a ``Program`` (a list of steps over numbered value slots) that ``replay.py``
runs without ember's per-op Python dispatch.

Every array the region touches becomes a slot:

- an *input*: a tensor among the call's (flattened) arguments;
- a *free* tensor: one that lives outside the call (a module's parameters and buffers, tensors a
  compiled function reaches through its closure or globals, leaf tensors that require grad):
  its ``_data`` is read again at each call, so optimizer steps and ``load_state_dict`` are seen;
- an *op output*: made by a recorded ``Function.apply``;
- a *mask*: a dropout mask, drawn again at each replay from the same generator, in order;
- a *constant*: anything else (``torch.arange(T)``, a Python number, an index array). Values
  made by code that does not go through ``Function.apply`` also land here, so ``compile`` only
  trusts a trace after a second traced call produced the very same constants (see ``same``).

What cannot be replayed faithfully makes the trace ``unsupported`` (the call stays eager):
graph breaks (tensor data turned into a Python value, by the user or inside an op:
``Tracer.data_read``), an index or mask tensor's array inside an indexing key (``index_select``:
two traces of equal inputs agree on it, a replay would keep it), custom ``autograd.Function``s,
hooks on intermediate tensors, views or unknown tensors returned from the region, and in-place
writes other than these three: BatchNorm's running statistics, buffers written under
``no_grad``, and tracked in-place ops on tensors the region made with no views of them
(``ReLU(inplace=True)``: replay reads the op's output where eager mode wrote it back).
"""

from __future__ import annotations

import importlib
import sys
import types
import weakref
from typing import Any

import numpy as np

from .. import _backend, _tensor_base
from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..ops._index import _Key

# step kinds
OP, MASK, UPDATE, WRITE = 0, 1, 2, 3

# Tensor methods and namespace functions that turn tensor data into Python values, or whose
# result's shape depends on the data: each one is a graph break.
# modules whose tensors are made from Python values and shapes only (``arange(T)``,
# ``zeros(...)``, ``tensor([...])``): constants even when made inside a region
_PURE_MAKERS = frozenset({"ember.ops.creation"})

BREAK_METHODS = ("item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__",
                 "__index__", "__complex__", "__format__", "__repr__", "__str__", "nonzero",
                 "masked_select", "unique", "unique_consecutive", "argwhere")
BREAK_FUNCTIONS = ("nonzero", "masked_select", "unique", "unique_consecutive", "argwhere")


class GraphBreak(Exception):
    """Raised (under ``fullgraph=True``) or noted when a region cannot be captured whole."""


class Program:
    """A traced region, ready for replay (built by ``Tracer.finish``)."""

    n_slots: int
    init: list  # per slot: the constant value, or None
    inputs: list  # (flat position, slot)
    free: list  # (tensor, slot, shape, dtype, array type, requires_grad)
    steps: list
    out_spec: Any  # the output's structure; leaves: ("slot", s) / ("input", pos) / ("free", i) / ("py", v)
    out_slots: list  # differentiable output slots, in output-number order
    edge_slots: list  # slots of inputs/free tensors that receive gradients (the region's edges)
    edge_src: list  # per edge: ("input", pos) or ("free", index)
    saved_src: list  # per saved-from-outside slot: ("input", pos) or ("free", index)
    bsched: list
    drops: list  # per step: slots replay may release after it (their last read)
    needs_grad: bool
    consts: list  # (slot, value) of array constants, for comparing two traces
    signature: tuple
    out_guard: tuple = ()  # output leaves whose memory an op saved for backward
    op_info: list  # per OP step (in order): trace.py's _op_info, for cgen.py's fusion
    metas: list  # per step: an op's ctx._meta (its inputs' shapes and dtypes; Cast's backward
    # reads it), or None
    # generated straight-line replay (codegen.py), attached once the program is trusted
    fwd_fn: Any = None
    out_fn: Any = None  # make_outputs written out for this program
    bwd_fn: Any = None
    source: str = ""
    c_source: str = ""  # the generated C of its fused elementwise groups (cgen.py), if any
    c_by_object: bool = False  # its C entry points take the arrays themselves (codegen.py)


def _root(arr: Any) -> Any:
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


class Tracer:
    """Installed as ``ember.autograd.function.tracer`` while a region runs eagerly."""

    def __init__(self, flat_inputs: list, free_tensors: list, fullgraph: bool) -> None:
        self.fullgraph = fullgraph
        self.reason: str | None = None
        self.n = 0
        self.slot_of: dict[int, int] = {}  # id(tensor) -> slot
        self.keep: list = []  # tensors and arrays whose ids are in the maps (ids stay unique)
        self.kind: dict[int, tuple] = {}  # slot -> ("input", pos) / ("free", t) / ("op",) / ...
        self.array_slot: dict[int, int] = {}  # id(array) -> slot, for known arrays
        self.temp: dict[int, tuple] = {}  # slot -> (weakref to unknown tensor, its array)
        self.const_values: dict[int, Any] = {}
        self.steps: list = []
        self.ctxs: list = []
        self.out_tensors: dict[int, Any] = {}  # slot -> output tensor of a recorded op
        self.allow_bump = 0
        self.pending_bump = 0  # id of the tensor a recorded write will bump next
        self.rebinding: Any = None  # the tensor a tracked in-place op is about to overwrite
        self.outside: dict[int, Any] = {}  # slot -> the input or free tensor it reads
        # arrays of tensors made during the trace outside ember's creation functions (id ->
        # weakref): one that reaches an op as an unknown input was computed from data (argmax's
        # result), which two traces of equal inputs cannot tell from a constant
        self.made_from_data: dict[int, Any] = {}
        self.free_ids = {id(t): t for t in free_tensors}
        for pos, t in flat_inputs:
            if id(t) not in self.slot_of:
                self._new(t, ("input", pos))
        # what the region may read from outside, as it was: written by code outside ember's
        # ops (an optimizer step, a ``.grad``), it could not be replayed
        self.before = [(t, t._data, _backend.to_numpy(t._data).copy(), t._grad)
                       for t in list(self.free_ids.values()) + [t for _, t in flat_inputs]]
        # (a tensor made during the trace around this memory, ``buffer.detach()``, wraps data
        # that existed before the call: not a value the region computed)
        self.outside_memory = {id(_root(arr)) for _, arr, _, _ in self.before}
        self.updated: set[int] = set()

    # -- slots ------------------------------------------------------------------------------
    def _new(self, t: Any, kind: tuple) -> int:
        s = self.n
        self.n += 1
        self.kind[s] = kind
        if kind[0] in ("input", "free"):
            self.outside[s] = t
        if t is not None:
            self.slot_of[id(t)] = s
            self.keep.append(t)
            if isinstance(t, TensorBase):
                self.array_slot.setdefault(id(t._data), s)
                self.keep.append(t._data)
        return s

    def slot(self, t: TensorBase) -> int:
        s = self.slot_of.get(id(t))
        if s is not None:
            k = self.kind[s]
            if k[0] != "temp" or self.temp[s][0]() is t:
                return s
        if id(t) in self.free_ids or (t._rg and t._grad_fn is None):
            return self._new(t, ("free", t))
        s = self.n
        self.n += 1
        self.kind[s] = ("temp",)
        self.temp[s] = (weakref.ref(t), t._data)
        self.slot_of[id(t)] = s
        return s

    def const(self, v: Any) -> int:
        s = self.n
        self.n += 1
        self.kind[s] = ("const",)
        self.const_values[s] = v
        return s

    def fail(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def data_read(self, what: str) -> None:
        """An op's Python code turned tensor data into a Python value that decides what it
        records (matrix_exp's number of squarings, repeat_interleave's repeats): two traces of
        equal inputs agree on it, so the key stays eager (a replay would keep the value)."""
        self.fail(f"{what} computes a Python value from tensor data (a replay would keep it)")

    def graph_break(self, what: str) -> None:
        reason = f"graph break: {what} inside the compiled region"
        if self.fullgraph:
            raise GraphBreak(reason + " (fullgraph=True)")
        self.fail(reason)

    # -- the hook Function.apply calls ------------------------------------------------------
    def record(self, cls: Any, ctx: Any, args: tuple, raw: list, outputs: list) -> None:
        if self.reason is not None:
            return
        if cls._tensor_io:
            return self.fail(f"custom autograd.Function {cls.__name__}")
        if ctx._grads_to_cpu is not None:
            return self.fail(f"{cls.__name__} mixes devices")
        arg_slots = []
        for a, r in zip(args, raw):
            if isinstance(a, TensorBase):
                if r is not a._data:
                    return self.fail(f"{cls.__name__}: an argument was moved between devices")
                arg_slots.append(self.slot(a))
            elif _backend.is_array(r):
                s = self.array_slot.get(id(r))
                arg_slots.append(s if s is not None else self.const(r))
            else:
                if type(r) is _Key and not r.from_tensor and any(
                        self._tensor_memory(a[1]) for a in r.adv):
                    # index_select's, index_add's, masked_scatter's... key holds a tensor's
                    # index or mask array: two traces of equal inputs agree on it, and a replay
                    # kept it as a constant (later calls with other indices went wrong)
                    return self.fail(f"{cls.__name__}: an index or mask from a tensor's data "
                                     "(a replay would keep it as a constant)")
                arg_slots.append(self.const(r))
        out_slots = []
        shapes = []
        for o in outputs:
            if o is None:
                out_slots.append(-1)
                shapes.append(None)
                continue
            if id(o) in self.slot_of and self.kind[self.slot_of[id(o)]][0] != "temp":
                return self.fail(f"{cls.__name__} returned one of its inputs (in place)")
            s = self._new(o, ("op",))
            self.out_tensors[s] = o
            out_slots.append(s)
            shapes.append(o._data.shape)
        self.ctxs.append(ctx)
        self.steps.append([OP, cls, ctx, tuple(arg_slots), tuple(out_slots), tuple(shapes),
                           _op_info(ctx, raw, outputs)])

    def _tensor_memory(self, arr: Any) -> bool:
        """Whether ``arr`` is (a view of) a tensor's memory: an input's or a free tensor's, a
        recorded op's output, or a tensor made from data outside recorded ops."""
        while arr is not None:
            i = id(arr)
            if i in self.array_slot or i in self.outside_memory or i in self.made_from_data:
                return True
            arr = getattr(arr, "base", None)
        return False

    def record_mask(self, x: TensorBase, p: float, shape: tuple, arr: Any) -> None:
        if self.reason is not None:
            return
        xs = self.slot(x)
        s = self._new(None, ("mask",))
        self.array_slot[id(arr)] = s
        self.keep.append(arr)
        self.steps.append([MASK, xs, p, shape, s, arr.shape])

    def record_update(self, stat: TensorBase, batch: TensorBase, momentum: float) -> None:
        if self.reason is not None:
            return
        ss = self.slot(stat)
        self.updated.add(id(stat))
        if self.kind[ss][0] not in ("free", "input"):
            return self.fail("running statistics of a tensor made inside the region")
        self.steps.append([UPDATE, ss, self.slot(batch), momentum])

    def record_snapshot(self, t: TensorBase, old: TensorBase) -> None:
        """A tracked in-place op (``relu_()``, ``ReLU(inplace=True)``) runs on ``old``, a copy of
        t's value. Replay needs no write: ``old`` is t's slot, and after the op t is read from
        the op's output slot (``record_rebind``). Only for tensors the region made, with no
        views of them (a view would see the write in eager mode)."""
        if self.reason is not None:
            return
        s = self.slot_of.get(id(t))
        if s is None or self.kind[s][0] != "op" or t._base is not None:
            return self.fail("an in-place op on a tensor the region did not make "
                             "(an input, a parameter or a view)")
        if any(o._base is t for o in self.out_tensors.values()):
            return self.fail("an in-place op on a tensor that has views")
        self.slot_of[id(old)] = s
        self.array_slot[id(old._data)] = s
        self.keep += [old, old._data]
        self.out_tensors[s] = old  # old keeps the history of the op that made the value
        self.rebinding = t

    def record_rebind(self, t: TensorBase, arr: Any) -> None:
        self.rebinding = None
        s = self.array_slot.get(id(arr))
        if s is not None:
            # an op may hand back an earlier op's array as its output (index_add's last step
            # returns the values IndexPutAdd accumulated): t takes the last op's output, the
            # one whose history it adopts (array_slot keeps the first: x's gradient was lost)
            for s2 in reversed(self.out_tensors):
                if self.out_tensors[s2]._data is arr:
                    s = s2
                    break
        if s is None or self.kind[s][0] != "op":
            return self.fail("an in-place op whose result is not an op's output")
        self.slot_of[id(t)] = s
        self.array_slot[id(t._data)] = s
        self.pending_bump = id(t)

    def record_write(self, t: TensorBase, arr: Any) -> None:
        """An in-place op outside autograd (``buffer.add_(1)`` under no_grad): the result of a
        recorded op is copied into ``t``'s memory."""
        if self.reason is not None:
            return
        d = t._data
        src = self.array_slot.get(id(arr))
        if t._rg or t._base is not None or not d.flags.writeable or 0 in d.strides \
                or src is None or arr.shape != d.shape or arr.dtype != d.dtype:
            return self.fail("an in-place write (x.add_(), x[i] = v, ...) inside the region")
        dst = self.slot(t)
        if self.kind[dst][0] not in ("free", "input", "op"):
            return self.fail("an in-place write into a tensor made outside ember's ops")
        self.updated.add(id(t))
        self.pending_bump = id(t)
        self.steps.append([WRITE, dst, src])

    # -- after the run ----------------------------------------------------------------------
    def finish(self, out_leaves: list, out_spec: Any) -> Program | None:
        """Build the program, or return None (with ``self.reason``) when it cannot replay."""
        if self.reason is not None:
            return None
        for ctx in self.ctxs:
            if ctx._pre_hooks is not None or ctx._post_hooks is not None or ctx._retain is not None:
                self.fail("a hook or retain_grad() on a tensor inside the region")
                return None
        for t, arr, copy, grad in self.before:
            if id(t) in self.updated:
                continue
            if t._data is not arr or t._grad is not grad or not _equal(
                    _backend.to_numpy(t._data), copy):
                self.fail("the region changes a tensor from outside it by code that is not one "
                          "of ember's ops (an optimizer step, .grad, .data = ...)")
                return None
        self.before = []
        kind = self.kind
        # unknown tensors: the same array as a known slot (e.g. ``p.detach()``) reads that
        # slot; sharing memory with one otherwise cannot be followed; else a constant
        redirect: dict[int, int] = {}
        known_roots: dict[int, int] = {}
        outside_roots = self.outside_memory  # memory of the region's inputs and free tensors
        for obj in self.keep:
            if isinstance(obj, TensorBase) and id(obj) in self.slot_of:
                known_roots.setdefault(id(_root(obj._data)), self.slot_of[id(obj)])
        owners: set[int] = set()  # constants whose memory recorded views of them share
        for s, (_ref, arr) in self.temp.items():
            same = self.array_slot.get(id(arr))
            if same is not None:
                redirect[s] = same
                continue
            made = self.made_from_data.get(id(arr))
            if made is not None and made() is arr and id(_root(arr)) not in outside_roots:
                self.fail("a value computed from tensor data outside ember's recorded ops "
                          "(argmax, max_pool2d's indices, ...)")
                return None
            if id(_root(arr)) in known_roots and (
                    _root(arr) is not arr or id(arr) in outside_roots):
                self.fail("a tensor sharing memory with another one, made outside ember's ops")
                return None
            else:
                # a constant; when it owns memory that recorded ops' outputs view (``arange(T)``
                # then ``.unsqueeze(0)``), replay recomputes those views from it
                kind[s] = ("const",)
                self.const_values[s] = arr
                if id(_root(arr)) in known_roots:
                    owners.add(id(arr))
        for s in list(self.const_values):
            v = self.const_values[s]
            if _backend.is_array(v) and id(_root(v)) in known_roots and id(v) not in owners:
                same = self.array_slot.get(id(v))
                if same is None:
                    self.fail("an array sharing memory with a tensor of the region")
                    return None
                redirect[s] = same
                del self.const_values[s]

        def r(s: int) -> int:
            return redirect.get(s, s)

        prog = Program()
        prog.n_slots = self.n
        prog.init = [None] * self.n
        for s, v in self.const_values.items():
            prog.init[s] = v
        prog.inputs = [(k[1], s) for s, k in kind.items() if k[0] == "input"]
        free_index: dict[int, int] = {}
        prog.free = []
        for s, k in kind.items():
            if k[0] == "free":
                t = k[1]
                free_index[s] = len(prog.free)
                prog.free.append((t, s, t._data.shape, t._data.dtype, type(t._data), t._rg))
        # which slots carry gradients: inputs/free tensors that require grad, op outputs whose
        # grad_fn is the op that made them
        rg = {s for s, t in self.outside.items() if t._rg}
        steps = []
        prog.op_info = []  # per OP step, what cgen.py needs to fuse it (see _op_info)
        metas: list = []  # per step: an op's inputs' (shape, dtype) as apply recorded them
        bsched = []
        edge_used: dict[int, None] = {}
        saved_outside: dict[int, None] = {}
        op_index = 0
        for st in self.steps:
            if st[0] == OP:
                _, cls, ctx, aslots, oslots, shapes, info = st
                aslots = tuple(r(s) for s in aslots)
                prog.op_info.append(info)
                metas.append(getattr(ctx, "_meta", None) if ctx.needs_input_grad else None)
                steps.append((OP, cls.forward, cls._node_cls, ctx.xp, ctx.needs_input_grad,
                              aslots, oslots, shapes))
                grads_here = False
                for s in oslots:
                    if s < 0:
                        continue
                    t = self.out_tensors[s]
                    if t._rg:
                        if t._grad_fn is not ctx:
                            self.fail(f"{cls.__name__}: an output's history is not its op")
                            return None
                        rg.add(s)
                        grads_here = True
                if grads_here:
                    edges = []
                    for i, nig in enumerate(ctx.needs_input_grad):
                        if nig:
                            s = aslots[i]
                            if s not in rg:
                                self.fail(f"{cls.__name__}: a gradient edge the trace cannot follow")
                                return None
                            edges.append((i, s, ctx._meta[i][0], ctx._meta[i][1]))
                            if kind[s][0] in ("input", "free"):
                                edge_used[s] = None
                    materialize = ctx._n_out > 1 and ctx._materialize
                    ometa = tuple((sh, self.out_tensors[s]._data.dtype) if s >= 0 else None
                                  for s, sh in zip(oslots, shapes))
                    bsched.append((op_index, cls.backward, oslots, ometa, materialize,
                                   tuple(edges), cls.__name__))
                    if ctx._saved:
                        for v in ctx._saved:
                            for a in aslots:
                                t = self.outside.get(a)
                                if t is not None and v is t._data:
                                    saved_outside[a] = None
                                    break
                op_index += 1
            elif st[0] == MASK:
                metas.append(None)
                _, xs, p, shape, s, _shape = st
                steps.append((MASK, r(xs), p, shape, s))
            elif st[0] == UPDATE:
                metas.append(None)
                _, ss, bs, m = st
                steps.append((UPDATE, r(ss), r(bs), m, free_index.get(ss, -1)))
            else:
                metas.append(None)
                _, ds, src_s = st
                steps.append((WRITE, r(ds), r(src_s), free_index.get(ds, -1)))
        prog.steps = steps
        prog.metas = metas
        bsched.reverse()
        prog.bsched = bsched
        prog.needs_grad = bool(bsched)

        def src(s: int) -> tuple:
            k = kind[s]
            return ("input", k[1]) if k[0] == "input" else ("free", free_index[s])

        prog.edge_slots = list(edge_used)
        prog.edge_src = [src(s) for s in prog.edge_slots]
        prog.saved_src = [src(s) for s in saved_outside]
        # outputs
        out_slots: list[int] = []
        leaves = []
        for leaf in out_leaves:
            if isinstance(leaf, TensorBase):
                s = self.slot_of.get(id(leaf))
                if s is None:
                    self.fail("the region returns a tensor made outside ember's ops")
                    return None
                s = r(s)
                k = kind[s]
                if k[0] == "input":
                    leaves.append(("input", k[1]))
                elif k[0] == "free":
                    leaves.append(("free", free_index[s]))
                elif k[0] == "op":
                    if leaf._base is not None:
                        # a view of an intermediate that nothing else returned can reach (an
                        # LSTM's batch-first output, a transposed attention output) comes back
                        # as a tensor of its own, same values and strides: no caller can tell
                        # (an in-place change reaches nothing else); a view of an input, a
                        # parameter or of memory another output shares cannot be followed
                        root = id(_root(leaf._data))
                        if root in outside_roots or sum(
                                1 for o in out_leaves if isinstance(o, TensorBase)
                                and id(_root(o._data)) == root) > 1:
                            self.fail("the region returns a view of an input, a parameter or "
                                      "of memory another output shares")
                            return None
                    if s in rg and leaf._rg:
                        if s not in out_slots:
                            out_slots.append(s)
                        leaves.append(("diff", s, out_slots.index(s)))
                    else:
                        leaves.append(("slot", s))
                else:
                    self.fail("the region returns a tensor made outside ember's ops")
                    return None
            else:
                leaves.append(("py", leaf))
        prog.out_slots = out_slots
        prog.bsched = _eager_order(prog.bsched, out_slots)
        prog.out_spec = (out_spec, leaves)
        # outputs whose memory an op saved for backward: eager mode raises at backward when one
        # is changed in place (its version counter moved), so the replayed outputs are checked too
        saved_roots = {id(_root(a)) for st in self.steps if st[0] == OP and st[2]._saved
                       for a in st[2]._saved if _backend.is_array(a)}
        prog.out_guard = tuple(
            i for i, leaf in enumerate(out_leaves)
            if leaves[i][0] in ("diff", "slot") and id(_root(leaf._data)) in saved_roots)
        prog.consts = [(s, v) for s, v in self.const_values.items()]
        prog.signature = _signature(prog)
        prog.drops = _drops(prog)
        return prog


def _eager_order(bsched: list, out_slots: list) -> list:
    """The backward schedule in the order the eager engine runs the region's nodes, so that a
    value read several times gets its gradients added up in the engine's order (float addition
    is not associative: for three reads or more another order can round apart).

    ``bsched`` comes in reverse op order. This replays ``engine._walk_nodes_python`` on the
    region's own nodes: dependency counts over the edges reachable from the nodes that made the
    differentiable outputs (pushed in output order, as ``autograd.backward`` pushes its roots),
    then a LIFO stack, each finished node releasing its edges' nodes in argument order. Nodes
    outside the region never change the relative order of the region's nodes (they run only
    once every region node that feeds them has). Entries no output reaches (they get no
    gradient) keep their place at the end."""
    producer: dict[int, int] = {}
    for j, entry in enumerate(bsched):
        for s in entry[2]:
            if s >= 0:
                producer[s] = j
    roots = list(dict.fromkeys(producer[s] for s in out_slots if s in producer))
    deps: dict[int, int] = {}
    seen = set(roots)
    stack = list(roots)
    while stack:  # (_dependencies_python)
        j = stack.pop()
        for e in bsched[j][5]:
            p = producer.get(e[1])
            if p is not None:
                deps[p] = deps.get(p, 0) + 1
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
    ready = [j for j in roots if deps.get(j, 0) == 0]
    order: list[int] = []
    while ready:
        j = ready.pop()
        order.append(j)
        for e in bsched[j][5]:
            p = producer.get(e[1])
            if p is not None:
                deps[p] -= 1
                if deps[p] == 0:
                    ready.append(p)
    if len(order) != len(seen):  # (cannot happen for a traced DAG: keep the reverse order)
        return bsched
    done = set(order)
    return [bsched[j] for j in order] + [e for j, e in enumerate(bsched) if j not in done]


_PY_SCALARS = (int, float, bool, type(None))


def _op_info(ctx: Any, raw: list, outputs: list) -> tuple | None:
    """What generated native code needs to stand in for one op's ``forward``: per argument
    ``("arr", dtype, shape)`` or ``("py", value)``; the outputs' dtypes; where each saved value
    comes from (``("arg", i)``, ``("out", j)`` or None); the attributes ``forward`` set on the
    ctx (Python scalars and tuples of ints only; a tuple of ints is a ``"py"`` argument too).
    None when the ctx holds anything else (cgen.py then leaves the op to NumPy).

    Arrays are those of the op's device: NumPy's on the CPU, CuPy's (or fake CUDA's) on CUDA
    (cudagen.py emits those groups); an argument of another type (a 0-d CPU tensor joining a
    CUDA op) is ``("other",)``, which no group fuses."""
    if not outputs or outputs[0] is None:
        return None
    kind = type(outputs[0]._data)
    if kind is not np.ndarray and kind is not _backend.cuda_array_type():
        return None
    args = []
    for r in raw:
        if type(r) is kind:
            args.append(("arr", r.dtype, r.shape))
        elif type(r) in _PY_SCALARS or _int_tuple(r):
            args.append(("py", r))
        else:
            args.append(("other",))
    outs = []
    for o in outputs:
        if o is None or type(o._data) is not kind:
            return None
        outs.append(o._data)
    saved: Any = None
    if ctx._saved is not None:
        if type(ctx._saved) is not tuple:
            return None
        saved = []
        for v in ctx._saved:
            if v is None:
                saved.append(None)
                continue
            where = next((("arg", i) for i, r in enumerate(raw) if r is v), None) or next(
                (("out", j) for j, o in enumerate(outs) if o is v), None)
            if where is None:
                return None
            saved.append(where)
        saved = tuple(saved)
    attrs = dict(getattr(ctx, "__dict__", None) or {})
    if any(type(v) not in _PY_SCALARS and not _int_tuple(v) for v in attrs.values()):
        return None
    return tuple(args), tuple(o.dtype for o in outs), saved, attrs


def _int_tuple(v: Any) -> bool:
    """A tuple of Python ints (a reduction's axes, an input's shape): immutable, kept as is."""
    return type(v) is tuple and all(type(i) is int for i in v)


def _drops(prog: Program) -> list:
    """Per step, the op-output slots read for the last time there: replay lets them go (their
    ctxs keep what backward needs), so the allocator can hand the memory to the next op, as it
    does in eager mode where an intermediate dies with its last reference."""
    keep = {leaf[1] for leaf in prog.out_spec[1] if leaf[0] in ("diff", "slot")}
    keep.update(s for _, s in prog.inputs)
    keep.update(f[1] for f in prog.free)
    keep.update(s for s, v in enumerate(prog.init) if v is not None)
    last: dict[int, int] = {}
    for k, st in enumerate(prog.steps):
        reads = st[5] if st[0] == OP else (st[1],) if st[0] == MASK else (st[1], st[2])
        for s in reads:
            last[s] = k
    drops: list = [() for _ in prog.steps]
    for s, k in last.items():
        if s not in keep:
            drops[k] += (s,)
    return drops


def _signature(prog: Program) -> tuple:
    """What two traces of one guard key must share: every step's op and wiring, and which slots
    hold constants (their values are compared by ``same``)."""
    steps = []
    for st in prog.steps:
        if st[0] == OP:
            steps.append((OP, st[1], st[4], st[5], st[6], st[7]))
        else:
            steps.append(st)
    return (tuple(steps), tuple(s for s, _ in prog.consts), len(prog.free),
            tuple(id(f[0]) for f in prog.free), repr(prog.out_spec[0]),
            tuple(x[:2] if x[0] != "py" else ("py",) for x in prog.out_spec[1]))


_equal = _backend.values_equal


def same(p: Program, q: Program) -> bool:
    """Whether two traces of one guard key agree: same steps and wiring, same constants. A
    constant that differs came from data (an op outside ``Function.apply``, e.g. ``argmax``)
    or from an unrecorded random draw: such a region stays eager."""
    try:
        if p.signature != q.signature:
            return False
    except Exception:  # noqa: BLE001 - arrays inside a signature: not comparable, not trusted
        return False
    for (s1, v1), (s2, v2) in zip(p.consts, q.consts):
        if s1 != s2 or not (_equal(v1, v2) or _same_function(v1, v2)):
            return False
    for a, b in zip(p.out_spec[1], q.out_spec[1]):
        if a[0] == "py" and not _equal(a[1], b[1]):
            return False
    return True


def _same_function(f: Any, g: Any) -> bool:
    """Two functions an op makes afresh at each call (``isclose``'s ``lambda x, y:
    xp.isclose(x, y, rtol=rtol, atol=atol)``, run as a recorded op): the same code over the same
    modules and equal Python numbers. (A new function object per call made every such region
    stay eager; closures over anything else, an array say, still do.)"""
    if type(f) is not types.FunctionType or type(g) is not types.FunctionType \
            or f.__code__ is not g.__code__ or not _equal(f.__defaults__, g.__defaults__) \
            or f.__kwdefaults__ or g.__kwdefaults__:
        return False
    for a, b in zip(f.__closure__ or (), g.__closure__ or ()):
        try:
            x, y = a.cell_contents, b.cell_contents
        except ValueError:  # an empty cell
            return False
        if x is not y and not (type(x) in _PY_SCALARS and _equal(x, y)):
            return False
    return True


# -- patches installed while a trace runs ---------------------------------------------------

class Patches:
    """Installs the graph-break detectors and the dropout/BatchNorm recorders for one trace."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.undo: list = []

    def _set(self, owner: Any, name: str, value: Any) -> None:
        had = name in owner.__dict__
        self.undo.append((owner, name, owner.__dict__.get(name), had))
        setattr(owner, name, value)

    def __enter__(self) -> Patches:
        import ember

        from .._tensor import Tensor
        # the modules themselves (``ember.ops.nn`` exports functions of the same names)
        _dropout = importlib.import_module("ember.ops.nn.dropout")
        _norm = importlib.import_module("ember.ops.nn.normalization")

        tr = self.tracer

        def breaker(name: str, orig: Any) -> Any:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if _function.tracer is tr:
                    tr.graph_break(f"Tensor.{name}()" if not name.startswith("__")
                                   else f"{name} on a tensor")
                return orig(*args, **kwargs)

            return wrapped

        for name in BREAK_METHODS:
            orig = getattr(Tensor, name, None)
            if orig is not None:
                self._set(Tensor, name, breaker(name, orig))
        for name in BREAK_FUNCTIONS:
            orig = getattr(ember, name, None)
            if orig is not None:
                self._set(ember, name, breaker(name, orig))

        def bumper(orig_bump: Any) -> Any:
            def bump(t: Any) -> None:
                if tr.pending_bump == id(t):
                    tr.pending_bump = 0
                elif _function.tracer is tr and not tr.allow_bump:
                    tr.fail("an in-place write (x.add_(), x[i] = v, ...) inside the region")
                orig_bump(t)

            return bump

        # (Tensor defines its own _bump_version: patching TensorBase alone missed every write
        # that bumps a Tensor directly, resize_() and the random fills normal_(), uniform_()...)
        for cls in (TensorBase, Tensor):
            if "_bump_version" in cls.__dict__:
                self._set(cls, "_bump_version", bumper(cls.__dict__["_bump_version"]))

        def on_make(t: Any) -> None:
            # (ember.ops.creation makes tensors from Python values and shapes only: constants)
            if _function.tracer is tr and \
                    sys._getframe(2).f_globals.get("__name__") not in _PURE_MAKERS:
                d = t._data
                try:
                    tr.made_from_data[id(d)] = weakref.ref(d)
                except TypeError:  # an array type without weak references: not followed
                    pass

        self.prev_on_make = _tensor_base._on_make
        _tensor_base._on_make = on_make

        orig_mask = _dropout._keep_mask

        def keep_mask(x: Any, p: float, shape: tuple) -> Any:
            arr = orig_mask(x, p, shape)
            if _function.tracer is tr:
                tr.record_mask(x, p, shape, arr)
            return arr

        self._set(_dropout, "_keep_mask", keep_mask)
        orig_update = _norm._update_running

        def update_running(stat: Any, batch: Any, momentum: float) -> None:
            if stat is not None and _function.tracer is tr:
                tr.record_update(stat, batch, momentum)
            tr.allow_bump += 1
            try:
                orig_update(stat, batch, momentum)
            finally:
                tr.allow_bump -= 1

        self._set(_norm, "_update_running", update_running)

        from ..autograd import engine as _engine

        orig_run = _engine.run_backward

        def run_backward(*args: Any, **kwargs: Any) -> Any:
            if _function.tracer is tr:
                tr.graph_break("backward() / autograd.grad()")
            saved, _function.tracer = _function.tracer, None  # a backward records nothing
            try:
                return orig_run(*args, **kwargs)
            finally:
                _function.tracer = saved

        self._set(_engine, "run_backward", run_backward)
        _inplace = importlib.import_module("ember.ops.inplace")
        orig_write = _inplace._write

        def write(t: Any, arr: Any) -> None:
            if _function.tracer is tr and arr is not t._data:
                if tr.rebinding is t:
                    tr.record_rebind(t, arr)
                else:
                    tr.record_write(t, arr)
            orig_write(t, arr)

        self._set(_inplace, "_write", write)
        orig_snapshot = _inplace._snapshot

        def snapshot(t: Any) -> Any:
            old = orig_snapshot(t)
            if _function.tracer is tr:
                tr.record_snapshot(t, old)
            return old

        self._set(_inplace, "_snapshot", snapshot)
        return self

    def __exit__(self, *exc: object) -> None:
        _tensor_base._on_make = self.prev_on_make
        for owner, name, value, had in reversed(self.undo):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)
