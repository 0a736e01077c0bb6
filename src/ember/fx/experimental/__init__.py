"""``torch.fx.experimental``: only ``proxy_tensor.get_proxy_mode``, which libraries call to ask
whether a ``make_fx`` trace is running (never, in ember: it has no proxy-tensor tracing)."""

from __future__ import annotations

__all__: list[str] = []


def __getattr__(name: str) -> object:
    from ..._missing import attribute_error

    raise attribute_error("torch.fx.experimental", name)
