"""``torch.functional`` at PyTorch's module path: the top-level functions PyTorch defines there.

They live in ember's top-level namespace; this module hands out the same objects (looked up on
first use, so a function ember lacks is an ``AttributeError`` here too).
"""

from __future__ import annotations

from typing import Any

_NAMES = (
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
    "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index",
)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        import ember

        try:
            return getattr(ember, name)
        except AttributeError:
            pass
    raise AttributeError(f"module 'ember.functional' has no attribute {name!r}")


def __dir__() -> list[str]:
    import ember

    return [n for n in _NAMES if hasattr(ember, n)]
