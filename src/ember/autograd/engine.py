"""The backward engine: walk the recorded graph in reverse and apply the chain rule.

Iterative (no recursion: a 100,000-op chain works). Each node runs once all nodes that feed it a
gradient have run (Kahn's algorithm on dependency counts); gradients wait in ``buffers`` only
until their node runs; saved arrays are freed as each node finishes unless ``retain_graph``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _backend, _kernels_loader, _native_core, _threads
from .._backend import CPU_ARRAY
from .._dtype import from_numpy as _dtype_of
from .._tensor_base import TensorBase
from . import function as _function
from . import grad_mode
from .anomaly_mode import check_grads
from .function import FREED_MSG, AccumulateGrad, Node, Op
from .node import _only_nones

# -- the entry points: Tensor.backward() and autograd.grad() -------------------------------

# Callbacks queued during a backward run when that backward has finished, before it returns (one
# list per backward in progress: a hook may itself call backward). DistributedDataParallel waits
# for its gradient all-reduces here, as PyTorch's reducer does through the same call.
_final_callbacks: list[list] = []


def queue_callback(callback: Any) -> None:
    """Run ``callback()`` once the backward pass now running has finished, before it returns
    (PyTorch's ``Variable._execution_engine.queue_callback``)."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def _ones(d: Any) -> Any:
    """The implicit gradient of a one-element output: a new array of ones like ``d``."""
    if type(d) is CPU_ARRAY:  # (np.array for 0-d: a quarter of np.full's cost, a tenth of np.ones')
        return np.array(1, d.dtype) if d.ndim == 0 else np.full(d.shape, 1, d.dtype)
    return _backend.xp_of(d).ones(d.shape, d.dtype)


def _roots(tensors: Sequence[Any], grads: Sequence[Any] | None, create_graph: bool, what: str) -> list:
    roots = []
    grads = list(grads) if grads is not None else [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} "
                           f"gradients for {len(tensors)} outputs")
    for t, g in zip(tensors, grads):
        if not t.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn. "
                f"({what} was called on a tensor of shape {tuple(t.shape)} that no "
                "operation with requires_grad=True inputs produced: check that the parameters have "
                "requires_grad=True, and that the forward pass did not run under no_grad() or use "
                ".detach()/.item()/.numpy() on the way.)"
            )
        if g is None:
            if t._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (this tensor has shape "
                    f"{tuple(t.shape)}). Reduce it to one number first, e.g. loss = out.mean() or "
                    "out.sum(), or pass gradient=... with the same shape as the output."
                )
            arr = _ones(t._data)
            g = TensorBase._make(arr) if create_graph else arr
        else:
            if not isinstance(g, TensorBase):  # a number or a nested list: t's dtype and device
                xp = _backend.xp_of(t._data)
                g = TensorBase._make(xp.asarray(np.asarray(g, dtype=t._data.dtype)))
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a "
                    f"shape of {t.shape}."
                )
            g = g if create_graph else g._data
        if t.grad_fn is not None:
            roots.append((t.grad_fn, t._output_nr, g))
        else:
            roots.append((_function._accumulator(t), 0, g))
    return roots


def _backward_python(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                     create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of every leaf they depend on
    (``backward``; the native core runs its first branch in C and calls this for the rest)."""
    if grad_tensors is None and inputs is None and not create_graph and isinstance(tensors, TensorBase):
        fn = tensors._grad_fn  # the common call, loss.backward(): one scalar with a graph
        d = tensors._data
        if fn is not None and type(d) is CPU_ARRAY and d.size == 1:
            run_backward([(fn, tensors._output_nr, _ones(d))], bool(retain_graph), False)
            return
    if isinstance(tensors, TensorBase):
        tensors = [tensors]
        if grad_tensors is not None and isinstance(grad_tensors, TensorBase):
            grad_tensors = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(list(tensors), grad_tensors, create_graph, "backward()")
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
        got = grad(list(tensors), inputs, grad_tensors, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
        for t, g in zip(inputs, got):
            if g is not None:
                t.grad = g if t.grad is None else t.grad + g
        return
    run_backward(roots, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is written to ``.grad``)."""
    outputs = [outputs] if isinstance(outputs, TensorBase) else list(outputs)
    single = isinstance(inputs, TensorBase)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is not None and isinstance(grad_outputs, TensorBase):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    roots = _roots(outputs, grad_outputs, create_graph, "autograd.grad()")
    keys = []
    capture: dict = {}
    for t in inputs:
        key = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (_function._accumulator(t), 0)
        keys.append(key)
        capture.setdefault(key, [])
    run_backward(roots, retain_graph, create_graph, capture)
    result = []
    for i, (t, key) in enumerate(zip(inputs, keys)):
        got = capture[key]
        if not got:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) appears "
                    "to not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior."
                )
            result.append(t.new_zeros(t.shape) if materialize_grads else None)
            continue
        g = got[0]
        result.append(g if isinstance(g, TensorBase) else TensorBase._make(g))
    return tuple(result)



