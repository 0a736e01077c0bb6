"""``ember.utils.checkpoint``: trade compute for memory by recomputing activations in backward.

``checkpoint(fn, *args)`` runs ``fn`` without recording a graph (so none of its intermediate
activations are kept) and returns its outputs attached to a single ``CheckpointFunctionBackward``
node. When backward reaches that node, ``fn`` runs again with autograd on, from the saved inputs,
with the random state it had the first time (so dropout draws the same mask) and under the same
autocast state, and the gradients flow through the recomputed graph into the inputs and into the
parameters ``fn`` used.

It is an ordinary :class:`ember.autograd.Function` (one that sees tensors); the engine knows
nothing about it.

- ``use_reentrant=True`` (PyTorch's current default; omitting the argument warns, as PyTorch
  2.13 does): gradients of parameters that ``fn`` reaches are accumulated into their ``.grad``
  during the recomputation; keyword arguments for ``fn`` are refused; if no input requires grad,
  the output does not either (with PyTorch's warning).
- ``use_reentrant=False``: keyword arguments and ``context_fn`` are accepted; the parameters of
  modules that ``fn`` is, is bound to, or closes over are made inputs of the node, so
  ``torch.autograd.grad`` with respect to them works. If no input requires grad and no such
  parameter is found, ``fn`` simply runs with autograd on (correct gradients, no memory saved).
- Double backward through a checkpoint (``create_graph=True``) is not supported.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import AccumulateGrad, Function
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "noop_context_fn",
           "CheckpointError"]


class CheckpointError(RuntimeError):
    """Raised when a recomputation does not match the original forward."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()



def _rng_state() -> Any:
    from ..ops.random import get_rng_state

    return get_rng_state()


def _set_rng_state(state: Any) -> None:
    from ..ops.random import set_rng_state

    set_rng_state(state)


def _autocast_state() -> list[tuple[str, bool, Any]]:
    """Whether autocast is on, and its dtype, per device type (the recomputation repeats it)."""
    from ..amp import autocast_mode as am

    return [(dev, am.is_autocast_enabled(dev), am.get_autocast_dtype(dev))
            for dev in ("cpu", "cuda")]


def _autocast_as(saved: list[tuple[str, bool, Any]]) -> contextlib.ExitStack:
    """Enter the autocast regions needed to recreate ``saved`` (none if it already holds)."""
    from ..amp import autocast_mode as am

    stack = contextlib.ExitStack()
    for dev, enabled, dtype in saved:
        now = am.is_autocast_enabled(dev), am.get_autocast_dtype(dev)
        if now != (enabled, dtype) and (enabled or now[0]):
            stack.enter_context(am.autocast(dev, dtype=dtype, enabled=enabled))
    return stack


def _leaves_of(roots: Iterable[Any]) -> list[Any]:
    """Every leaf tensor (AccumulateGrad node) the graphs of ``roots`` reach, in visit order."""
    seen: set[int] = set()
    stack = [t.grad_fn for t in roots if t.grad_fn is not None]
    leaves = []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            leaves.append(node.variable)
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


