"""``ember.distributed.fsdp``: PyTorch's FSDP names, so programs that import them load. Wrapping
a model needs a process group, which ember cannot create yet (see docs/parallel.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ...nn.modules.module import Module

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "FullyShardedDataParallel",
           "MixedPrecision", "ShardedStateDictConfig", "ShardingStrategy", "StateDictType",
           "fully_shard"]


class ShardingStrategy(enum.Enum):
    """How FSDP shards parameters, gradients and optimizer state."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    """When FSDP prefetches the next parameters during backward."""

    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    """Which state dict FSDP produces."""

    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


@dataclass
class CPUOffload:
    """Offload parameters to the CPU."""

    offload_params: bool = False


@dataclass
class MixedPrecision:
    """Dtypes FSDP computes, reduces and keeps buffers in."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class FullStateDictConfig:
    """Options of a full state dict."""

    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig:
    """Options of a sharded state dict."""

    offload_to_cpu: bool = False


class FullyShardedDataParallel(Module):
    """PyTorch's FSDP wrapper: constructing it needs a process group (raises, as PyTorch does
    without one; ember cannot create one yet)."""

    def __init__(self, module: Module, *args: Any, **kwargs: Any) -> None:
        from .. import _no_group

        raise _no_group("FullyShardedDataParallel")


def fully_shard(module: Module, *args: Any, **kwargs: Any) -> Module:
    """FSDP2's ``fully_shard``: needs a process group (raises)."""
    from .. import _no_group

    raise _no_group("fully_shard")
