"""Distance functions: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``.

All three are compositions of recorded ops, so their gradients come from those ops' rules.
"""

from __future__ import annotations

from ... import _backend
from ..._tensor_base import TensorBase
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from ..indexing import getitem

__all__ = [
    "cosine_similarity", "pairwise_distance", "pdist",
]


# ---------------------------------------------------------------------------------------------
# normalisation and distances (composites)


def cosine_similarity(x1: TensorBase, x2: TensorBase, dim: int = 1, eps: float = 1e-8) -> TensorBase:
    """sum(x1/||x1|| * x2/||x2||) along ``dim`` (each norm clamped to at least ``eps``)."""
    if _amp.active:
        x1, x2 = _amp_cast("cosine_similarity", x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: TensorBase, x2: TensorBase, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> TensorBase:
    """||x1 - x2 + eps||_p along the last dim."""
    dim = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, dim if dim >= 0 else None, keepdim=keepdim)


def pdist(input: TensorBase, p: float = 2) -> TensorBase:
    """||x_i - x_j||_p for every row pair i < j of a 2-D input (the condensed upper triangle)."""
    if _amp.active:
        (input,) = _amp_cast("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.ndim}D (shape {tuple(input.shape)})"
        )
    xp = _backend.xp_of(input._data)
    i, j = xp.triu_indices(input.shape[0], 1)

    diff = getitem(input, TensorBase._make(i)) - getitem(input, TensorBase._make(j))
    return diff.norm(p, 1)
