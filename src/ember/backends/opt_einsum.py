"""``ember.backends.opt_einsum``: whether einsum contraction order is optimised by the
``opt_einsum`` package. ember's einsum is NumPy's, so this reports the package and stores flags."""

from __future__ import annotations

import importlib.util
from typing import Any

__all__ = ["enabled", "get_opt_einsum", "is_available", "strategy"]


def is_available() -> bool:
    """Whether the ``opt_einsum`` package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum() -> Any:
    """The ``opt_einsum`` module if installed, else None."""
    if not is_available():
        return None
    import opt_einsum

    return opt_einsum


enabled = is_available()
strategy: str | None = "auto" if enabled else None
