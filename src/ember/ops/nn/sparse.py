"""Sparse functions: ``embedding``, ``embedding_bag`` and ``one_hot``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _backend, _dtype, _threads
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd import grad_mode
from ...autograd.function import Op
from .. import sparse as _sparse
from .._index import _add_rows, _group_starts, keeps_index
from ..indexing import getitem
from ._common import _graphing
from .activation import _MulMask

__all__ = [
    "embedding", "embedding_bag", "one_hot",
]


# ---------------------------------------------------------------------------------------------
# embedding


@keeps_index("input", against="weight")
def embedding(
    input: TensorBase, weight: TensorBase, padding_idx: int | None = None, max_norm: float | None = None,
    norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
) -> TensorBase:
    """Look up rows of ``weight`` (num_embeddings, dim) at integer ``input`` indices.

    The row at ``padding_idx`` gets no gradient; ``max_norm`` renormalises looked-up rows in place.
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"embedding(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.type()} instead (while checking arguments for embedding). "
            "Convert the indices, e.g. idx.long()"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {tuple(weight.shape)}")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    idx = input._data
    if idx.size and input.device.type != "meta":  # (meta: no values to check)
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(
                f"index out of range in self (embedding: index {bad} with num_embeddings={n}; "
                f"valid indices are 0..{n - 1})"
            )
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    if weight._data.dtype.kind == "c" and weight._rg and grad_mode.state.enabled:
        raise RuntimeError("embedding does not support automatic differentiation for outputs "
                           "with complex dtype. (As PyTorch: look rows up under torch.no_grad(), "
                           "or index the weight, weight[indices], which is differentiable.)")
    if sparse and weight._rg and weight._grad_fn is None and grad_mode.state.enabled:
        # a sparse gradient (ops/sparse.py): the rows looked up, as PyTorch's
        _sparse.install_grad_hook(weight)
        return _EmbeddingSparse.apply(weight, idx, padding_idx, scale_grad_by_freq)
    if padding_idx is None and not scale_grad_by_freq:
        return EmbeddingLookup.apply(weight, idx)
    return _EmbeddingMasked.apply(weight, idx, padding_idx, scale_grad_by_freq)


