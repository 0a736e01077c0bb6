"""``default_collate``: a list of samples -> one batch (tensors stacked, numbers to tensors,
dicts, tuples, lists and namedtuples collated field by field, strings kept as lists)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import _backend, _dtype

__all__ = ["default_collate", "default_convert"]


def default_collate(batch: list) -> Any:
    """Collate a list of samples into a batch, the way PyTorch's default_collate does."""
    from ..._tensor import Tensor
    from ...ops import creation as _creation
    from ...ops import joining as _joining

    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {tuple(b.shape) for b in batch}
        if len(shapes) > 1:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {sorted(shapes)} in one "
                "batch; pad the samples to one size or pass a collate_fn"
            )
        if _backend.is_cpu_array(elem._data) and not any(b.requires_grad for b in batch):
            return Tensor._make(np.stack([b._data for b in batch]))
        return _joining.stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "USO":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {elem.dtype}")
        return Tensor._make(np.stack(batch))
    if isinstance(elem, np.generic):
        return Tensor._make(np.asarray(batch))
    if isinstance(elem, bool):
        return _creation.tensor(batch)
    if isinstance(elem, float):
        return _creation.tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, int):
        return _creation.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        try:
            return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(list(s)) for s in transposed]
        try:
            return type(elem)([default_collate(list(s)) for s in transposed])
        except TypeError:
            return [default_collate(list(s)) for s in transposed]
    raise TypeError(
        f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem)}"
    )


def default_convert(data: Any) -> Any:
    """What the DataLoader applies when ``batch_size=None``: NumPy arrays become tensors."""
    from ..._tensor import Tensor

    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return Tensor._make(data)
    if isinstance(data, Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data
