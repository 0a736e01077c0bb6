"""``torch.storage``: the storage classes, the allocation a tensor views (``x.untyped_storage()``,
``x.storage()``). The classes live with Tensor's methods (``ember/_tensor_methods.py``); this module
names them at PyTorch's path, where libraries import them (``from torch.storage import
UntypedStorage``) and use them as types."""

from __future__ import annotations

from ._tensor_methods import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
