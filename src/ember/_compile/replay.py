"""Replaying a traced region: each recorded op's ``forward`` runs on arrays, in order, and the
region appears in the autograd graph as one node (``CompiledFunctionBackward``) whose backward
runs the recorded ops' ``backward`` rules in a reverse schedule fixed at trace time.

Per op this does what ``Function.apply`` and the engine do, minus the wrappers: a fresh ctx
with the traced ``needs_input_grad``; gradients summed down to each input's shape
(``sum_to_shape``) and cast to its dtype, then added up per value; zeros for the unused outputs
of a multi-output op; dropout masks drawn from the same generator in the same order; BatchNorm's
running statistics updated with the same arithmetic.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from typing import Any

import numpy as np

from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd.engine import sum_to_shape
from ..autograd.function import Op
from ..ops import random as _random
from .trace import MASK, OP, UPDATE, Program

_make = TensorBase._make
_new_node = object.__new__


class ShapeChanged(Exception):
    """An op's output shape differs from the trace's: the region has a data-dependent shape."""


class CompiledFunction(Op):
    """The autograd node of a replayed region (PyTorch names it ``CompiledFunctionBackward``)."""

    node_name = "CompiledFunctionBackward"

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:  # never applied: replay builds the node itself
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        if ctx._tensor_mode:  # create_graph: the engine hands tensors
            double_backward()
        prog, ctxs = ctx._saved
        if prog.bwd_fn is not None:  # the generated backward (codegen.py)
            return prog.bwd_fn(ctx, *grads)
        return run_backward(prog, ctxs, grads)


def double_backward() -> None:
    raise RuntimeError(
        "double backward (create_graph=True) through a torch.compile'd region is not "
        "supported by ember: run that model uncompiled, or compile with disable=True.")


def region_function(backward: Any) -> type:
    """A CompiledFunction whose backward is a program's generated one (codegen.py): the engine
    calls it on the node directly, without CompiledFunction.backward's frame in between."""
    cls = type("CompiledFunction", (CompiledFunction,), {
        "backward": staticmethod(backward), "node_name": CompiledFunction.node_name,
        "__module__": CompiledFunction.__module__, "__qualname__": "CompiledFunction"})
    cls._node_cls._materialize = False
    return cls


# A region's outputs that get no gradient stay None (its backward knows which): a class default,
# so the node has no instance fields and the engine frees it without calling Node._release
CompiledFunction._node_cls._materialize = False


def run_forward(prog: Program, flat: list) -> tuple[list, list | None]:
    """The region's values (one per slot) and, when it needs gradients, its ops' ctxs."""
    vals = list(prog.init)
    for pos, s in prog.inputs:
        vals[s] = flat[pos]._data
    for f in prog.free:
        vals[f[1]] = f[0]._data
    ctxs: list | None = [] if prog.needs_grad else None
    undo: list = []
    rng_state = None
    try:
        for st, done, meta in zip(prog.steps, prog.drops, prog.metas):
            if st[0] is OP:
                _, fwd, ncls, xp, nig, aslots, oslots, shapes = st
                ctx = _new_node(ncls)  # Node.__init__'s fields, without the call (as apply)
                ctx._edges = ()
                ctx._saved = None
                ctx._versions = None
                ctx._n_out = 1
                ctx.xp = xp
                ctx.needs_input_grad = nig
                if meta is not None:
                    ctx._meta = meta
                out = fwd(ctx, *[vals[i] for i in aslots])
                if type(out) is tuple:
                    for s, o, sh in zip(oslots, out, shapes):
                        if s >= 0:
                            if o.shape != sh:
                                raise ShapeChanged
                            vals[s] = o
                else:
                    if out.shape != shapes[0]:
                        raise ShapeChanged
                    vals[oslots[0]] = out
                if ctxs is not None:
                    ctxs.append(ctx)
            elif st[0] is MASK:
                _, xs, p, shape, s = st
                if rng_state is None:
                    rng_state = rng_snapshot()
                vals[s] = prog_mask(_make(vals[xs]), p, shape)
            elif st[0] is UPDATE:
                _, ss, bs, m, fi = st
                arr = vals[ss]
                undo.append((arr, arr.copy()))
                # the same arithmetic as ops/nn/normalization.py's _update_running
                new = arr * (1 - m) + vals[bs].astype(arr.dtype) * m
                arr[...] = new.reshape(arr.shape)
                if fi >= 0:
                    prog.free[fi][0]._bump_version()
            else:  # an in-place write outside autograd (ops/inplace.py's _write)
                _, ds, src, fi = st
                arr = vals[ds]
                undo.append((arr, arr.copy()))
                arr[...] = vals[src]
                if fi >= 0:
                    prog.free[fi][0]._bump_version()
            for s in done:  # values read for the last time: their memory can serve the next op
                vals[s] = None
    except ShapeChanged:
        for arr, old in reversed(undo):  # back to the state before the call: it reruns eagerly
            arr[...] = old
        if rng_state is not None:
            rng_restore(rng_state)
        raise
    return vals, ctxs


# The default generator's MT19937 words and position, copied as bytes: what a mask's draw changes
# (with the generator's spare normals). ``Generator.get_state`` builds PyTorch's byte layout
# (~80 us; NumPy's ``state`` dict alone ~60 us), which for a small region cost as much as the
# rest of its forward; the copy is ~1 us. Checked once against NumPy's own state (a NumPy whose
# layout differs keeps ``get_state``).
_MT_BYTES = 624 * 4 + 4  # NumPy's mt19937_state: uint32 key[624]; int pos
_mt_layout_ok: bool | None = None


