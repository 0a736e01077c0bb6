"""``torch.distributed.rpc``: ember is built without RPC, so, as on a PyTorch build without it,
the module holds only ``is_available()``, which answers False. Libraries check it before they
touch RPC (``if torch.distributed.rpc.is_available(): ...``)."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """False: this build has no RPC framework (``init_rpc``, ``rpc_sync``, ``RRef``...)."""
    return False
