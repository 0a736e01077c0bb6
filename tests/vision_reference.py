"""Real torchvision as the vision tests' reference, where it is installed (CI installs 0.28.0).

The torchvision wheel's compiled operators (nms, roi_align...) are built against a CUDA torch and
cannot load beside the CPU torch the tests use; its Python parts (transforms, models, box_iou's
arithmetic) need none of them. ``real_torchvision()`` imports it with the registration module that
would fail replaced by an empty one, or returns None when torchvision (or torch) is absent.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def real_torchvision() -> Any:
    """The real torchvision module, or None where it (or PyTorch) is not installed."""
    if "torchvision" in sys.modules and not sys.modules["torchvision"].__name__.startswith("ember"):
        return sys.modules["torchvision"]
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    try:
        import torchvision
    except Exception:  # noqa: BLE001 - any import failure means "no reference here"
        return None
    return torchvision