def _grad_batched(outputs: list, inputs: list, grad_outputs: Any, retain_graph: bool,
                  create_graph: bool, allow_unused: bool | None, materialize_grads: bool) -> tuple:
    """``grad(..., is_grads_batched=True)``: every grad_output carries a leading batch dim, and
    each input's gradient comes back with it: the gradients for each slice, stacked. PyTorch
    vmaps one backward over the batch; this runs one backward per slice (the graph kept until
    the last), writing each into its row of the result (a recorded copy under create_graph)."""
    if grad_outputs is None or any(g is None for g in grad_outputs):
        raise RuntimeError("autograd.grad(is_grads_batched=True) needs a batched tensor in "
                           "grad_outputs for every output (the gradients' leading dim is the "
                           "batch)")
    grad_outputs = list(grad_outputs)
    n = grad_outputs[0].shape[0] if grad_outputs[0].dim() else 0
    for g, o in zip(grad_outputs, outputs):
        if g.dim() == 0 or g.shape[0] != n or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                f"as the batch dimension. The sizes of the remaining dimensions are expected to "
                f"match the shape of corresponding output, but a mismatch was detected: "
                f"grad_output of shape {tuple(g.shape)} for output of shape {tuple(o.shape)}")
    rows: list = [None] * len(inputs)
    for b in range(n):
        got = grad(outputs, inputs, [g[b] for g in grad_outputs],
                   retain_graph=retain_graph if b == n - 1 else True, create_graph=create_graph,
                   allow_unused=True)
        for i, g in enumerate(got):
            if g is None:
                continue
            if rows[i] is None:
                rows[i] = g.new_zeros((n,) + tuple(g.shape))
            rows[i][b] = g
    result = []
    for i, (t, r) in enumerate(zip(inputs, rows)):
        if r is None and n:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) appears "
                    "to not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior.")
            # (PyTorch materialises an unused input's gradient unbatched, as zeros_like)
            r = t.new_zeros(t.shape) if materialize_grads else None
        elif r is None:
            r = t.new_zeros((0,) + tuple(t.shape))
        result.append(r)
    return tuple(result)


# -- the walk ------------------------------------------------------------------------------

def _dependencies_python(roots: list[Node]) -> dict[Node, int]:
    """How many edges point at each node reachable from ``roots`` (an iterative DFS)."""
    deps: dict[Node, int] = {}
    seen = set(roots)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for nxt, _ in node._edges:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return deps


def _needed(roots: list[Node], deps: dict[Node, int], targets: set[Node]) -> set[Node]:
    """Nodes from which a gradient can reach ``targets`` (autograd.grad runs only these)."""
    order = []
    deps = dict(deps)
    ready = [r for r in set(roots) if deps.get(r, 0) == 0]
    while ready:
        node = ready.pop()
        order.append(node)
        for nxt, _ in node._edges:
            if nxt is not None:
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    needed = set()
    for node in reversed(order):
        if node in targets or any(n in needed for n, _ in node._edges if n is not None):
            needed.add(node)
    return needed


