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
