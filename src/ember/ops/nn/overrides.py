"""The ``__torch_function__`` protocol's probes (``torch.overrides``' helpers that
``nn.functional`` exposes too) and ``nn.functional``'s argument helpers.

ember's public functions dispatch by themselves (``ember/_overrides.py``); these are for code that
writes its own Python-level functions the way PyTorch's are written::

    if has_torch_function_unary(x):
        return handle_torch_function(my_fn, (x,), x)
"""

from __future__ import annotations

from typing import Any

from ... import _overrides

__all__ = [
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "handle_torch_function", "assert_int_or_pair",
]


def has_torch_function(relevant_args: Any) -> bool:
    """Whether a mode is active or one of ``relevant_args`` asks for ``__torch_function__``."""
    if _overrides.is_mode_enabled():
        return True
    if not _overrides.is_subclass_dispatch_enabled():
        return False
    return any(_overrides.asks(type(a)) for a in relevant_args)


def has_torch_function_unary(arg: Any) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args: Any) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api: Any, relevant_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Hand the call of ``public_api(*args, **kwargs)`` to the active mode or to the classes of
    ``relevant_args`` that ask (PyTorch's order); ``TypeError`` when all decline; the call
    itself when none asks. The dispatchers' own slow path (``_overrides.dispatch``)."""
    return _overrides.dispatch(public_api, public_api, args, kwargs, tuple(relevant_args))


# ---------------------------------------------------------------------------------------------
# CTC loss


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or a pair."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
