"""The backward engine: walk the recorded graph in reverse and apply the chain rule.

Iterative (no recursion: a 100,000-op chain works). Each node runs once all nodes that feed it a
gradient have run (Kahn's algorithm on dependency counts); gradients wait in ``buffers`` only
until their node runs; saved arrays are freed as each node finishes unless ``retain_graph``.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import function as _function
from . import grad_mode
from .function import AccumulateGrad, Node


def _dependencies(roots: list[Node]) -> dict[Node, int]:
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


def run_backward(
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
    from .._tensor import Tensor

    root_nodes = [n for n, _, _ in roots]
    deps = _dependencies(root_nodes)
    needed = None
    if capture is not None:
        needed = _needed(root_nodes, deps, {n for n, _ in capture})

    buffers: dict[Node, list] = {}
    handed_out: set[int] = set()  # arrays already stored in some .grad: never store one twice
    for node, nr, g in roots:
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_out
        buf[nr] = g if buf[nr] is None else buf[nr] + g
        handed_out.add(id(g))

    ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    # leaves' AccumulateGrad nodes run as soon as they are ready, before other ready nodes, as
    # PyTorch orders them (so a later error leaves the same .grads behind)
    ready_leaves: list[Node] = []
    fast = not create_graph and capture is None
    with grad_mode.set_grad_enabled(create_graph):
        while ready or ready_leaves:
            node = ready_leaves.pop() if ready_leaves else ready.pop()
            buf = buffers.pop(node, None)
            if buf is not None and (needed is None or node in needed):
                if node._pre_hooks is not None or node._retain is not None:
                    _run_pre_hooks(node, buf)
                if capture is not None:
                    for nr in range(len(buf)):
                        lst = capture.get((node, nr))
                        if lst is not None:
                            lst.append(buf[nr])
                if type(node) is AccumulateGrad:
                    if capture is None:
                        _accumulate(node.variable, buf[0], create_graph, handed_out)
                else:
                    fn = node._fn
                    if (fast and node._n_out == 1 and node._post_hooks is None
                            and not fn._tensor_io and not node._freed
                            and not _function.anomaly_enabled):
                        if node._versions is not None:
                            node._check_versions()
                        grads = fn.backward(node, buf[0])  # the hot path: one array in
                        if type(grads) is not tuple:
                            grads = (grads,)
                    else:
                        grads = _call_backward(node, buf, create_graph, Tensor)
                    if not retain_graph:
                        node._release()
                    _send(node, grads, buffers, create_graph)
            for nxt, _ in node._edges:  # this node is done: its inputs' nodes may now run
                if nxt is not None:
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left == 0:
                        (ready_leaves if type(nxt) is AccumulateGrad else ready).append(nxt)


def _call_backward(node: Node, buf: list, create_graph: bool, Tensor: Any) -> tuple:
    fn = node._fn
    if node._saved is None and node._freed:
        raise RuntimeError(_function._FREED_MSG)
    if node._versions is not None:
        node._check_versions()
    if node._n_out > 1 and node._materialize:
        for k, g in enumerate(buf):
            if g is None and node._out_meta[k] is not None:
                shape, dt = node._out_meta[k]
                z = node.xp.zeros(shape, dt)
                buf[k] = Tensor._make(z) if create_graph else z
    tensor_mode = create_graph or fn._tensor_io
    if tensor_mode:
        node._tensor_mode = True
        xp_saved = node.xp
        if create_graph and not fn._tensor_io:
            from . import _xp

            node.xp = _xp
        args = [g if isinstance(g, Tensor) or g is None else Tensor._make(g) for g in buf]
        try:
            grads = fn.backward(node, *args)
        finally:
            node._tensor_mode = False
            node.xp = xp_saved
        if type(grads) is not tuple:
            grads = (grads,)
        if not create_graph:
            grads = tuple(g._data if isinstance(g, Tensor) else g for g in grads)
        else:
            grads = tuple(
                g if isinstance(g, Tensor) or g is None else Tensor._make(g) for g in grads
            )
    else:
        grads = fn.backward(node, *buf)
        if type(grads) is not tuple:
            grads = (grads,)
    if node._post_hooks is not None:
        for hook in node._post_hooks:
            hook(grads, tuple(buf))
    if _function.anomaly_enabled:
        from .anomaly import check_grads

        check_grads(node, grads)
    return grads


def _send(node: Node, grads: tuple, buffers: dict, create_graph: bool) -> None:
    """Route each input gradient to the node it flows to, summed to the input's shape and cast
    to its dtype (the one place broadcasting is undone)."""
    edges = node._edges
    if len(grads) < len(edges):
        needed = [i for i, (n, _) in enumerate(edges) if n is not None]
        if needed and needed[-1] >= len(grads):
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of gradients "
                f"(expected {len(edges)}, got {len(grads)})"
            )
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
            buf[nr] = buf[nr] + g


def _dtype_of(np_dtype: Any) -> Any:
    from .._dtype import from_numpy

    return from_numpy(np_dtype)


def sum_to_shape(g: Any, shape: tuple, node: Node | None = None) -> Any:
    """Undo broadcasting: sum ``g`` down to ``shape``. The one place broadcasting is undone."""
    gshape = tuple(g.shape)
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    ok = lead >= 0 and all(s == 1 or s == gs for s, gs in zip(shape, gshape[lead:]))
    if not ok:
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


def _run_pre_hooks(node: Node, buf: list) -> None:
    from .._tensor import Tensor

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
            wrapped = g if isinstance(g, Tensor) else Tensor._make(g)
            res = hook(wrapped)
            if res is not None:
                buf[nr] = res if isinstance(g, Tensor) else res._data
    if node._retain is not None:
        for nr, ref in node._retain:
            t = ref()
            g = buf[nr]
            if t is None or g is None:
                continue
            if isinstance(g, Tensor):  # create_graph: the retained grad keeps its own graph
                t._grad = g if t._grad is None else t._grad + g
            elif t._grad is None:
                t._grad = Tensor._make(g.copy())
            else:
                t._grad = Tensor._make(t._grad._data + g)


def _accumulate(leaf: Any, g: Any, create_graph: bool, handed_out: set[int]) -> None:
    """leaf.grad += g, without ever sharing an array between two ``.grad``s."""
    from .._tensor import Tensor

    if leaf._hooks:
        for hook in leaf._hooks:
            res = hook(g if isinstance(g, Tensor) else Tensor._make(g))
            if res is not None:
                g = res if create_graph else res._data
    if create_graph:
        gt = g if isinstance(g, Tensor) else Tensor._make(g)
        leaf._grad = gt if leaf._grad is None else leaf._grad + gt
    else:
        if isinstance(g, Tensor):
            g = g._data
        cur = leaf._grad
        if cur is None:
            if id(g) in handed_out or not _owns(g):
                g = g.copy()
            handed_out.add(id(g))
            leaf._grad = Tensor._make(g)
        else:
            new = cur._data + g  # a new array: never += into a buffer another may share
            cur._data = np.asarray(new) if isinstance(new, np.generic) else new
            handed_out.add(id(cur._data))
    if leaf._post_accumulate_hooks:
        for hook in leaf._post_accumulate_hooks:
            hook(leaf)


def _owns(a: Any) -> bool:
    if type(a) is np.ndarray:
        return a.base is None and a.flags.writeable
    return getattr(a, "base", None) is None


def weak(t: Any) -> weakref.ref:
    return weakref.ref(t)
