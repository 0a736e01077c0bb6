"""``torch.utils.data._utils.worker`` at PyTorch's module path."""

from ..dataloader import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]
