"""``torch._subclasses``: PyTorch's tensor subclasses for tracing (fake, functional and meta
tensors). ember has none of them; what exists here answers the questions libraries ask at import
and run time, truthfully for ember's tensors (``fake_tensor.is_fake`` is False for every one).
"""

from __future__ import annotations

__all__: list[str] = []


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch._subclasses", name)
