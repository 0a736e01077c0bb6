"""``torch.utils.data._utils`` at PyTorch's module path (collate and worker helpers)."""

from . import collate, worker

__all__ = ["collate", "worker"]
