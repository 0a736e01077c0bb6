"""``torch.fx.experimental.proxy_tensor``: PyTorch's ``make_fx`` traces a program by running it on
proxy tensors under a dispatch mode. ember has no such tracing (``make_fx`` is absent), so no
proxy mode is ever active.
"""

from __future__ import annotations

__all__ = ["get_proxy_mode"]


def get_proxy_mode() -> None:
    """The proxy-tensor tracing mode now active, or None: always None in ember, which has none.

    Libraries ask before branching on a tensor's values (which a trace could not record).
    """
    return None


def __getattr__(name: str) -> object:
    from ..._missing import attribute_error

    raise attribute_error("torch.fx.experimental.proxy_tensor", name)
