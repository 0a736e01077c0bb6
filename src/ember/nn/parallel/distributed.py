"""``DistributedDataParallel``: needs a default process group, which ember cannot create yet."""

from __future__ import annotations

from typing import Any

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """PyTorch's ``nn.parallel.DistributedDataParallel``. Constructing it needs an initialized
    process group (PyTorch raises ``ValueError`` without one); ember cannot create one yet, so the
    constructor raises that error, which is also a ``NotImplementedError``. Single-process programs
    that only import the name (``from torch.nn.parallel import DistributedDataParallel as DDP``)
    and wrap the model only when ``RANK`` is set run unchanged.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool | None = None, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 **kwargs: Any) -> None:
        from ...distributed import _no_group

        raise _no_group("DistributedDataParallel")
