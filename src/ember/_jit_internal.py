"""``torch._jit_internal``: the TorchScript markers libraries import from PyTorch's private module
(pyro's ``nn.module`` takes ``_copy_to_script_wrapper``, others ``is_scripting``,
``boolean_dispatch`` or ``Final``). Outside TorchScript PyTorch's own are markers that change
nothing at run time; so are these (ember has no TorchScript compiler, ``docs/utilities.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final  # noqa: F401  (``torch._jit_internal.Final`` is typing's)

from .jit import (  # noqa: F401  (the same markers, reachable under their private names too)
    _overload,
    _overload_method,
    export,
    ignore,
    is_scripting,
    unused,
)

__all__: list[str] = []


class FunctionModifiers:
    """The TorchScript modifiers a marker records on a function (``fn._torchscript_modifier``):
    plain strings, as PyTorch's."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = "if this method is not scripted, copy the python method onto the scripted model"
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def _copy_to_script_wrapper(fn: Callable) -> Callable:
    """Mark a module method to be copied onto a scripted module: ``fn`` itself, marked."""
    fn._torchscript_modifier = FunctionModifiers.COPY_TO_SCRIPT_WRAPPER  # type: ignore[attr-defined]
    return fn


def boolean_dispatch(arg_name: str, arg_index: int, default: bool, if_true: Callable,
                     if_false: Callable, module_name: str | None,
                     func_name: str | None) -> Callable:
    """A function that calls ``if_true`` or ``if_false`` by one boolean argument (given by
    keyword ``arg_name`` or at position ``arg_index``, else ``default``), as PyTorch's
    ``max_pool2d`` and ``return_indices``."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        flag = kwargs[arg_name] if arg_name in kwargs else (
            args[arg_index] if arg_index < len(args) else default)
        return (if_true if flag else if_false)(*args, **kwargs)

    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = fn.__qualname__ = func_name
    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    return fn