def _run_backward_python(
    roots: list[tuple[Node, int, Any]],
    retain_graph: bool,
    create_graph: bool,
    capture: dict[tuple[Node, int], list] | None = None,
) -> None:
    """Backpropagate from ``roots`` = [(node, output_nr, grad)].

    Gradients are arrays, or tensors under ``create_graph``. With ``capture`` (autograd.grad),
    the gradient arriving at each (node, output_nr) key is appended to its list instead of
    being accumulated into a leaf's ``.grad``.
    """
    # a chain of nodes on leaves (a compiled region's node, the loss outside it, a chain of
    # ops): no dependency counts or buffers, the walk's steps for each node and its leaves in
    # the walk's order (_run_shallow; the C run_backward takes it while the C walk is bound,
    # this one while the Python walk is)
    shallow = (capture is None and not create_graph and len(roots) == 1
               and _walk_nodes is _walk_nodes_python)
    chain = _shallow(roots[0][0], roots[0][1]) if shallow else None
    handed_out: set[int] = set()  # arrays already stored in some .grad: never store one twice
    if chain is not None:
        g0 = roots[0][2]
        handed_out.add(id(g0))
    else:
        root_nodes = [n for n, _, _ in roots]
        deps = _dependencies(root_nodes)
        needed = None
        if capture is not None:
            needed = _needed(root_nodes, deps, {n for n, _ in capture})

        buffers: dict[Node, list] = {}
        for node, nr, g in roots:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._n_out
            buf[nr] = g if buf[nr] is None else buf[nr] + g
            handed_out.add(id(g))

        if len(root_nodes) == 1:
            ready = root_nodes if root_nodes[0] not in deps else []
        else:
            ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    # leaves' AccumulateGrad nodes run as soon as they are ready, before other ready nodes, as
    # PyTorch orders them (so a later error leaves the same .grads behind)
    ready_leaves: list[Node] = []
    callbacks: list = []
    _final_callbacks.append(callbacks)
    mode = grad_mode.state
    was_enabled = mode.enabled
    try:
        mode.enabled = create_graph  # (grad_mode.set_grad_enabled's effect, without its object)
        try:
            if chain is not None:
                _run_shallow_python(chain, g0, handed_out, retain_graph)
            else:
                _walk_nodes(ready, ready_leaves, buffers, deps, needed, capture, handed_out,
                            retain_graph, create_graph)
        finally:
            mode.enabled = was_enabled
        i = 0
        while i < len(callbacks):  # a callback may queue another
            callbacks[i]()
            i += 1
    finally:
        _final_callbacks.pop()


_SHALLOW_MAX = 64  # nodes of a chain, leaves under it, edges of a node (the C walk's arrays)


def _shallow(node: Node, nr: int) -> list | None:
    """The nodes of the graph under root ``(node, nr)`` when it is a chain, as ``_run_shallow``
    runs it, else None. A chain: each node takes the walk's fast path and has no pre-hooks or
    retained grad, and its edges lead to leaves' AccumulateGrad nodes (or nowhere) and to at most
    one further node of the chain; no leaf is reached twice. A compiled region's node on
    parameters is a chain of one, with the loss computed outside it a chain of two."""
    chain: list = []
    leaves: list = []
    while node is not None:
        fn = node._fn
        if not (fn is not None and not fn._tensor_io and node._n_out == 1 and nr == 0
                and node._pre_hooks is None and node._retain is None
                and node._post_hooks is None and node._grads_to_cpu is None
                and not _function.anomaly_enabled and len(chain) < _SHALLOW_MAX):
            return None
        chain.append(node)
        edges = node._edges
        if len(edges) > _SHALLOW_MAX:
            return None
        node = None
        for nxt, k in edges:
            if nxt is None:
                continue
            if type(nxt) is AccumulateGrad:
                if k != 0 or any(x is nxt for x in leaves) or len(leaves) >= _SHALLOW_MAX:
                    return None
                leaves.append(nxt)
            elif node is None:
                node, nr = nxt, k
            else:
                return None  # (two inner nodes, or one reached twice: the walk's counts)
    return chain


