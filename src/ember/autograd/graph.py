"""``torch.autograd.graph``: the recorded graph's types, saved-tensor hooks, and a report of
what a graph keeps for backward.

- ``saved_tensors_hooks(pack, unpack)``: while the block runs, each value an op saves for
  backward goes through ``pack(tensor)`` and what ``pack`` returns is kept instead; backward gets
  ``unpack(packed)`` back. ``save_on_cpu`` is the one that moves saved tensors to the CPU.
- ``Node``, ``GradientEdge``, ``get_gradient_edge``, ``register_multi_grad_hook``,
  ``increment_version``, ``disable_saved_tensors_hooks``.
- ``saved_tensors(output)`` (ember's own): per node of the graph behind ``output``, the arrays
  kept for backward and their bytes, which PyTorch users collect by hand with a pack hook.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from . import function as _function
from .node import Node as _EmberNode

__all__ = ["GradientEdge", "Node", "disable_saved_tensors_hooks", "get_gradient_edge",
           "increment_version", "register_multi_grad_hook", "save_on_cpu", "saved_tensors",
           "saved_tensors_hooks"]


class _NodeMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _EmberNode)

    def __subclasscheck__(cls, sub: type) -> bool:
        return isinstance(sub, type) and issubclass(sub, _EmberNode)


class Node(metaclass=_NodeMeta):
    """The type of a ``grad_fn``: ``isinstance(y.grad_fn, torch.autograd.graph.Node)`` holds
    for every node ember records (their class is ``ember.autograd.Node``'s subclasses)."""


class GradientEdge(NamedTuple):
    """An edge of the graph: the gradient that flows into ``node``'s input ``output_nr``."""

    node: Any
    output_nr: int


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows: its ``grad_fn`` and output index, or
    the accumulator of a leaf that requires grad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    if tensor.grad_fn is None:
        return GradientEdge(_function._accumulator(tensor), 0)
    return GradientEdge(tensor.grad_fn, tensor.output_nr)


def increment_version(tensor: Any) -> None:
    """Mark ``tensor`` as changed in place (its saved copies then refuse to backward)."""
    if isinstance(tensor, (list, tuple)):
        for t in tensor:
            t._bump_version()
    else:
        tensor._bump_version()


_disabled_message: list[str | None] = [None]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """``with saved_tensors_hooks(pack, unpack):`` every value an op saves for backward in the
    block is handed to ``pack`` (as a tensor) and what ``pack`` returns is kept; backward
    receives ``unpack(packed)``, a tensor with the same shape and dtype. Innermost hooks win.

    Example, count the bytes a forward keeps::

        kept = []
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: kept.append(t.nbytes) or t, lambda t: t):
            loss = model(x).sum()
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _disabled_message[0] is not None:
            raise RuntimeError(_disabled_message[0])
        _function.saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: Any) -> None:
        _function.saved_hooks.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors go to the CPU in forward and back to their device in backward (lowers
    the accelerator's peak; on the CPU it keeps them as they are)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Any) -> Any:
            if t.device.type == "cpu":
                return (t.device, t)
            return (t.device, t.detach().cpu())

        def unpack(packed: Any) -> Any:
            device, t = packed
            return t if t.device == device else t.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """In the block, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""
    old = _disabled_message[0]
    _disabled_message[0] = error_message
    try:
        yield
    finally:
        _disabled_message[0] = old


class _MultiHandle:
    def __init__(self, handles: list[Any]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., Any], *,
                             mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward over ``tensors``: with ``mode="all"`` once the backward has
    computed the gradients of all of them it reaches, as ``fn(grads)`` (None for a tensor it
    did not reach; ember calls it when that backward ends); with ``mode="any"`` at the first
    gradient, as ``fn(grad)``."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    from . import engine

    tensors = list(tensors)
    lock = threading.Lock()
    state: dict[str, Any] = {"grads": None, "fired": False}

    def finish() -> None:
        with lock:
            grads, state["grads"], state["fired"] = state["grads"], None, False
        if mode == "all" and grads is not None:
            fn(tuple(grads))

    def make(i: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            with lock:
                first = state["grads"] is None and not state["fired"]
                if first:
                    engine.queue_callback(finish)
                if mode == "any":
                    if state["fired"]:
                        return
                    state["fired"] = True
                else:
                    if state["grads"] is None:
                        state["grads"] = [None] * len(tensors)
                    state["grads"][i] = grad
            if mode == "any":
                fn(grad)
        return hook

    handles = [t.register_hook(make(i)) for i, t in enumerate(tensors) if t.requires_grad]
    return _MultiHandle(handles)


def saved_tensors(output: Any) -> list[tuple[str, list[tuple[tuple[int, ...], str, int]]]]:
    """What the graph behind ``output`` keeps for backward, node by node (ember's own call):
    ``[(node name, [(shape, dtype, bytes), ...]), ...]`` in the order a backward would meet
    them, counting each array once (a tensor saved by two nodes is listed at the first).
    ``sum(b for _, arrs in saved_tensors(loss) for *_, b in arrs)`` is the total.
    Arrays held as node attributes (masks, indices) are listed too; views count their base's
    bytes only where the base is not listed already."""
    roots = output if isinstance(output, (list, tuple)) else [output]
    seen_nodes: set[int] = set()
    seen_arrays: set[int] = set()
    stack = [t.grad_fn for t in roots if getattr(t, "grad_fn", None) is not None]
    out: list[tuple[str, list[tuple[tuple[int, ...], str, int]]]] = []
    while stack:  # no recursion: a 100k-node chain is fine
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        arrays: list[Any] = []
        saved = node._saved
        if saved is not None:
            arrays.extend(saved.tensors() if hasattr(saved, "tensors") else saved)
        d = getattr(node, "__dict__", None)
        if d:
            arrays.extend(v for v in d.values() if hasattr(v, "dtype") and hasattr(v, "shape"))
        rows = []
        for a in arrays:
            arr = getattr(a, "_data", a)
            if arr is None or not hasattr(arr, "nbytes"):
                continue
            base = arr
            while getattr(base, "base", None) is not None and hasattr(base.base, "nbytes"):
                base = base.base
            if id(base) in seen_arrays:
                continue
            seen_arrays.add(id(base))
            rows.append((tuple(arr.shape), str(arr.dtype), int(base.nbytes)))
        out.append((node.name(), rows))
        for nxt, _ in reversed(node._edges or ()):
            if nxt is not None:
                stack.append(nxt)
    return out