def embedding_bag(
    input: TensorBase, weight: TensorBase, offsets: TensorBase | None = None, max_norm: float | None = None,
    norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
    sparse: bool = False, per_sample_weights: TensorBase | None = None,
    include_last_offset: bool = False, padding_idx: int | None = None,
) -> TensorBase:
    """Sums, means or maxes of embedding rows per bag: (B, N) input (one bag per row) or a 1-D
    input split by ``offsets``; returns (B, embedding_dim)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max (got {mode!r})")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    xp = _backend.xp_of(input._data)
    idx = input._data
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                "of fixed length sequences. However, found offsets of type "
                f"{type(offsets).__name__}"
            )
        nbags, length = idx.shape
        flat = idx.reshape(-1)
        bag_ids = xp.repeat(xp.arange(nbags), length)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = offsets._data.astype(xp.int64)
        if off.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if off.shape[0] and int(off[0]) != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                f"from position 0. However, got {int(off[0])}"
            )
        if include_last_offset:
            off = off[:-1]
        nbags = off.shape[0]
        flat = idx
        bag_ids = xp.searchsorted(off, xp.arange(idx.shape[0]), side="right") - 1
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    valid = xp.ones(flat.shape, dtype=bool)
    if padding_idx is not None:
        n = weight.shape[0]
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
        valid = flat != padding_idx
    if per_sample_weights is None and not scale_grad_by_freq and type(idx) is np.ndarray:
        # one Op, as PyTorch's: no (entries, dim) array of looked-up rows, forward or backward
        _check_rows(flat, weight.shape[0])
        if max_norm is not None:
            _embedding_renorm(weight, flat, max_norm, norm_type)
        keep = valid.nonzero()[0] if padding_idx is not None else None
        ids, pos = (bag_ids, flat) if keep is None else (bag_ids[keep], flat[keep])
        if mode == "max":
            return EmbeddingBagMax.apply(weight, pos, ids, nbags)
        return EmbeddingBagSum.apply(weight, pos, ids, nbags, mode == "mean")
    rows = embedding(TensorBase._make(flat), weight, padding_idx, max_norm, norm_type,
                     scale_grad_by_freq)
    if mode == "max":
        # a (bags, longest bag) matrix of row numbers (and its mask) over the valid entries
        counts = xp.bincount(bag_ids[valid], minlength=nbags)
        length = int(counts.max()) if counts.size else 0
        starts = xp.zeros(nbags + 1, dtype=xp.int64)
        starts[1:] = xp.cumsum(xp.bincount(bag_ids, minlength=nbags))
        before = xp.cumsum(valid) - valid  # valid entries before each position
        slot = before - before[starts[bag_ids]]  # rank among its bag's valid entries
        order = xp.nonzero(valid)[0]
        mat = xp.zeros((nbags, max(length, 1)), dtype=xp.int64)
        mask = xp.zeros((nbags, max(length, 1)), dtype=bool)
        mat[bag_ids[order], slot[order]] = order
        mask[bag_ids[order], slot[order]] = True

        return _BagMax.apply(getitem(rows, TensorBase._make(mat)), mask)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    if padding_idx is not None:
        rows = _MulMask.apply(rows, valid.reshape(-1, 1).astype(rows._data.dtype))
    out = EmbeddingBackward.apply(rows, bag_ids, nbags)
    if mode == "mean":
        counts = xp.bincount(bag_ids[valid], minlength=nbags).astype(out._data.dtype)
        out = _MulMask.apply(out, (1 / xp.maximum(counts, 1)).reshape(-1, 1).astype(out._data.dtype))
    return out


def one_hot(input: TensorBase, num_classes: int = -1) -> TensorBase:
    """int64 one-hot encoding: shape (*, num_classes); ``num_classes=-1`` infers max + 1."""
    tensor = input
    if not isinstance(tensor, TensorBase) or tensor.dtype != _dtype.int64:
        got = tensor.dtype if isinstance(tensor, TensorBase) else type(tensor).__name__
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of type LongTensor. (got {got}; "
            "convert with labels.long())"
        )
    arr = tensor._data
    xp = _backend.xp_of(arr)
    if num_classes == -1:
        if arr.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(arr.max()) + 1
    if arr.size:
        if int(arr.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(arr.max()) >= num_classes:
            raise RuntimeError(
                f"Class values must be smaller than num_classes. (max class {int(arr.max())}, "
                f"num_classes={num_classes})"
            )
    out = (arr[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return TensorBase._make(out)


class EmbeddingBackward(Op):
    """out = the (V, D) gradient of ``weight[idx]``: rows of grad summed per index (scatter-add)
    grad_grad = grad_out[idx]   (a gather: the adjoint of the scatter)"""
    node_name = "EmbeddingDenseBackward0"

    @staticmethod
    def forward(ctx: Any, grad: Any, idx: Any, num_weights: int) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(idx)
        d = grad.shape[-1]
        g2 = grad.reshape(-1, d)
        if xp is np:  # one buffer, rows summed per index in index order (PyTorch's index_add)
            if (out := _kernels.scatter_rows(num_weights, idx, g2)) is not None:
                return out  # the eager kernel: the same sums, one pass
            acc = np.float32 if grad.dtype.itemsize == 2 else grad.dtype
            out = np.zeros((num_weights, d), acc)
            _add_rows(out, idx.reshape(-1), g2)
            return out.astype(grad.dtype, copy=False)
        # one bincount over (index, column) pairs: a vectorised scatter-add
        flat = (idx.reshape(-1, 1).astype(xp.int64) * d + xp.arange(d)).reshape(-1)
        sums = xp.bincount(flat, weights=g2.reshape(-1), minlength=num_weights * d)
        return sums.reshape(num_weights, d).astype(grad.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(EmbeddingLookup, grad, idx), None, None


class EmbeddingLookup(Op):
    """out = weight[idx]          grad_weight = scatter-add of grad rows at idx"""
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, idx: Any) -> Any:
        ctx.save_for_backward(idx)
        ctx.num = w.shape[0]
        return _threads.take_rows(w, idx)  # (w[idx]; large lookups over the threads)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(EmbeddingBackward, grad, idx, ctx.num), None


class _EmbeddingSparse(Op):
    """out = weight[idx]
    grad_weight = a sparse COO tensor: one row of grad per looked-up index (uncoalesced, in
    input order; rows at padding_idx left out), as ``nn.Embedding(sparse=True)`` gives"""
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, idx: Any, padding_idx: Any, by_freq: bool) -> Any:
        ctx.save_for_backward(idx)
        ctx.shape, ctx.padding_idx, ctx.by_freq = w.shape, padding_idx, by_freq
        return w[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        if ctx.by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                               "gradients")
        (idx,) = ctx.saved
        flat = idx.reshape(-1).astype(ctx.xp.int64)
        rows = grad.reshape(-1, ctx.shape[1])
        if ctx.padding_idx is not None:
            keep = flat != ctx.padding_idx
            flat, rows = flat[keep], rows[keep]
        rec = _sparse.COO(flat[None, :], rows.copy(), ctx.shape, flat.shape[0] <= 1)
        return _sparse.make(rec), None, None, None


class _EmbeddingMasked(Op):
    """out = weight[idx]
    grad_weight = scatter-add of grad rows at idx, rows at padding_idx dropped, each row divided
    by its index's count in the batch when scale_grad_by_freq"""
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, idx: Any, padding_idx: Any, by_freq: bool) -> Any:
        xp = ctx.xp
        ctx.num = w.shape[0]
        scale = None
        flat = idx.reshape(-1)
        if padding_idx is not None or by_freq:
            scale = xp.ones(flat.shape, dtype=w.dtype)
            if by_freq:
                counts = xp.bincount(flat, minlength=w.shape[0])
                scale = scale / counts[flat].astype(w.dtype)
            if padding_idx is not None:
                scale = scale * (flat != padding_idx)
            scale = scale.reshape(idx.shape + (1,))
        ctx.save_for_backward(idx, scale)
        return w[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        idx, scale = ctx.saved
        if scale is not None and not _graphing(ctx) and (fast := _kernels.scatter_rows(
                ctx.num, idx, grad.reshape(-1, grad.shape[-1]), scale.reshape(-1))) is not None:
            return fast, None, None, None  # the eager kernel: grad * scale scattered, one pass
        if scale is not None:
            grad = grad * scale
        return ctx.call(EmbeddingBackward, grad, idx, ctx.num), None, None, None


class EmbeddingBagSum(Op):
    """out[b] = sum (or mean) of weight[pos[k]] over the entries k with bag[k] == b (``bag``
    sorted; an empty bag gives 0)
    grad_weight[v] = sum over the entries k with pos[k] == v of grad[bag[k]] (/ its bag's size)"""
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, pos: Any, bag: Any, nbags: int, mean: bool) -> Any:
        out = np.zeros((nbags, w.shape[1]), w.dtype)
        _add_rows(out, bag, w, take=pos)  # (bag is sorted: the sort keeps it, blocks of rows)
        scale = None
        if mean:
            counts = np.bincount(bag, minlength=nbags)
            scale = (1 / np.maximum(counts, 1)).reshape(-1, 1).astype(w.dtype)
            out *= scale
        ctx.num = w.shape[0]
        ctx.save_for_backward(pos, bag, scale)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        pos, bag, scale = ctx.saved
        if _graphing(ctx):
            g = grad * scale if scale is not None else grad
            rows = ctx.call(EmbeddingLookup, g, bag)
            return ctx.call(EmbeddingBackward, rows, pos, ctx.num), None, None, None, None
        g = grad * scale if scale is not None else grad
        if (fast := _kernels.scatter_rows(ctx.num, pos, g, take=bag)) is not None:
            return fast, None, None, None, None  # the eager kernel: the same sums, one pass
        acc = np.float32 if g.dtype.itemsize == 2 else g.dtype
        gw = np.zeros((ctx.num, g.shape[1]), acc)
        _add_rows(gw, pos, g, take=bag)
        return gw.astype(g.dtype, copy=False), None, None, None, None