def _run_shallow_python(chain: list, g: Any, handed_out: set[int], retain_graph: bool) -> None:
    """What the walk does for a chain (``_shallow``): each node's fast path, then the leaves it
    sent a gradient to, the last edge's first (the walk's ready_leaves, which run before the
    next node); the same checks, errors, releases and accumulation, without dependency counts
    or buffer dicts. The chain's conditions are the ones ``_shallow`` saw before the walk."""
    for node in chain:
        if g is None:  # the node got no gradient: nothing under it runs
            return
        if node._saved is None and node._freed:
            raise RuntimeError(FREED_MSG)
        versions = node._versions
        if versions is not None:
            for counter, seen, _k in versions:
                if counter[0] != seen:
                    node._check_versions()
        grads = node._fn.backward(node, g)
        if type(grads) is not tuple:
            grads = (grads,)
        if not retain_graph:
            if node.__dict__:
                node._release()
            elif node._saved is not None and not _only_nones(node._saved):
                node._saved = None
                node._saved_src = None
                node._freed = True
        edges = node._edges
        if len(grads) < len(edges):
            _check_grad_count(node, grads)
        meta = node._meta
        sent = []
        g = None
        i = -1
        for nxt, _ in edges:
            i += 1
            if nxt is None:
                continue
            gi = grads[i]
            if gi is not None:
                shape, dt = meta[i]
                if gi.shape != shape:
                    gi = sum_to_shape(gi, shape, node)
                if gi.dtype != dt:
                    gi = gi.astype(dt)
            if type(nxt) is not AccumulateGrad:
                g = gi
            elif gi is not None:
                sent.append((nxt, gi))
        grads = gi = None
        while sent:
            nxt, gi = sent.pop()
            buf = [gi]
            gi = None
            if nxt._pre_hooks is not None or nxt._retain is not None:
                _run_pre_hooks(nxt, buf)
            _run_node(nxt, buf, {}, None, handed_out, retain_graph, False)


def _walk_nodes_python(ready: list, ready_leaves: list, buffers: dict, deps: dict,
                       needed: set | None, capture: dict | None, handed_out: set[int],
                       retain_graph: bool, create_graph: bool) -> None:
    """Run every ready node until none is left (the loop ``ember._native``'s ``walk_nodes``
    implements in C, calling back the same Python functions for every rare branch)."""
    # The common node (a built-in op run on arrays, one output, no hooks, no capture, no anomaly
    # mode) takes the inlined path below: _call_backward, _release and _send in one loop body.
    plain = capture is None and not create_graph
    pop = buffers.pop
    while ready or ready_leaves:
        node = ready_leaves.pop() if ready_leaves else ready.pop()
        buf = pop(node, None)
        if buf is not None and (needed is None or node in needed):
            if node._pre_hooks is not None or node._retain is not None:
                _run_pre_hooks(node, buf)
            fn = node._fn
            if (plain and fn is not None and not fn._tensor_io and node._n_out == 1
                    and node._post_hooks is None and node._grads_to_cpu is None
                    and not _function.anomaly_enabled):
                if node._saved is None and node._freed:
                    raise RuntimeError(FREED_MSG)
                versions = node._versions
                if versions is not None:
                    for counter, seen, _k in versions:  # (_check_versions' test, inlined)
                        if counter[0] != seen:
                            node._check_versions()
                grads = fn.backward(node, buf[0])
                if type(grads) is not tuple:
                    grads = (grads,)
                if not retain_graph:
                    if node.__dict__:
                        node._release()
                    elif node._saved is not None and not _only_nones(node._saved):
                        node._saved = None  # (_release for a node with no ctx fields)
                        node._saved_src = None
                        node._freed = True
                edges = node._edges
                if len(grads) < len(edges):
                    _check_grad_count(node, grads)
                meta = node._meta
                i = -1
                for nxt, nr in edges:  # (_send, inlined; each input's node is one step nearer)
                    i += 1
                    if nxt is None:
                        continue
                    g = grads[i]
                    if g is not None:
                        shape, dt = meta[i]
                        if g.shape != shape:
                            g = sum_to_shape(g, shape, node)
                        if g.dtype != dt:
                            g = g.astype(dt)
                        nb = buffers.get(nxt)
                        if nb is None:
                            nb = buffers[nxt] = [None] * nxt._n_out
                            nb[nr] = g
                        elif nb[nr] is None:
                            nb[nr] = g
                        else:
                            nb[nr] = _add_into_buffer(nb, nr, g)
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left == 0:
                        (ready_leaves if type(nxt) is AccumulateGrad else ready).append(nxt)
                continue
            _run_node(node, buf, buffers, capture, handed_out, retain_graph, create_graph)
        for nxt, _ in node._edges:  # this node is done: its inputs' nodes may now run
            if nxt is not None:
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    (ready_leaves if type(nxt) is AccumulateGrad else ready).append(nxt)