class CheckpointFunction(Function):
    """Runs ``fn`` without a graph; recomputes it with one when backward arrives."""

    node_name = "CheckpointFunctionBackward"  # PyTorch's name for the node

    @staticmethod
    def forward(ctx: Any, fn: Callable, spec: Any, plain: list, preserve: bool,
                recompute_ctx: Any, out_box: list, *tensors: Any) -> Any:
        ctx.fn = fn
        ctx.spec = spec
        ctx.plain = plain
        ctx.preserve = preserve
        ctx.recompute_ctx = recompute_ctx
        ctx.input_rg = [t.requires_grad for t in tensors]
        ctx.n_args = sum(1 for v in plain if v is _SLOT)
        if preserve:
            ctx.rng_state = _rng_state()
        ctx.autocast = _autocast_state()
        ctx.save_for_backward(*tensors)
        args, kwargs = _rebuild(spec, plain, tensors)
        out = fn(*args, **kwargs)
        leaves, out_spec = tree_flatten(out)
        positions = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
        ctx.out_spec = out_spec
        out_box.append((out_spec, leaves, positions))
        outs = tuple(leaves[i] for i in positions)
        non_diff = [o for o in outs if not o.is_floating_point()]
        if non_diff:
            ctx.mark_non_differentiable(*non_diff)
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        if grad_mode.is_grad_enabled():
            raise RuntimeError(
                "torch.utils.checkpoint: double backward (create_graph=True, or "
                "torch.autograd.grad(..., create_graph=True)) through a checkpointed function is "
                "not supported in ember. Call the function without checkpoint for higher-order "
                "gradients."
            )
        saved = ctx.saved_tensors
        n = ctx.n_args
        # argument tensors are detached copies; parameters (use_reentrant=False) stay themselves,
        # since fn reaches them directly
        inputs = [t.detach().requires_grad_(rg) for t, rg in zip(saved[:n], ctx.input_rg)]
        inputs += list(saved[n:])
        args, kwargs = _rebuild(ctx.spec, ctx.plain, inputs)
        outer_state = _rng_state() if ctx.preserve else None
        try:
            if ctx.preserve:
                _set_rng_state(ctx.rng_state)
            with grad_mode.enable_grad(), _autocast_as(ctx.autocast), ctx.recompute_ctx:
                out = ctx.fn(*args, **kwargs)
        finally:
            if outer_state is not None:
                _set_rng_state(outer_state)
        outs = [v for v in tree_flatten(out)[0] if isinstance(v, Tensor)]
        if len(outs) != len(grads):
            raise CheckpointError(
                f"torch.utils.checkpoint: the recomputed forward returned {len(outs)} tensors, the "
                f"original {len(grads)}: the checkpointed function must compute the same thing "
                "each time it is called."
            )
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        known = [t for t in inputs if t.requires_grad]
        if pairs:
            roots = [o for o, _ in pairs]
            known_ids = {id(t) for t in known}
            others = [leaf for leaf in _leaves_of(roots) if id(leaf) not in known_ids]
            from .. import autograd

            got = autograd.grad(roots, known + others, [g for _, g in pairs],
                                allow_unused=True)
            by_id = {id(t): g for t, g in zip(known, got[:len(known)])}
            for leaf, g in zip(others, got[len(known):]):
                if g is not None:  # parameters fn reached without being inputs: as PyTorch's
                    leaf.grad = g if leaf.grad is None else leaf.grad + g  # reentrant variant
        else:
            by_id = {}
        input_grads = tuple(by_id.get(id(t)) for t in inputs)
        return (None, None, None, None, None, None) + input_grads


class _TensorSlot:
    """Marks where a tensor sat among the flattened arguments."""


_SLOT = _TensorSlot()


def _split(args: tuple, kwargs: dict) -> tuple[Any, list, list]:
    leaves, spec = tree_flatten((list(args), kwargs))
    tensors = [v for v in leaves if isinstance(v, Tensor)]
    plain = [_SLOT if isinstance(v, Tensor) else v for v in leaves]
    return spec, plain, tensors


def _rebuild(spec: Any, plain: list, tensors: Iterable[Any]) -> tuple[list, dict]:
    it = iter(tensors)
    leaves = [next(it) if v is _SLOT else v for v in plain]
    args, kwargs = tree_unflatten(leaves, spec)
    return args, kwargs


def _params_of(fn: Any) -> list[Any]:
    """Parameters requiring grad of the modules (and leaf tensors) ``fn`` is, is bound to, or
    closes over: they become inputs of the checkpoint node with ``use_reentrant=False``."""
    from ..nn.modules.module import Module

    found: list[Any] = []
    seen: set[int] = set()

    def add(obj: Any) -> None:
        if isinstance(obj, Module):
            for p in obj.parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    found.append(p)
        elif isinstance(obj, Tensor) and obj.requires_grad and obj.grad_fn is None:
            if id(obj) not in seen:
                seen.add(id(obj))
                found.append(obj)

    stack = [fn]
    visited: set[int] = set()
    while stack:
        f = stack.pop()
        if id(f) in visited:
            continue
        visited.add(id(f))
        add(f)
        if isinstance(f, (list, tuple)):
            stack.extend(f)
            continue
        if isinstance(f, functools.partial):
            stack.append(f.func)
            stack.extend(f.args)
            stack.extend(f.keywords.values())
            continue
        owner = getattr(f, "__self__", None)
        if owner is not None:
            stack.append(owner)
        func = getattr(f, "__func__", f)
        for cell in getattr(func, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, (Module, Tensor)) or callable(value):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, (Module, Tensor)))
    return found


