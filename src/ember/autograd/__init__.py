"""``ember.autograd``: the engine's public face: ``backward``, ``grad``, ``Function``, grad modes.

The engine itself is the lowest layer above the arrays (``node.py``, ``function.py``,
``engine.py``, ``grad_mode.py``); it is imported eagerly. The parts built from tensors and ops
(``functional``, ``gradcheck``, ``Variable``, ``profiler``) sit above ``Tensor`` and load on first
use, so importing the engine never pulls in the layers above it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from . import engine, grad_mode  # noqa: F401 - ember.autograd.grad_mode is public
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, Node
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = [
    "Function", "Node", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
    "is_anomaly_enabled", "Variable", "functional",
]

# name -> (submodule, attribute or None for the submodule itself), loaded on first use
_LAZY = {
    "functional": ("functional", None),
    "profiler": ("profiler", None),
    "gradcheck": ("gradcheck", "gradcheck"),
    "gradgradcheck": ("gradcheck", "gradgradcheck"),
    "Variable": ("variable", "Variable"),
    "variable": ("variable", None),
    "forward_ad": ("forward_ad", None),
    "graph": ("graph", None),
}


class _AutogradModule(types.ModuleType):
    """``ember.autograd``'s module type. ``ember.autograd.gradcheck`` is the function, as in
    PyTorch, though a submodule of that name exists (``from torch.autograd.gradcheck import
    GradcheckError``): importing the submodule binds it on its package, and this puts the
    function back in its place."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "gradcheck" and isinstance(value, types.ModuleType):
            value = value.gradcheck
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _AutogradModule


def __getattr__(name: str) -> object:
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(f"{__name__}.{module_name}")
        value: Any = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    from .._missing import attribute_error

    raise attribute_error("torch.autograd", name)
