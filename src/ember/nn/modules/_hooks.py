"""Module hooks that live outside any one module: ``RemovableHandle``, the global forward-hook
registry (``register_module_forward_hook``; ``torch.nn.modules.module``'s functions, re-exported
there) and the machinery behind full backward hooks (an identity op whose backward hands the
gradients to the hooks)."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._tensor import Tensor
from ...autograd.function import Function

if TYPE_CHECKING:
    from .module import Module


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``handle.remove()`` unregisters the hook.

    ``torch.utils.hooks.RemovableHandle``: ``RemovableHandle(hooks_dict, extra_dict=d)`` (a dict
    or a list of dicts, weakly referenced) takes a fresh ``id`` that the caller stores its hook
    under; ``remove()`` pops that id from every dict. (ember's modules pass the extra dicts
    positionally.)
    """

    _next_id = itertools.count()

    def __init__(self, hooks_dict: Any, *extra_dicts: Any, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._next_id)
        if extra_dict is not None:
            extra_dicts += tuple(extra_dict) if isinstance(extra_dict, list) else (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dicts)

    def remove(self) -> None:
        """Unregister the hook (a no-op when already removed)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self) -> tuple:
        # weak references do not pickle: the dicts travel (by value), as PyTorch's handle does
        return (self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        hooks, self.id = state[0], state[1]
        self.hooks_dict_ref = weakref.ref(hooks) if hooks is not None else _dead_ref
        self.extra_dict_ref = tuple(weakref.ref(d) if d is not None else _dead_ref
                                    for d in (state[2] if len(state) > 2 else ()))

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *args: Any) -> None:
        self.remove()


def _dead_ref() -> None:
    """Stands in for a weak reference whose dict is gone (a handle unpickled without it)."""
    return None


def _wrap_args(result: Any) -> tuple:
    return result if isinstance(result, tuple) else (result,)


# -- global hooks (torch.nn.modules.module.register_module_forward_hook) ------------------------
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()


def _global_hooks_active() -> bool:
    return bool(_global_forward_pre_hooks or _global_forward_hooks)


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(module, args)`` to run before every module's forward."""
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(module, args, output)`` to run after every module's forward."""
    h = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[h.id] = hook
    return h


# -- full backward hooks --------------------------------------------------------------------------
class _HookIdentity(Function):
    """Identity on tensors whose backward hands the gradients to a callback (which may replace
    them): how full backward hooks see grad_output and grad_input."""

    @staticmethod
    def forward(ctx: Any, callback: Any, *tensors: Tensor) -> Any:
        ctx.callback = callback
        outs = tuple(t.detach() for t in tensors)
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        new = ctx.callback(grads)
        return (None, *(grads if new is None else new))


class _BackwardHookState:
    """Collects grad_output (at the module's outputs) and calls the hooks when grad_input
    (at the module's inputs) arrives, or at once when no input requires grad."""

    def __init__(self, module: Module, n_args: int) -> None:
        self.module = module
        self.grad_outputs: tuple | None = None
        self.input_pos: list[int] = []
        self.n_args = n_args

    def wrap_inputs(self, args: tuple) -> tuple:
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not pos:
            return args
        self.input_pos = pos
        outs = _HookIdentity.apply(self._on_grad_inputs, *(args[i] for i in pos))
        new = list(args)
        for i, o in zip(pos, outs):
            new[i] = o
        return tuple(new)

    def wrap_outputs(self, output: Any) -> Any:
        single = isinstance(output, Tensor)
        outs = (output,) if single else output
        if not isinstance(outs, (tuple, list)):
            return output
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not pos:
            return output
        wrapped = _HookIdentity.apply(self._on_grad_outputs, *(outs[i] for i in pos))
        new = list(outs)
        for i, o in zip(pos, wrapped):
            new[i] = o
        if single:
            return new[0]
        return type(outs)(new) if isinstance(outs, tuple) and type(outs) is tuple else \
            (type(outs)(*new) if isinstance(outs, tuple) else new)

    def _on_grad_outputs(self, grads: tuple) -> tuple | None:
        m = self.module
        for hook in m._backward_pre_hooks.values():
            result = hook(m, grads)
            if result is not None:
                grads = _wrap_args(result)
        self.grad_outputs = grads
        if not self.input_pos:  # no input needs a gradient: hooks fire now, grad_input all None
            for hook in m._backward_hooks.values():
                hook(m, (None,) * max(self.n_args, 1), grads)
        return grads

    def _on_grad_inputs(self, grads: tuple) -> tuple:
        m = self.module
        full = [None] * self.n_args
        for i, g in zip(self.input_pos, grads):
            full[i] = g
        grad_input = tuple(full)
        for hook in m._backward_hooks.values():
            result = hook(m, grad_input, self.grad_outputs)
            if result is not None:
                result = _wrap_args(result)
                if len(result) != len(grad_input):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(result)}, but expected {len(grad_input)}"
                    )
                grad_input = result
        return tuple(grad_input[i] for i in self.input_pos)
