"""``torch.autograd.forward_ad``: forward-mode AD's dual tensors. ember has no forward-mode AD
(``make_dual``, ``dual_level`` are absent), so no tensor ever carries a tangent; ``unpack_dual``
answers that, as PyTorch's does for a tensor made outside ``make_dual``. Libraries call it to ask
whether a forward-mode tangent must be kept (kornia's clamps do).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["UnpackedDualTensor", "unpack_dual"]


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal and its tangent (None: no tangent)."""

    primal: Any
    tangent: Any


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(tensor, None)``: ember's tensors carry no forward-mode tangent at any level."""
    return UnpackedDualTensor(tensor, None)


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.autograd.forward_ad", name)
