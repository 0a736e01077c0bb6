"""``torch._utils``: the functions PyTorch's pickles of tensors name.

``pickle.dumps(t)`` in PyTorch writes ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, requires_grad, hooks)`` (a parameter: ``_rebuild_parameter(tensor, requires_grad,
hooks)``), its storage through ``torch.storage._load_from_bytes``. Under ``ember run`` those
names resolve here, so PyTorch's pickles load as ember tensors, and ember's plain tensors pickle
the same way (``ember/storage.py``), so PyTorch loads them. Other names of ``torch._utils`` are
PyTorch internals ember does not have.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._missing import attribute_error
from ._tensor import Tensor
from ._tensor_methods import UntypedStorage

__all__: list[str] = []

def _rebuild_tensor(storage: Any, storage_offset: int, size: Any, stride: Any) -> Tensor:
    """A tensor viewing ``storage`` (a ``TypedStorage``) from ``storage_offset`` with ``size``
    and ``stride`` in elements: it shares the storage's memory, as PyTorch's does (off the host,
    it is built from the storage's values and moved to its device)."""
    if not isinstance(storage, UntypedStorage) or not hasattr(storage, "dtype"):
        raise TypeError(f"_rebuild_tensor: expected a TypedStorage, got {type(storage).__name__}")
    elems = storage._elements()
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"_rebuild_tensor: size {size} and stride {stride} differ in length")
    last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else -1
    if storage_offset < 0 or min(stride, default=0) < 0 or last >= elems.size:
        raise RuntimeError(
            f"_rebuild_tensor: size {size}, stride {stride} and offset {storage_offset} reach "
            f"element {last} of a storage of {elems.size} elements (out of bounds)")
    numel = int(np.prod(size))
    if numel == 0:
        arr = elems[:0].reshape(size)
    else:
        arr = np.lib.stride_tricks.as_strided(
            elems[storage_offset:], size, tuple(s * elems.itemsize for s in stride))
    t = Tensor._make(arr)
    return t if storage.device.type == "cpu" else t.to(storage.device)

def _rebuild_tensor_v2(storage: Any, storage_offset: int, size: Any, stride: Any,
                       requires_grad: bool, backward_hooks: Any, metadata: Any = None) -> Tensor:
    """What a pickled tensor calls: ``_rebuild_tensor`` with ``requires_grad`` set (the hooks
    PyTorch saves are always an empty ``OrderedDict``)."""
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad = True
    return t

def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Any:
    """What a pickled ``Parameter`` calls."""
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)

def _rebuild_parameter_with_state(data: Tensor, requires_grad: bool, backward_hooks: Any,
                                  state: dict) -> Any:
    """A pickled ``Parameter`` with Python attributes of its own."""
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p

def __getattr__(name: str) -> Any:
    raise attribute_error("torch._utils", name)