class EmbeddingBagMax(Op):
    """out[b, j] = the largest weight[pos[k], j] over the entries k of bag b (``bag`` sorted),
    as PyTorch's running max: the first entry on ties, a NaN first entry kept, later NaNs passed
    over; an empty bag gives 0. Saves max_indices (bags, dim): the weight row of each maximum.
    grad_weight[max_indices[b, j], j] += grad[b, j] (empty bags add nothing)"""
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx: Any, w: Any, pos: Any, bag: Any, nbags: int) -> Any:
        d = w.shape[1]
        out = np.zeros((nbags, d), w.dtype)
        arg = np.full((nbags, d), -1, np.int64)  # -1: an empty bag's (no gradient)
        n = pos.shape[0]
        length = n // nbags if nbags else 0
        if length and length * nbags == n and length * d * 8 <= _MAX_BLOCK and (
                bag.reshape(nbags, length) == np.arange(nbags)[:, None]).all():
            # bags of one length (a 2-D input): a running max over their positions, as PyTorch's
            pos2 = pos.reshape(nbags, length)
            step = max(1, _MAX_BLOCK // (length * d))
            for a in range(0, nbags, step):
                _bag_max_even(w, pos2[a:a + step], out[a:a + step], arg[a:a + step])
        else:
            step = max(1, _MAX_BLOCK // max(1, d))
            for a in range(0, n, step):
                _bag_max_block(w, pos[a:a + step], bag[a:a + step],
                               a > 0 and bag[a - 1] == bag[a], out, arg)
        ctx.num = w.shape[0]
        ctx.empty = bag.shape[0] == 0 or int(np.count_nonzero(bag[1:] != bag[:-1])) + 1 < nbags
        ctx.save_for_backward(arg)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (arg,) = ctx.saved
        return ctx.call(_BagMaxGrad, grad, arg, ctx.num, ctx.empty), None, None, None


class _BagMaxGrad(Op):
    """out = the (num, dim) weight gradient: out[arg[b, j], j] += grad[b, j] where arg >= 0
    grad_grad[b, j] = grad_out[arg[b, j], j] (0 where arg < 0)"""
    node_name = "EmbeddingBagBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, grad: Any, arg: Any, num: int, empty: bool) -> Any:
        ctx.save_for_backward(arg)
        d = grad.shape[1]
        acc = np.float32 if grad.dtype.itemsize == 2 else grad.dtype
        out = np.zeros((num, d), acc)
        flat = out.reshape(-1)
        cols = np.arange(d, dtype=np.int64)
        step = max(1, _MAX_BLOCK // max(1, d))
        for a in range(0, arg.shape[0], step):
            pos = (arg[a:a + step] * d + cols).reshape(-1)
            g = grad[a:a + step].reshape(-1)
            if empty:
                keep = pos >= 0
                pos, g = pos[keep], g[keep]
            np.add.at(flat, pos, g.astype(acc, copy=False))
        return out.astype(grad.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (arg,) = ctx.saved
        return ctx.call(_BagMaxPick, grad, arg), None, None, None


class _BagMaxPick(Op):
    """out[b, j] = g[arg[b, j], j] (0 where arg < 0)
    grad_g = the scatter-add of grad at (arg[b, j], j) (``_BagMaxGrad``)"""
    node_name = "EmbeddingBagBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, arg: Any) -> Any:
        ctx.save_for_backward(arg)
        ctx.num = g.shape[0]
        out = np.take_along_axis(g, np.maximum(arg, 0), axis=0)
        return np.where(arg >= 0, out, 0).astype(g.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (arg,) = ctx.saved
        return ctx.call(_BagMaxGrad, grad, arg, ctx.num, True), None


class _BagMax(Op):
    """out[b] = max over the rows of bag b (rows (B, L, D), mask (B, L): valid positions; an
    empty bag gives 0)          grad_rows = grad at each bag's first argmax, 0 elsewhere"""
    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx: Any, rows: Any, mask: Any) -> Any:
        xp = ctx.xp
        filled = xp.where(mask[..., None], rows, -xp.inf)
        arg = filled.argmax(axis=1)  # (B, D)
        out = xp.take_along_axis(rows, arg[:, None, :], axis=1)[:, 0, :]
        empty = ~mask.any(axis=1)
        ctx.save_for_backward(xp.where(empty[:, None], -1, arg))  # empty bags: no gradient
        ctx.shape = rows.shape
        return xp.where(empty[:, None], 0, out).astype(rows.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (arg,) = ctx.saved
        xp = ctx.xp
        b, length, d = ctx.shape
        pos = xp.arange(length).reshape(1, length, 1)
        onehot = pos == arg.reshape(b, 1, d)
        return xp.where(onehot, grad.reshape(b, 1, d), 0), None


def _check_rows(idx: Any, n: int) -> None:
    """embedding's bounds check: every index in [0, n)."""
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(
                f"index out of range in self (embedding: index {bad} with num_embeddings={n}; "
                f"valid indices are 0..{n - 1})"
            )


def _embedding_renorm(weight: TensorBase, idx: Any, max_norm: float, norm_type: float) -> None:
    xp = _backend.xp_of(weight._data)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    sel = w[rows]
    if norm_type == math.inf:
        norms = xp.abs(sel).max(axis=1)
    else:
        norms = (xp.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    with grad_mode.no_grad():
        w[rows] = sel * scale[:, None]
    weight._bump_version()


_MAX_BLOCK = 1 << 18  # elements per block of looked-up rows in embedding_bag's max


def _bag_max_block(w: Any, pos: Any, bag: Any, goes_on: bool, out: Any, arg: Any) -> None:
    """Fold the entries ``pos`` of sorted ``bag`` into the running maxima ``out`` and their
    weight rows ``arg``; ``goes_on``: the first bag here began in an earlier block."""
    rows = w[pos]
    n = rows.shape[0]
    s = _group_starts(np, bag)  # one segment per bag
    ids = bag[s]
    with np.errstate(invalid="ignore"):
        m = np.fmax.reduceat(rows, s, axis=0)  # NaNs passed over (NaN only if all are)
        hit = rows == np.repeat(m, np.diff(np.append(s, n)), axis=0)
    at = np.arange(n, dtype=np.int32)[:, None]
    k = np.minimum.reduceat(np.where(hit, at, np.int32(n - 1)), s, axis=0)
    first = rows[s]  # a bag's first entry is its maximum when NaN (PyTorch's running max)
    nan0 = np.isnan(first)
    if goes_on:
        nan0[0] = False
    if nan0.any():
        m = np.where(nan0, first, m)
        k = np.where(nan0, s[:, None], k)
    rowid = pos[k]
    if goes_on:  # the first bag's maximum so far: replaced only by a strictly larger value
        b = ids[0]
        with np.errstate(invalid="ignore"):
            more = m[0] > out[b]
        out[b] = np.where(more, m[0], out[b])
        arg[b] = np.where(more, rowid[0], arg[b])
        ids, m, rowid = ids[1:], m[1:], rowid[1:]
    out[ids] = m
    arg[ids] = rowid


def _bag_max_even(w: Any, pos: Any, out: Any, arg: Any) -> None:
    """The maxima ``out`` and their weight rows ``arg`` of the bags ``pos`` (bags, length): a
    later entry replaces the maximum so far only when strictly larger (NaNs after the first
    entry passed over), as PyTorch's running max."""
    rows = w[pos]  # (bags, length, dim)
    np.copyto(out, rows[:, 0])
    np.copyto(arg, pos[:, :1])
    for j in range(1, rows.shape[1]):
        r = rows[:, j]
        more = r > out
        np.copyto(out, r, where=more)
        np.copyto(arg, pos[:, j:j + 1], where=more)
