"""``ember.nn.parallel``: ``DataParallel`` (one device: the module itself) and
``DistributedDataParallel`` (needs a process group: not available yet). See docs/parallel.md."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def __getattr__(name: str) -> object:
    from ..._missing import attribute_error

    raise attribute_error("torch.nn.parallel", name)
