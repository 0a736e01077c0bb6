"""``torch.nn.utils.rnn``: ``pad_sequence`` (here) and the packing utilities
(``PackedSequence``, ``pack_padded_sequence``, ... from ``rnn_packing.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..._tensor import Tensor
from .rnn_packing import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
    unpad_sequence,
)

__all__ = [
    "pad_sequence", "PackedSequence", "invert_permutation", "pack_padded_sequence",
    "pad_packed_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence",
]


def pad_sequence(
    sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Pad a list of (L_i, *) tensors to the longest L and stack them (differentiable).

    Returns (L, B, *), or (B, L, *) with ``batch_first=True``.

    Example::

        >>> a, b = torch.ones(3, 2), torch.ones(1, 2)
        >>> pad_sequence([a, b], batch_first=True).shape
        torch.Size([2, 3, 2])
    """
    from ...ops import joining as _joining
    from ...ops import nn as F

    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                "The size of tensor a must match the size of tensor b at non-singleton "
                f"dimension (pad_sequence: sequence shapes {[tuple(t.shape) for t in seqs]} must "
                "agree after the first dim)"
            )
    max_len = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        extra = max_len - s.shape[0]
        spec = [0, 0] * len(trailing) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(F.pad(s, tuple(spec), value=padding_value) if extra else s)
    return _joining.stack(padded, 1 if not batch_first else 0)
