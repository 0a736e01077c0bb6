"""A context manager that sets module-level flags and restores them on exit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any


@contextlib.contextmanager
def set_flags(module: ModuleType, **values: Any) -> Iterator[None]:
    """Set ``module.<name> = value`` for each keyword; restore the old values on exit."""
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