def _warn_reentrant(where: str) -> None:
    if where == "checkpoint":
        text = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                "exception. use_reentrant=False is recommended, but if you need to preserve the "
                "current default behavior, you can pass use_reentrant=True. Refer to docs for "
                "more details on the differences between the two variants.")
    else:
        text = ("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
                "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
                "is not passed. use_reentrant=False is recommended, but if you need to preserve "
                "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
                "more details on the differences between the two variants.")
    warnings.warn(text, UserWarning, stacklevel=3)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute in backward.

    Args:
        function: the computation (a module, a function, a lambda).
        args: its positional arguments; tensors among them (also inside lists/tuples/dicts)
            receive gradients.
        use_reentrant: see the module docstring; omitted, it warns and behaves as True.
        context_fn: (``use_reentrant=False`` only) returns two context managers, entered around
            the forward and around the recomputation.
        preserve_rng_state (keyword, default True): replay the random state in the recomputation.
        determinism_check, debug, early_stop: accepted; ``debug`` needs ``use_reentrant=False``.
        kwargs: keyword arguments for ``function`` (``use_reentrant=False`` only).

    Returns:
        what ``function`` returns; its tensors are attached to the checkpoint node.
    """
    preserve = bool(kwargs.pop("preserve_rng_state", True))
    if use_reentrant is None:
        _warn_reentrant("checkpoint")
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    spec, plain, tensors = _split(args, kwargs)
    if use_reentrant:
        params: list[Any] = []
        if grad_mode.is_grad_enabled() and not any(t.requires_grad for t in tensors):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=2)
    else:
        params = _params_of(function)
        if grad_mode.is_grad_enabled() and not params and not any(t.requires_grad
                                                                  for t in tensors):
            # nothing to attach the node to: run with autograd on (correct, not memory-saving)
            forward_ctx, _ = context_fn()
            with forward_ctx:
                return function(*args, **kwargs)
    forward_ctx, recompute_ctx = context_fn() if not use_reentrant else noop_context_fn()
    box: list = []
    with forward_ctx:
        outs = CheckpointFunction.apply(function, spec, plain, preserve, recompute_ctx, box,
                                        *tensors, *params)
    out_spec, leaves, positions = box[0]
    outs = outs if isinstance(outs, tuple) else (outs,)
    leaves = list(leaves)
    for i, t in zip(positions, outs):
        leaves[i] = t
    return tree_unflatten(leaves, out_spec)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a sequence of modules in ``segments`` chunks, checkpointing all but the last.

    Args:
        functions: an ``nn.Sequential`` or a list of modules/functions, run in order.
        segments: how many chunks to split them into (at most their number).
        input: the input of the first function.
        use_reentrant: as for :func:`checkpoint`; omitted, it warns and behaves as True.
        preserve_rng_state (keyword, default True): as for :func:`checkpoint`.
    """
    if use_reentrant is None:
        _warn_reentrant("checkpoint_sequential")
        use_reentrant = True
    preserve = bool(kwargs.pop("preserve_rng_state", True))
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn.modules.module import Module

    if isinstance(functions, Module) and hasattr(functions, "_modules"):
        funcs = list(functions.children())
    else:
        funcs = list(functions)
    segment_size = len(funcs) // segments if segments > 0 else 0
    if segment_size == 0:
        raise ValueError(f"checkpoint_sequential: segments={segments} must be between 1 and the "
                         f"number of functions ({len(funcs)})")

    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        segment = functools.partial(_run_segment, funcs[start:end + 1])
        input = checkpoint(segment, input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    return _run_segment(funcs[end + 1:], input)


def _run_segment(funcs: list, x: Any) -> Any:
    """Apply ``funcs`` in order (a partial of this is what each segment checkpoints)."""
    for f in funcs:
        x = f(x)
    return x