def _run_node(node: Node, buf: list, buffers: dict, capture: dict | None, handed_out: set[int],
              retain_graph: bool, create_graph: bool) -> None:
    """Run a node off the walk's fast path: a leaf's AccumulateGrad, a node with several outputs
    or hooks, a user's Function, anything under ``create_graph``, ``capture`` or anomaly mode."""
    if type(node) is AccumulateGrad and buf[0] is not None and buf[0].shape != node.shape:
        buf[0] = _to_recorded_leaf_shape(node, buf[0])
    if capture is not None:
        for nr in range(len(buf)):
            lst = capture.get((node, nr))
            if lst is not None:
                lst.append(buf[nr])
    if type(node) is AccumulateGrad:
        if capture is None:
            _accumulate(node.variable, buf[0], create_graph, handed_out)
    else:
        grads = _call_backward(node, buf, create_graph)
        if not retain_graph:
            node._release()
        _send(node, grads, buffers, create_graph)


_dependencies = _dependencies_python
_walk_nodes = _walk_nodes_python
run_backward = _run_backward_python
backward = _backward_python
if _native_core.native is not None:  # the same loops in C (docs/design.md, "The native core")
    backward = _native_core.native.backward
    run_backward = _native_core.native.run_backward
    _dependencies = _native_core.native.dependencies
    _walk_nodes = _native_core.native.walk_nodes
    _native_core.native.engine_init(globals())


def _grads_back_to_cpu(grads: tuple, positions: tuple[int, ...]) -> tuple:
    """The gradients of 0-d CPU tensors that joined a CUDA op, moved back to the CPU (PyTorch's
    engine moves a 0-d gradient to its input's device), so a CPU leaf never holds a CUDA .grad."""
    out = list(grads)
    for i in positions:
        g = out[i]
        if isinstance(g, TensorBase):
            out[i] = g.to("cpu")
        elif g is not None:
            out[i] = _backend.to_device(g, _backend.CPU)
    return tuple(out)


def _call_backward(node: Node, buf: list, create_graph: bool) -> tuple:
    """Run one node's backward rule on the gradients of its outputs; returns one gradient per
    forward argument. Built-in ops see arrays; user Functions, and every op under
    ``create_graph``, see tensors (so the rule itself is recorded for higher-order gradients)."""
    fn = node._fn
    if node._saved is None and node._freed:
        raise RuntimeError(FREED_MSG)
    if node._versions is not None:
        node._check_versions()
    if node._n_out > 1 and node._materialize:  # outputs that got no gradient get zeros
        for k, g in enumerate(buf):
            if g is None and node._out_meta[k] is not None:
                shape, dt = node._out_meta[k]
                z = node.xp.zeros(shape, dt)
                buf[k] = TensorBase._make(z) if create_graph else z
    tensor_mode = create_graph or fn._tensor_io
    if tensor_mode:
        node._tensor_mode = True
        xp_arrays = node.xp
        if create_graph and not fn._tensor_io:
            node.xp = Op.tensor_xp
        args = [g if isinstance(g, TensorBase) or g is None else TensorBase._make(g) for g in buf]
    else:
        args = buf
    try:
        grads = fn.backward(node, *args)
    finally:
        if tensor_mode:
            node._tensor_mode = False
            node.xp = xp_arrays
    if type(grads) is not tuple:
        grads = (grads,)
    if node._grads_to_cpu is not None:
        grads = _grads_back_to_cpu(grads, node._grads_to_cpu)
    if tensor_mode:
        if create_graph:
            grads = tuple([g if isinstance(g, TensorBase) or g is None else TensorBase._make(g)
                           for g in grads])
        else:
            grads = tuple([g._data if isinstance(g, TensorBase) else g for g in grads])
    if node._post_hooks is not None:
        for hook in node._post_hooks:
            hook(grads, tuple(buf))
    if _function.anomaly_enabled:
        check_grads(node, grads)
    return grads


