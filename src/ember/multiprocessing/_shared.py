"""Shared tensors through ``ember.multiprocessing``: importing it teaches the pickler to send
``Tensor`` and ``Parameter`` objects whose memory is shared by file descriptor (see
``ember/_tensor_sharing.py``; the memory itself is ``ember/_shared_memory.py``)."""

from __future__ import annotations

from .._shared_memory import is_shared_array
from .._tensor import Tensor
from .._tensor_sharing import register_reducer
from ..nn.parameter import Parameter

__all__ = ["is_shared_array"]

for _cls in (Tensor, Parameter):
    register_reducer(_cls)
del _cls
