"""Instance normalization: ``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d``.

Each channel of each sample is normalized over its spatial dims. By default there are no
parameters (``affine=False``) and no running statistics (``track_running_stats=False``); with
``track_running_stats`` the running mean/variance update in training and are used in eval mode.
State dict keys and shapes are PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..._tensor import Tensor
from ...ops import nn as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._spatial
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input of "
                             f"shape {list(input.shape)}; {type(self).__name__} takes "
                             f"(N, C, *spatial) or (C, *spatial) with {n} spatial dims)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.dim() == self._spatial + 1
        if unbatched:
            input = input.unsqueeze(0)  # noqa: A001
        c = input.shape[1]
        if c != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim=1 to match num_features "
                                 f"({self.num_features}), but got: {c}.")
            warnings.warn("input's size at dim=1 does not match num_features. You can silence "
                          "this warning by not passing in num_features, which is not used "
                          "because affine=False", stacklevel=2)
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats, self.momentum if self.momentum is not None else 0.0,
                              self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of an (N, C, L) or (C, L) input over L, per sample and channel."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of an (N, C, H, W) or (C, H, W) input over (H, W)."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of an (N, C, D, H, W) or (C, D, H, W) input over (D, H, W)."""

    _spatial = 3
