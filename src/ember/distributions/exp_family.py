"""``torch.distributions.exp_family``: the module that holds ``ExponentialFamily``."""

from __future__ import annotations

from .distribution import ExponentialFamily

__all__ = ["ExponentialFamily"]
