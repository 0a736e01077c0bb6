"""PyTorch's tensor printing: ``tensor([[1., 2.]], requires_grad=True)``. (minimal version)"""

from __future__ import annotations

from typing import Any

import numpy as np


def tensor_repr(t: Any) -> str:
    d = t._data if type(t._data) is np.ndarray else t._data.get()
    body = np.array2string(d, separator=", ", prefix="tensor(")
    parts = [f"tensor({body}"]
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        parts.append("requires_grad=True")
    return ", ".join(parts) + ")"
