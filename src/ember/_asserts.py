"""``torch._assert_async``: a check that a one-element tensor is nonzero. PyTorch runs it without
waiting on CUDA; ember checks at once on every device (its CPU form, which is PyTorch's too).
"""

from __future__ import annotations

from ._tensor import Tensor

__all__: list[str] = []


def _assert_async(input: Tensor, assert_msg: str | None = None) -> None:  # noqa: A002
    """Raise ``RuntimeError`` unless ``input`` holds exactly one nonzero value (NaN counts as
    nonzero, as in ``bool(x)``); ``assert_msg`` replaces the message of a zero value."""
    n = input.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with "
                           f"{'no values' if n == 0 else 'more than one value'} is ambiguous")
    if not input.item():
        raise RuntimeError(assert_msg if assert_msg is not None else
                           "Expected Tensor with single nonzero value, but got zero")
