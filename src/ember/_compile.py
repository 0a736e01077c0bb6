"""``ember.compile``: PyTorch's ``torch.compile`` entry point; ember runs eagerly.

``compile(model)`` returns a working model that computes exactly what ``model`` computes: a
module comes back wrapped like PyTorch's ``OptimizedModule`` (the original under ``_orig_mod``,
so ``state_dict`` keys carry PyTorch's ``_orig_mod.`` prefix and checkpoints interchange); a
function comes back as a thin wrapper. No graph capture or code generation happens: NumPy/CuPy
already run each op as one vectorised kernel, so there is nothing to fuse at this level.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .nn.modules.module import Module

__all__ = ["compile", "OptimizedModule"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


class OptimizedModule(Module):
    """What ``compile(module)`` returns: runs ``_orig_mod`` and forwards attribute reads to it."""

    def __init__(self, mod: Module, options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compile_options", dict(options or {}))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            mods = self.__dict__.get("_modules")
            if not mods or "_orig_mod" not in mods:
                raise
            return getattr(mods["_orig_mod"], name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._modules["_orig_mod"])))


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: str | Callable | None = None,
            mode: str | None = None, options: dict[str, Any] | None = None,
            name: str | None = None, disable: bool = False, **kwargs: Any) -> Any:
    """Return ``model`` ready to run (ember runs eagerly: same results, no compilation).

    Args:
        model: an ``nn.Module`` or a function; omitted, ``compile(...)`` is a decorator.
        fullgraph, dynamic, backend, options, name, disable: accepted and ignored.
        mode: checked against PyTorch's modes ('default', 'lite', 'reduce-overhead',
            'max-autotune-no-cudagraphs', 'max-autotune'), then ignored.

    Example::

        >>> model = torch.compile(model)       # an OptimizedModule wrapping model
        >>> @torch.compile
        ... def f(x): return x.sin() + 1
    """
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same "
            "time."
        )
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if model is None:
        def decorator(fn: Callable) -> Any:
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable, **kwargs)

        return decorator
    if not callable(model):
        raise RuntimeError(f"torch.compile: model must be callable (a Module or a function), "
                           f"got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, {"mode": mode, "options": options, "backend": backend})

    @functools.wraps(model)
    def compiled(*args: Any, **kw: Any) -> Any:
        return model(*args, **kw)

    return compiled
