"""``ember.utils.data``: datasets, samplers and the DataLoader."""

from . import datapipes
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .datapipes import DataChunk, IterDataPipe, MapDataPipe, functional_datapipe
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
    "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
    "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
    "IterDataPipe", "MapDataPipe", "DataChunk", "functional_datapipe", "datapipes",
]


def __getattr__(name: str) -> object:
    from ..._missing import attribute_error

    raise attribute_error("torch.utils.data", name)
