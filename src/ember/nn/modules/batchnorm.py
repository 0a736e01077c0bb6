"""Batch normalization: ``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d``.

In training mode the layer normalizes with the batch's statistics and updates the running mean
and (unbiased) variance in place; in eval mode it uses the running statistics. The buffers
``running_mean``, ``running_var`` and ``num_batches_tracked`` (int64) have PyTorch's names.
"""

from __future__ import annotations

from typing import Any

from ... import _dtype
from ..._tensor import Tensor
from ...ops import creation as _creation
from ...ops import nn as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Parameters, buffers and reset logic shared by the batch norms."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_creation.empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(_creation.empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 _creation.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 _creation.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _creation.tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """running_mean = 0, running_var = 1, num_batches_tracked = 0."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight = 1, bias = 0."""
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed: start it at 0
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = _creation.tensor(0, dtype=_dtype.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over a 2D (N, C) or 3D (N, C, L) input, per channel C.

    ``y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias``; the running statistics update as
    ``running = (1 - momentum) * running + momentum * batch`` (``momentum=None``: a cumulative
    average), with the unbiased batch variance.

    Example::

        >>> bn = nn.BatchNorm1d(100)
        >>> bn(torch.randn(20, 100)).shape
        torch.Size([20, 100])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(
                f"expected 2D or 3D input (got {input.dim()}D input of shape "
                f"{list(input.shape)}; BatchNorm1d takes (N, C) or (N, C, L))"
            )


class BatchNorm2d(_BatchNorm):
    """Batch normalization over a 4D input (N, C, H, W), per channel C (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(
                f"expected 4D input (got {input.dim()}D input of shape {list(input.shape)}; "
                "BatchNorm2d takes (N, C, H, W))"
            )


class BatchNorm3d(_BatchNorm):
    """Batch normalization over a 5D input (N, C, D, H, W), per channel C (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(
                f"expected 5D input (got {input.dim()}D input of shape {list(input.shape)}; "
                "BatchNorm3d takes (N, C, D, H, W))"
            )


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics PyTorch reduces across the processes of a group.

    ember runs one process per model here: the statistics are this process's batch, which is
    exactly what PyTorch computes with a single process (or without ``torch.distributed``). Takes
    any (N, C, *) input. ``convert_sync_batchnorm`` swaps a model's BatchNorm layers for it.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input of shape "
                             f"{list(input.shape)}; SyncBatchNorm takes (N, C, *))")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters
        and buffers (the module itself is returned when it is not a batch norm)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
