"""``torch.utils.data.datapipes``: composable data pipelines (``IterDataPipe``,
``MapDataPipe``) and their functional forms (``dp.map(fn).batch(4)``), as PyTorch's core set."""

from . import datapipe, iter, map  # noqa: A004 - PyTorch's module names; importing registers
from ._decorator import functional_datapipe
from .datapipe import DataChunk, IterDataPipe, MapDataPipe

__all__ = ["IterDataPipe", "MapDataPipe", "DataChunk", "functional_datapipe", "iter", "map",
           "datapipe"]
