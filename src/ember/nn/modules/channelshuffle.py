"""``ChannelShuffle``: interleave channel groups (ShuffleNet)."""

from __future__ import annotations

from ..._tensor import Tensor
from ...ops.nn.vision import channel_shuffle
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Split the C channels of an (N, C, *) input into ``groups`` and interleave them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def extra_repr(self) -> str:
        return f"groups={self.groups}"

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)
