"""``torch.storage``: the storage classes, the allocation a tensor views (``x.untyped_storage()``,
``x.storage()``). The classes live with Tensor's methods (``ember/_tensor_methods.py``); this module
names them at PyTorch's path, where libraries import them (``from torch.storage import
UntypedStorage``) and use them as types."""

from __future__ import annotations

import io
from typing import Any

from ._tensor_methods import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]


def _load_from_bytes(b: bytes) -> Any:
    """What PyTorch's pickles of a tensor call: ``torch.load`` of ``torch.save``'s bytes. A
    parameter pickles through it (``_SavedTensor``), as in PyTorch, so an unpickler that
    intercepts it (skorch's, to pass its own ``torch.load`` arguments) sees the same stream."""
    from .serialization import load

    return load(io.BytesIO(b), weights_only=False)


class _SavedTensor:
    """A tensor that pickles as ``torch.storage._load_from_bytes(<torch.save's bytes>)``: it
    unpickles as the tensor itself, in ember and in PyTorch alike."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        from .serialization import save

        buf = io.BytesIO()
        save(self.tensor, buf)
        return (_load_from_bytes, (buf.getvalue(),))


class _StorageBytes:
    """A tensor's values as PyTorch pickles a storage: ``_load_from_bytes(<the storage in
    torch.save's legacy format>)``, which PyTorch's ``_load_from_bytes`` and ember's read."""

    __slots__ = ("arr", "dtype")

    def __init__(self, arr: Any, dtype: Any) -> None:
        self.arr, self.dtype = arr, dtype

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        from .serialization._legacy import storage_bytes

        return (_load_from_bytes, (storage_bytes(self.arr, self.dtype),))


def _reduce_as_pytorch(t: Any) -> Any:
    """A plain tensor's pickle in PyTorch's form, ``torch._utils._rebuild_tensor_v2(storage, 0,
    size, stride, requires_grad, OrderedDict())`` over a contiguous copy of its values, the
    storage through ``torch.storage._load_from_bytes``. ``ember run`` installs it (there those
    names resolve to ember's, and PyTorch unpickles it as its own). Tensors PyTorch pickles
    another way (uint16/32/64, sparse, with Python attributes) keep ember's form."""
    from collections import OrderedDict

    import numpy as np

    from ._utils import _rebuild_tensor_v2
    from .ops import sparse as _sparse
    from .serialization._common import _STORAGE_OF

    if (t.dtype.name not in _STORAGE_OF or _sparse.is_sparse(t)
            or any(not k.startswith("_") for k in t.__dict__)):
        return t.__reduce_ex__(2)
    arr = np.ascontiguousarray(t.detach().cpu()._data).reshape(-1)
    shape = tuple(int(n) for n in t.shape)
    stride, step = [], 1
    for n in reversed(shape):
        stride.append(step)
        step *= max(n, 1)
    return (_rebuild_tensor_v2, (_StorageBytes(arr, t.dtype), 0, shape, tuple(reversed(stride)),
                                 bool(t.requires_grad), OrderedDict()))


def _reduce_parameter_as_pytorch(p: Any) -> Any:
    """A ``Parameter`` in PyTorch's form: ``torch._utils._rebuild_parameter(data, requires_grad,
    OrderedDict())`` (``_with_state`` and its attributes when it has some), the data a plain
    tensor (``_reduce_as_pytorch``)."""
    from collections import OrderedDict

    from ._tensor import Tensor
    from ._utils import _rebuild_parameter, _rebuild_parameter_with_state

    data = Tensor._make(p.detach()._data)
    state = {k: v for k, v in p.__dict__.items() if not k.startswith("_")}
    if state:
        return (_rebuild_parameter_with_state, (data, p.requires_grad, OrderedDict(), state))
    return (_rebuild_parameter, (data, p.requires_grad, OrderedDict()))


_pytorch_form = [False]  # set by _pickle_as_pytorch; Parameter.__reduce_ex__ reads it


def _pickle_as_pytorch(on: bool) -> None:
    """Make ``pickle`` write plain tensors and parameters in PyTorch's form (``on``) or ember's
    own (multiprocessing's pickler keeps its shared-memory reducers either way)."""
    import copyreg

    from ._tensor import Tensor

    _pytorch_form[0] = on
    if on:
        copyreg.pickle(Tensor, _reduce_as_pytorch)
    else:
        copyreg.dispatch_table.pop(Tensor, None)
