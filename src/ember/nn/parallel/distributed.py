"""``DistributedDataParallel``: the name, for programs that wrap only when launched; not yet the
gradient averaging (docs/parallel.md)."""

from __future__ import annotations

from typing import Any

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """PyTorch's ``nn.parallel.DistributedDataParallel``. Without a process group the
    constructor raises PyTorch's ``ValueError`` (also a ``NotImplementedError``); with one it
    raises ``NotImplementedError``: ember's DDP is not written yet. Single-process programs that
    only import the name and wrap the model only when ``RANK`` is set run unchanged.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool | None = None, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 **kwargs: Any) -> None:
        from ... import distributed as dist

        if dist.is_initialized():
            raise NotImplementedError(
                "ember's DistributedDataParallel is not written yet; the collectives it builds on "
                "are (torch.distributed.all_reduce on each gradient after backward averages them)"
            )
        raise dist._no_group("DistributedDataParallel")
