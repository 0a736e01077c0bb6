"""``nn.utils.skip_init``: build a module without running its parameter initialization."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """An instance of ``module_cls(*args, **kwargs)`` whose parameters are left uninitialized
    (to be loaded or initialized by the caller). As in PyTorch, the class must accept
    ``device``."""
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
