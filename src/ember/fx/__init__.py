"""``torch.fx``: what libraries use of it while they import.

ember has no symbolic tracer yet. ``wrap`` is here because libraries call it at import time to
mark a function as a leaf for tracing: it records the function and returns it unchanged, exactly
as PyTorch's does when it runs (a later ``symbolic_trace`` would read the record). Every other
name of ``torch.fx`` (``symbolic_trace``, ``GraphModule``, ``Tracer``, ``Proxy``...) raises
``NotImplementedYet``.
"""

from __future__ import annotations

from ._symbolic_trace import wrap

__all__ = ["wrap"]


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.fx", name)
