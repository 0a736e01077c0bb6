"""``torch._linalg_utils``: where PyTorch keeps its removed top-level linear-algebra functions.

``torch.eig`` lives there in PyTorch (it raises, pointing to ``torch.linalg.eig``); programs,
pickles and libraries name it by that path, so ember's is reachable there too. The function itself
is in ``ember/ops/linalg_factor.py``.
"""

from __future__ import annotations

from .ops.linalg_factor import eig

__all__ = ["eig"]
