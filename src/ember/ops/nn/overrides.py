"""The ``__torch_function__`` protocol's probes and ``nn.functional``'s argument helpers.

ember has no tensor-subclass dispatch, so nothing ever needs handling.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "handle_torch_function", "assert_int_or_pair",
]


# ---------------------------------------------------------------------------------------------
# the __torch_function__ protocol's probes: ember has no tensor-subclass dispatch, so nothing
# ever needs handling


def has_torch_function(relevant_args: Any) -> bool:
    """False: ember does not dispatch ``__torch_function__`` overrides."""
    return False


def has_torch_function_unary(arg: Any) -> bool:
    return False


def has_torch_function_variadic(*args: Any) -> bool:
    return False


def handle_torch_function(public_api: Any, relevant_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Calls ``public_api`` directly (there are no overrides to dispatch to)."""
    return public_api(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# CTC loss


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or a pair."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
