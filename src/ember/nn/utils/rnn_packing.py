"""``PackedSequence`` and the functions that pack and unpack variable-length batches.

A PackedSequence stores a batch of sequences sorted by decreasing length, time step after time
step: ``data`` rows ``offsets[t] : offsets[t] + batch_sizes[t]`` are step ``t`` of the
``batch_sizes[t]`` sequences that are still running. The recurrent modules (``nn.RNN``,
``nn.LSTM``, ``nn.GRU``) accept one and skip the padding entirely. Packing and unpacking are one
differentiable gather each (``index_select``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..._tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """A batch of variable-length sequences, packed (see the module docstring).

    Fields: ``data`` (sum of lengths, *), ``batch_sizes`` (int64, CPU: sequences running at each
    step), ``sorted_indices`` / ``unsorted_indices`` (int64 permutations between the caller's
    batch order and the length-sorted order; None when the batch was already sorted).
    Build one with ``pack_padded_sequence`` or ``pack_sequence``, not by hand.

    Example::

        >>> p = pack_sequence([torch.ones(3, 2), torch.ones(1, 2)])
        >>> p.batch_sizes
        tensor([2, 1, 1])
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), sorted_indices=...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                "created manually. They should be instantiated by functions like pack_sequence "
                "and pack_padded_sequences in nn.utils.rnn."
            )
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """Convert ``data`` like ``Tensor.to``; the index tensors follow it to its device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        si = self.sorted_indices.to(data.device) if self.sorted_indices is not None else None
        ui = self.unsorted_indices.to(data.device) if self.unsorted_indices is not None else None
        return type(self)(data, self.batch_sizes, si, ui)

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` on the GPU."""
        return self.to(*(args or ("cuda",)), **kwargs)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` on the CPU."""
        return self.to("cpu")

    def pin_memory(self) -> PackedSequence:
        """Accepted for compatibility: returns self."""
        return self

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(dtype=_dt("float64"))

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(dtype=_dt("float32"))

    def half(self) -> PackedSequence:
        """``data`` as float16."""
        return self.to(dtype=_dt("float16"))

    def long(self) -> PackedSequence:
        """``data`` as int64."""
        return self.to(dtype=_dt("int64"))

    def int(self) -> PackedSequence:
        """``data`` as int32."""
        return self.to(dtype=_dt("int32"))

    def short(self) -> PackedSequence:
        """``data`` as int16."""
        return self.to(dtype=_dt("int16"))

    def char(self) -> PackedSequence:
        """``data`` as int8."""
        return self.to(dtype=_dt("int8"))

    def byte(self) -> PackedSequence:
        """``data`` as uint8."""
        return self.to(dtype=_dt("uint8"))

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Always False (no pinned memory on the CPU backend)."""
        return False


def _dt(name: str) -> Any:
    from ... import _dtype

    return _dtype.to_dtype(name)


def _int64(values: Any, device: Any = None) -> Tensor:
    arr = np.asarray(values, dtype=np.int64)
    t = Tensor._make(arr)
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    return t


def _host_ints(t: Any, name: str) -> np.ndarray:
    if isinstance(t, Tensor):
        return np.asarray(t.detach().cpu().numpy()).astype(np.int64).reshape(-1)
    return np.asarray(list(t), dtype=np.int64).reshape(-1)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation tensor (None stays None)."""
    if permutation is None:
        return None
    perm = _host_ints(permutation, "permutation")
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    return _int64(inv, permutation.device)


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch (``(B, T, *)`` with ``batch_first``) of sequences whose
    lengths are ``lengths``; differentiable with respect to ``input``.

    With ``enforce_sorted=True`` the lengths must be in decreasing order; otherwise the batch is
    sorted here and the permutation kept in ``sorted_indices``.

    Example::

        >>> x = torch.zeros(4, 2, 3)
        >>> pack_padded_sequence(x, [4, 2]).batch_sizes
        tensor([2, 2, 1, 1])
    """
    from ...ops.indexing import index_select

    lens = _host_ints(lengths, "lengths")
    tdim, bdim = (1, 0) if batch_first else (0, 1)
    if input.ndim < 2:
        raise ValueError(
            f"pack_padded_sequence: input must have at least 2 dims (time and batch), got shape "
            f"{tuple(input.shape)}"
        )
    if lens.size != input.shape[bdim]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} (batch_size="
            f"{input.shape[bdim]}; input of shape {tuple(input.shape)}, batch_first={batch_first})"
        )
    sorted_indices = None
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                "to sidestep this requirement if you do not need ONNX exportability."
            )
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _int64(order, input.device)
        lens = lens[order]
    if lens.size and lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    steps = input.shape[tdim]
    if lens.size and lens[0] > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {int(lens[0])} exceeds the padded sequence length "
            f"{steps} (input of shape {tuple(input.shape)}, batch_first={batch_first})"
        )
    batch = input.shape[bdim]
    max_len = int(lens[0]) if lens.size else 0
    active = lens[None, :] > np.arange(max_len)[:, None]  # (time, sorted batch)
    batch_sizes = active.sum(axis=1).astype(np.int64)
    t_idx, b_idx = np.nonzero(active)  # time-major: step 0's rows, then step 1's ...
    src_b = b_idx if sorted_indices is None else order[b_idx]
    flat = src_b * steps + t_idx if batch_first else t_idx * batch + src_b
    rest = tuple(input.shape[2:])
    data = index_select(input.reshape((steps * batch,) + rest), 0, _int64(flat, input.device))
    return PackedSequence(data, _int64(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Unpack a PackedSequence into (padded, lengths): padded is (T, B, *) (``(B, T, *)`` with
    ``batch_first``), in the caller's original batch order; differentiable w.r.t. ``data``.

    Example::

        >>> padded, lengths = pad_packed_sequence(pack_sequence([torch.ones(3), torch.ones(1)]))
        >>> padded.shape, lengths
        (torch.Size([3, 2]), tensor([3, 1]))
    """
    from ...ops import joining as _joining
    from ...ops.indexing import index_select

    data, batch_sizes, _, unsorted = sequence
    sizes = _host_ints(batch_sizes, "batch_sizes")
    max_len = int(sizes.size)
    batch = int(sizes[0]) if max_len else 0
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_len}"
            )
        max_len_out = int(total_length)
    else:
        max_len_out = max_len
    n = int(data.shape[0])
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    gidx = np.full((max_len_out, batch), n, dtype=np.int64)  # row n: the padding row
    active = np.arange(batch)[None, :] < sizes[:, None]
    gidx[:max_len][active] = (offs[:, None] + np.arange(batch)[None, :])[active]
    lengths = active.sum(axis=0).astype(np.int64)
    if unsorted is not None:
        ui = _host_ints(unsorted, "unsorted_indices")
        gidx = gidx[:, ui]
        lengths = lengths[ui]
    if batch_first:
        gidx = gidx.T
    rest = tuple(data.shape[1:])
    pad_row = data.new_full((1,) + rest, padding_value)
    ext = _joining.cat([data, pad_row], 0)
    flat = index_select(ext, 0, _int64(gidx.reshape(-1), data.device))
    return flat.reshape(gidx.shape + rest), _int64(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors (decreasing L_i unless ``enforce_sorted=False``)."""
    from .rnn import pad_sequence

    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into a list of (L_i, *) tensors."""
    lens = _host_ints(lengths, "lengths")
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a PackedSequence back into a list of (L_i, *) tensors (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
