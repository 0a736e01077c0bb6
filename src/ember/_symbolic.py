"""``torch.SymInt``, ``torch.SymFloat``, ``torch.SymBool``: PyTorch's symbolic sizes and numbers,
which its compiler puts where an ``int``/``float``/``bool`` would be while it traces with dynamic
shapes. ember never traces that way: every size is a plain ``int``, so these classes have no
instances. Libraries use them in type checks (``isinstance(n, (int, torch.SymInt))``), which
then answer for the plain number, as they do on PyTorch outside a trace.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SymInt", "SymFloat", "SymBool"]


class _Symbolic:
    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        raise TypeError(f"torch.{type(self).__name__} wraps a symbolic node of a compiler trace; "
                        "ember has no symbolic shapes (every size is a plain number)")


class SymInt(_Symbolic):
    """A symbolic int of a dynamic-shape trace: never made in ember (sizes are ints)."""

    __slots__ = ()


class SymFloat(_Symbolic):
    """A symbolic float of a dynamic-shape trace: never made in ember."""

    __slots__ = ()


class SymBool(_Symbolic):
    """A symbolic bool of a dynamic-shape trace: never made in ember."""

    __slots__ = ()