def _mt_layout() -> bool:
    global _mt_layout_ok
    if _mt_layout_ok is None:
        try:
            bg = np.random.MT19937(1)
            bg.random_raw(7)
            st = bg.state["state"]
            addr = bg.ctypes.state_address
            raw = ctypes.string_at(addr, _MT_BYTES)
            ok = (raw[:-4] == np.asarray(st["key"], np.uint32).tobytes()
                  and int.from_bytes(raw[-4:], sys.byteorder, signed=True) == int(st["pos"]))
            first = bg.random_raw(700)
            ctypes.memmove(addr, raw, _MT_BYTES)
            _mt_layout_ok = bool(ok and (bg.random_raw(700) == first).all())
        except Exception:  # noqa: BLE001 - any surprise: keep the slow, documented path
            _mt_layout_ok = False
    return _mt_layout_ok


def rng_snapshot() -> tuple:
    """The default generator's state before a region's first draw (``rng_restore`` puts it
    back when the region reruns eagerly)."""
    g = _random.default_generator
    if _mt_layout_ok or _mt_layout():
        return g, ctypes.string_at(g._bg.ctypes.state_address, _MT_BYTES), g._normal, \
            g._normal_f
    return g, g.get_state(), None, None


def rng_restore(snap: tuple) -> None:
    g, raw, normal, normal_f = snap
    if type(raw) is bytes:
        ctypes.memmove(g._bg.ctypes.state_address, raw, _MT_BYTES)
        g._normal, g._normal_f = normal, normal_f
    else:
        g.set_state(raw)


def bad_count(name: str, i: int, n: int) -> None:
    """A backward rule returned fewer gradients than the region's edges need."""
    raise RuntimeError(f"function {name}Backward returned an incorrect number of gradients "
                       f"(expected more than {i}, got {n})")


def prog_mask(x: Any, p: float, shape: tuple) -> Any:
    return importlib.import_module("ember.ops.nn.dropout")._keep_mask(x, p, shape)


def make_outputs(prog: Program, vals: list, ctxs: list | None, flat: list) -> list:
    """The region's output leaves: tensors whose ``grad_fn`` is one node for the whole region."""
    node = None
    if ctxs is not None and prog.out_slots:
        node = _new_node(_NODE_CLS)  # (Node.__init__'s fields are all set below)
        edges = []
        meta = []
        accumulator = _function._accumulator
        free = prog.free
        for where, k in prog.edge_src:
            t = flat[k] if where == "input" else free[k][0]
            fn = t._grad_fn
            edges.append((fn, t._output_nr) if fn is not None else (accumulator(t), 0))
            d = t._data
            meta.append((d.shape, d.dtype))
        node._edges = tuple(edges)
        node._meta = meta
        node._n_out = len(prog.out_slots)
        node.xp = prog.steps[0][3] if prog.steps and prog.steps[0][0] is OP else None
        node.needs_input_grad = (True,) * len(edges)
        node._saved = (prog, ctxs)
        node._versions = None
        if prog.saved_src:
            versions = []
            for k, (where, i) in enumerate(prog.saved_src):
                t = flat[i] if where == "input" else prog.free[i][0]
                counter = t._version_counter()
                versions.append((counter, counter[0], k))
            node._versions = versions
    leaves = []
    for leaf in prog.out_spec[1]:
        kind = leaf[0]
        if kind == "diff":
            if node is not None:
                leaves.append(_make(vals[leaf[1]], True, node, leaf[2]))
            else:
                leaves.append(_make(vals[leaf[1]]))
        elif kind == "slot":
            v = vals[leaf[1]]
            leaves.append(_make(v.copy() if prog.init[leaf[1]] is not None else v))
        elif kind == "input":
            leaves.append(flat[leaf[1]])
        elif kind == "free":
            leaves.append(prog.free[leaf[1]][0])
        else:
            leaves.append(leaf[1])
    if node is not None and prog.out_guard:
        # an output an op saved for backward: changing it in place before backward raises, as
        # in eager mode, instead of the region's rules reading the changed values
        versions = list(node._versions or ())
        for i in prog.out_guard:
            t = leaves[i]
            counter = t._version
            if counter is None:
                counter = t._version = [0]
            versions.append((counter, counter[0], len(versions)))
        node._versions = versions
    return leaves


_NODE_CLS = CompiledFunction._node_cls
_new_node = object.__new__


def run_backward(prog: Program, ctxs: list, grads: tuple) -> tuple:
    """The region's backward: each recorded op's rule in reverse order, gradients summed per
    value exactly as the engine's ``_send`` does; returns one gradient per region edge."""
    gs: list = [None] * prog.n_slots
    for s, g in zip(prog.out_slots, grads):
        if g is not None:
            gs[s] = g if gs[s] is None else gs[s] + g
    for ci, bwd, oslots, ometa, materialize, edges, name in prog.bsched:
        if len(oslots) == 1:  # the common op: one output
            g0 = gs[oslots[0]]
            if g0 is None:
                continue
            out = bwd(ctxs[ci], g0)
        else:
            buf = [gs[s] if s >= 0 else None for s in oslots]
            if all(g is None for g in buf):
                continue
            if materialize:
                for k, g in enumerate(buf):
                    if g is None and ometa[k] is not None:
                        buf[k] = ctxs[ci].xp.zeros(ometa[k][0], ometa[k][1])
            out = bwd(ctxs[ci], *buf)
        ctx = ctxs[ci]
        if type(out) is not tuple:
            out = (out,)
        for i, s, shape, dt in edges:
            if i >= len(out):
                bad_count(name, i, len(out))
            g = out[i]
            if g is None:
                continue
            if g.shape != shape:
                g = sum_to_shape(g, shape, ctx)
            if g.dtype != dt:
                g = g.astype(dt)
            cur = gs[s]
            gs[s] = g if cur is None else cur + g
    return tuple(gs[s] for s in prog.edge_slots)
