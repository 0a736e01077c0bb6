"""``torch.overrides`` at PyTorch's module path: the ``__torch_function__`` helpers ember has.

ember has no ``__torch_function__`` dispatch; these are the functions ``torch.nn.functional``
also exposes (``has_torch_function*`` answer False, ``handle_torch_function`` calls through).
"""

from __future__ import annotations

from .ops.nn import (
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)

__all__ = ["handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic"]