def _send(node: Node, grads: tuple, buffers: dict, create_graph: bool) -> None:
    """Route each input gradient to the node it flows to, summed to the input's shape and cast
    to its dtype (the one place broadcasting is undone)."""
    edges = node._edges
    if len(grads) < len(edges):
        _check_grad_count(node, grads)
    meta = node._meta
    i = -1
    for nxt, nr in edges:
        i += 1
        if nxt is None:
            continue
        g = grads[i]
        if g is None:
            continue
        shape, dt = meta[i]
        if g.shape != shape:
            g = sum_to_shape(g, shape, node)
        if g.dtype != dt:
            g = g.to(_dtype_of(dt)) if create_graph else g.astype(dt)
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * nxt._n_out
            buf[nr] = g
        elif buf[nr] is None:
            buf[nr] = g
        else:
            buf[nr] = _add_into_buffer(buf, nr, g)


def _add_into_buffer(buf: list, nr: int, g: Any) -> Any:
    """``buf[nr] + g``, added in place when ``buf[nr]`` is a CPU array that nothing but this
    buffer holds (a gradient the engine alone owns), as PyTorch's engine accumulates; a new
    array otherwise (never += into memory another tensor, view or buffer may share)."""
    a = buf[nr]
    buf[nr] = None  # refs to a now: this frame's and getrefcount's, when no one else holds it
    if sys.getrefcount(a) == 2 and _addable_in_place(a, g):
        return _grad_sum(a, g, True)
    return _grad_sum(a, g, False)


GRAD_SUM_SPLIT_FROM = _threads.THRESHOLD_ARITH  # elements from which the C engine asks _grad_sum


def _grad_sum(a: Any, g: Any, into: bool) -> Any:
    """``a + g`` for two gradients of one input (into ``a``'s memory where ``into``: the
    caller has checked it may), a large pair of host arrays of one dtype split over the threads
    (``_threads``: the same values as one call). The C engine calls it for arrays of
    ``GRAD_SUM_SPLIT_FROM`` elements or more and adds smaller ones itself."""
    if into:
        if type(a) is CPU_ARRAY:
            _threads.run_into(np.add, a, a, g)
        else:
            a += g
        return a
    if type(a) is CPU_ARRAY and a.size >= _threads.cut_arith and (
            out := _threads.run(np.add, a, g)) is not None:
        return out
    return a + g


def _addable_in_place(a: Any, g: Any) -> bool:
    """Whether ``a += g`` may write ``a``'s memory (the caller has checked that nothing else
    holds ``a``): CPU arrays, ``a`` owning its memory, writeable, of ``g``'s shape and dtype."""
    return (type(a) is CPU_ARRAY and type(g) is CPU_ARRAY and a.base is None
            and a.shape == g.shape and a.dtype == g.dtype and a.flags.writeable)


def _check_grad_count(node: Node, grads: tuple) -> None:
    edges = node._edges
    needed = [i for i, (n, _) in enumerate(edges) if n is not None]
    if needed and needed[-1] >= len(grads):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients "
            f"(expected {len(edges)}, got {len(grads)})"
        )


def sum_to_shape(g: Any, shape: tuple, node: Node | None = None) -> Any:
    """Undo broadcasting: sum ``g`` down to ``shape``. The one place broadcasting is undone."""
    gshape = tuple(g.shape)
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    if not _broadcasts_to(shape, gshape):
        who = f"{node.name()} " if node is not None else ""
        raise RuntimeError(
            f"autograd: {who}returned a gradient of shape {gshape} for an input of shape "
            f"{shape}, and it does not reduce to it by summing broadcast dimensions. "
            "This is a bug in that op's backward rule."
        )
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1
    )
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    if lead:
        g = g.reshape(shape)
    return g


