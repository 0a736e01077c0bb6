"""``torch.fx._symbolic_trace``: the registry behind ``torch.fx.wrap``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["wrap", "is_fx_tracing"]

_F = TypeVar("_F", bound=Callable[..., Any])

# (id of the calling module's globals, function name) -> those globals: the functions a tracer
# would treat as leaves (call_function nodes) instead of tracing through them
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}


def wrap(fn_or_name: _F | str) -> _F | str:
    """Mark a module-level function (or the name of one) as a leaf for symbolic tracing.

    Call it at the top level of a module, as a decorator (``@torch.fx.wrap``) or as
    ``torch.fx.wrap("len")``. Returns its argument unchanged.

    Raises:
        RuntimeError: ``fn_or_name`` is neither callable nor a string.
        NotImplementedError: called from inside a function rather than at module level.
    """
    if not (callable(fn_or_name) or isinstance(fn_or_name, str)):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           f"string name, got {type(fn_or_name).__name__}")
    if callable(fn_or_name):
        code = getattr(fn_or_name, "__code__", None)
        name = code.co_name if code is not None else fn_or_name.__name__  # type: ignore[union-attr]
    else:
        name = fn_or_name
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def is_fx_tracing() -> bool:
    """False: ember has no symbolic tracer, so no trace is ever running."""
    return False