def _broadcasts_to(src: tuple, dst: tuple) -> bool:
    """Whether shape ``src`` broadcasts to exactly ``dst`` (PyTorch's "expandable to")."""
    lead = len(dst) - len(src)
    return lead >= 0 and all(s == 1 or s == d for s, d in zip(src, tuple(dst)[lead:]))


def _run_pre_hooks(node: Node, buf: list) -> None:
    if node._pre_hooks is not None:
        for nr, hook in node._pre_hooks:
            if nr < 0:  # a node pre-hook sees all output grads
                res = hook(tuple(buf))
                if res is not None:
                    buf[:] = list(res)
                continue
            g = buf[nr]
            if g is None:
                continue
            wrapped = g if isinstance(g, TensorBase) else TensorBase._make(g)
            res = hook(wrapped)
            if res is not None:
                buf[nr] = res if isinstance(g, TensorBase) else res._data
    if node._retain is not None:
        for nr, ref in node._retain:
            t = ref()
            g = buf[nr]
            if t is None or g is None:
                continue
            if isinstance(g, TensorBase):  # create_graph: the retained grad keeps its own graph
                t._grad = g if t._grad is None else t._grad + g
            elif t._grad is None:
                t._grad = TensorBase._make(g.copy())
            else:
                t._grad = TensorBase._make(t._grad._data + g)


def _accumulate(leaf: Any, g: Any, create_graph: bool, handed_out: set[int]) -> None:
    """leaf.grad += g, without ever sharing an array between two ``.grad``s."""
    if leaf._grad_fn is not None:
        raise RuntimeError(
            "leaf variable has been moved into the graph interior (a tensor that was a leaf "
            "requiring grad when an op used it got a history since: it is a view whose base, or "
            "another view of that base, was modified in place). Clone it, or call "
            "requires_grad_() on a tensor that has no views.")
    if leaf._hooks:
        for hook in leaf._hooks:
            res = hook(g if isinstance(g, TensorBase) else TensorBase._make(g))
            if res is not None:
                g = res if create_graph else res._data
    if leaf._grad is None and g.shape != leaf._data.shape:  # the leaf was reshaped in place
        g = _fit_to_reshaped_leaf(leaf, g)  # since the graph recorded it (a .grad keeps its shape)
    if create_graph:
        gt = g if isinstance(g, TensorBase) else TensorBase._make(g)
        leaf._grad = gt if leaf._grad is None else leaf._grad + gt
    else:
        if isinstance(g, TensorBase):
            g = g._data
        cur = leaf._grad
        if cur is None:
            if type(g) is CPU_ARRAY and g.base is None:  # (_owns' common case, inlined)
                owns = g.flags.writeable
            else:
                owns = _owns(g)
            if not owns or id(g) in handed_out:
                g = _copy_grad(g)
            handed_out.add(id(g))
            leaf._grad = TensorBase._make(g)
        else:
            held = cur._data
            if g.shape != held.shape:
                _check_adds_in_place(held.shape, g.shape)
            # in place, as PyTorch's AccumulateGrad, when nothing but the .grad tensor holds
            # its array (refs: cur._data, this frame's, getrefcount's): an array an optimizer
            # or a view also holds gets a new sum instead (a view of .grad then keeps the old
            # values, where PyTorch's would see the sum)
            if (sys.getrefcount(held) == 3 and _addable_in_place(held, g)
                    and id(held) not in handed_out):
                _grad_sum(held, g, True)
            else:
                # a new array: never += into a buffer another may share
                new = _grad_sum(held, g, False)
                cur._data = np.asarray(new) if isinstance(new, np.generic) else new
                handed_out.add(id(cur._data))
    if leaf._post_accumulate_hooks:
        for hook in leaf._post_accumulate_hooks:
            hook(leaf)


def _to_recorded_leaf_shape(node: AccumulateGrad, g: Any) -> Any:
    """A gradient that reached a leaf in another shape than the leaf had when its node was made
    (ops recorded after an in-place reshape of the leaf): summed to that shape where it
    broadcasts from it, as PyTorch's engine checks a node's input, or PyTorch's error."""
    if not _broadcasts_to(node.shape, g.shape):
        raise RuntimeError(
            f"Function AccumulateGrad got an invalid gradient - got {list(g.shape)} but expected "
            f"shape compatible with {list(node.shape)} (the leaf's shape when the graph first "
            "used it; it was reshaped in place since). Reshape the leaf before using it."
        )
    return sum_to_shape(g, node.shape, node)


def _check_adds_in_place(have: tuple, new: tuple) -> None:
    """PyTorch adds a gradient into an existing ``.grad`` in place: it must broadcast to the
    ``.grad``'s shape (they differ once a leaf is reshaped in place between two backwards)."""
    if not _broadcasts_to(new, have):
        raise RuntimeError(
            f"output with shape {list(have)} doesn't match the gradient's shape {list(new)}: "
            "the leaf's existing .grad has the first shape and this backward's gradient does not "
            "broadcast to it (the leaf was reshaped in place since the last backward). Set "
            ".grad = None (optimizer.zero_grad()) first."
        )


def _fit_to_reshaped_leaf(leaf: Any, g: Any) -> Any:
    """The gradient copied into the leaf's present shape, as PyTorch's AccumulateGrad copies it
    (broadcasting: ``x.unsqueeze_(0)`` after use gives a (1, n) grad), or PyTorch's error."""
    shape = tuple(leaf._data.shape)
    if not _broadcasts_to(g.shape, shape):
        raise RuntimeError(
            f"the gradient for a leaf has shape {list(g.shape)}, as the leaf had when the graph "
            f"used it, but the leaf now has shape {list(shape)} (an in-place reshape such as "
            "t_(), squeeze_() or unsqueeze_() under no_grad); the gradient cannot be copied into "
            "it. Reshape the leaf before using it, or use the out-of-place form."
        )
    if isinstance(g, TensorBase):
        return g.expand(shape).clone()
    return _backend.xp_of(g).broadcast_to(g, shape).copy()


def _copy_grad(g: Any) -> Any:
    """A copy of ``g`` that owns its memory (a ``.grad`` of its own): a large host float array
    that repeats one value or one trailing block (a sum's gradient broadcast back to its input)
    filled from that on the kernels' pool, any other large one copied in parts over the threads
    (``_threads.copy``), anything else by ``g.copy()``."""
    if type(g) is CPU_ARRAY:
        if g.size >= _threads.cut_arith and g.strides[0] == 0 and (
                out := _fill_from_repeated(g)) is not None:
            return out
        if g.size >= _threads.cut_cheap and (out := _threads.copy(g)) is not None:
            return out
    return g.copy()


def _fill_from_repeated(g: np.ndarray) -> np.ndarray | None:
    """``g.copy()`` for a broadcast view whose leading dims repeat (stride 0) over a C-ordered
    rest: that rest written over and over (a single value: a fill) by ``_kernels_loader.arith``,
    the same values in one split pass; None where it does not apply."""
    k = 1
    while k < g.ndim and g.strides[k] == 0:
        k += 1
    src = g[(0,) * k]
    if src.ndim == 0:
        src = src.item()  # (a float32/float64 value, exact as a Python float)
    out = np.empty(g.shape, g.dtype)
    return out if _kernels_loader.arith(None, None, src, out) else None


def _owns(a: Any) -> bool:
    """Whether ``a``'s memory is its own (a gradient can become ``.grad`` without a copy)."""
    if type(a) is CPU_ARRAY:
        b = a.base
        if b is None:
            return a.flags.writeable
        # a view covering all of an array nothing else holds (the reshape of a temporary, as
        # a gather's backward returns): its memory is a's alone (refs: a.base, b, the call's)
        return (type(b) is CPU_ARRAY and b.base is None and sys.getrefcount(b) == 3
                and a.nbytes == b.nbytes and a.flags.c_contiguous and a.flags.writeable)
    return getattr(a, "base", None) is None
