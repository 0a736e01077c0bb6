"""Joining and splitting: cat/concat/concatenate, stack, hstack/vstack/row_stack/dstack/
column_stack, atleast_1d/2d/3d, split, tensor_split, hsplit/vsplit/dsplit, chunk, unbind (the
joining part of torch's "Indexing, Slicing, Joining, Mutating Ops"); repeating: repeat, tile,
repeat_interleave; reordering: flip, fliplr, flipud, roll, rot90.

Their neighbours: the views they are built from (narrow/select's ``_Sub`` and ``_Embed``,
reshape) and the shape argument helpers in ``shape.py``; ``x[key]`` in ``indexing.py``.

cat and stack promote dtypes across their inputs and return C-contiguous tensors, as PyTorch's;
split, chunk and unbind return views of their input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd import function as _function
from ..autograd.function import Op
from . import _args, _out
from . import casting as _cast
from .shape import (
    _dims_arg,
    _Embed,
    _int,
    _lst,
    _shape_arg,
    _Sub,
    _wrap,
    reshape,
)

__all__ = [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
    "row_stack", "atleast_1d", "atleast_2d", "atleast_3d", "split", "tensor_split", "hsplit",
    "vsplit", "dsplit", "chunk", "unbind", "repeat", "repeat_interleave", "tile", "flip", "fliplr",
    "flipud", "roll", "rot90",
]


# repeat_interleave's overloads, as PyTorch's parser binds them (_args.overload)
_REPEAT_INTERLEAVE_FORMS = (("repeats",), ("input", "repeats"), ("input", "repeats", "dim"))


# ---------------------------------------------------------------------------------------------
# joining


def cat(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    """Concatenate tensors along an existing dim (dtypes promoted; empty 1-D tensors skipped)."""
    ts = _tensor_list(tensors, "cat")
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t._data.ndim == 0:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated; use stack(), "
                "or unsqueeze it first (t.reshape(1))"
            )
    skip = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in ts]
    used = [t for t, s in zip(ts, skip) if not s]
    ref = used[0] if used else ts[0]
    nd = ref._data.ndim
    d = _wrap(dim, nd)
    shapes = [_lst(t._data.shape) for t in ts]
    for i, t in enumerate(ts):
        if skip[i] and used:
            continue
        if t._data.ndim != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {t._data.ndim} "
                f"(torch.cat of shapes {shapes})"
            )
        for a in range(nd):
            if a != d and t._data.shape[a] != ref._data.shape[a]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[a]} but got size {t._data.shape[a]} for tensor number {i} "
                    f"in the list (torch.cat of shapes {shapes} along dim {d})."
                )
    ts = _promote_all(ts, "cat")
    res = Cat.apply(*ts, d)
    return res if out is None else _out.write(out, res, "cat")


def stack(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    """Stack equally shaped tensors along a new dim ``dim``."""
    ts = _tensor_list(tensors, "stack")
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != s0:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {_lst(s0)} at entry 0 and "
                f"{_lst(t._data.shape)} at entry {i}"
            )
    nd = len(s0) + 1
    d = _int(dim, "dim")
    if not -nd <= d < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
        )
    ts = _promote_all(ts, "stack")
    res = Stack.apply(*ts, d % nd)
    return res if out is None else _out.write(out, res, "stack")


def atleast_1d(*tensors: Any) -> Any:
    """Tensors with at least 1 dim (0-d become shape (1,))."""
    ts = _seq(tensors)
    res = tuple(reshape(t, (1,)) if t._data.ndim == 0 else t for t in ts)
    return res[0] if len(tensors) == 1 and isinstance(tensors[0], TensorBase) else res


def atleast_2d(*tensors: Any) -> Any:
    """Tensors with at least 2 dims (0-d -> (1, 1), (n,) -> (1, n))."""
    ts = _seq(tensors)
    res = tuple(reshape(t, (1,) * (2 - t._data.ndim) + t._data.shape) if t._data.ndim < 2 else t
                for t in ts)
    return res[0] if len(tensors) == 1 and isinstance(tensors[0], TensorBase) else res


def atleast_3d(*tensors: Any) -> Any:
    """Tensors with at least 3 dims (0-d -> (1,1,1), (n,) -> (1,n,1), (m,n) -> (m,n,1))."""
    ts = _seq(tensors)
    res = []
    for t in ts:
        s = t._data.shape
        if len(s) == 0:
            res.append(reshape(t, (1, 1, 1)))
        elif len(s) == 1:
            res.append(reshape(t, (1, s[0], 1)))
        elif len(s) == 2:
            res.append(reshape(t, s + (1,)))
        else:
            res.append(t)
    out = tuple(res)
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], TensorBase) else out


def hstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate column-wise (dim 0 for 1-D tensors, else dim 1)."""
    ts = list(atleast_1d(tuple(_tensor_list(tensors, "hstack"))))
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1, out=out)


def vstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate row-wise after ``atleast_2d``."""
    ts = list(atleast_2d(tuple(_tensor_list(tensors, "vstack"))))
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(ts, 0, out=out)


def dstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate depth-wise (dim 2) after ``atleast_3d``."""
    ts = list(atleast_3d(tuple(_tensor_list(tensors, "dstack"))))
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(ts, 2, out=out)


def column_stack(tensors: Any, *, out: Any = None) -> Any:
    """Stack 1-D tensors as columns (0-d/1-d become (n, 1)), then concatenate along dim 1."""
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return cat(cols, 1, out=out)


class Cat(Op):
    """out = concatenate(xs, dim)          grad_xs[i] = grad[..., offset_i : offset_i + n_i, ...]"""

    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        xs, dim = args[:-1], args[-1]
        used = [x for x in xs if not (x.ndim == 1 and x.shape[0] == 0)] or list(xs[:1])
        ctx.dim = dim
        ctx.sizes = [None if (x.ndim == 1 and x.shape[0] == 0 and len(used) and x is not used[0])
                     else x.shape[dim] for x in xs]
        if len(used) > 1:  # (C order, as PyTorch's; NumPy keeps the inputs' order)
            return _backend.c_contiguous(ctx.xp.concatenate(used, axis=dim))
        return used[0].copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        d = ctx.dim
        out = []
        off = 0
        for k, n in enumerate(ctx.sizes):
            if not ctx.needs_input_grad[k]:
                if n is not None:
                    off += n
                out.append(None)
                continue
            if n is None:  # a skipped empty 1-D tensor: its gradient is empty too
                out.append(ctx.call(_Sub, grad.reshape(-1), (slice(0, 0),)))
                continue
            out.append(ctx.call(_Sub, grad, (slice(None),) * d + (slice(off, off + n),)))
            off += n
        return (*out, None)


class Stack(Op):
    """out = stack(xs, dim)          grad_xs[i] = grad.select(dim, i)"""

    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        xs, dim = args[:-1], args[-1]
        ctx.dim = dim
        ctx.n = len(xs)
        return _backend.c_contiguous(ctx.xp.stack(xs, axis=dim))  # (C order, as PyTorch's)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        pre = (slice(None),) * ctx.dim
        out = [ctx.call(_Sub, grad, pre + (i, Ellipsis)) if ctx.needs_input_grad[i] else None
               for i in range(ctx.n)]
        return (*out, None)


def _seq(tensors: tuple) -> tuple:
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(tensors[0])
    return tensors


def _promote_all(tensors: list, name: str) -> list:
    """Cast every tensor to the common dtype (``torch.cat``/``stack`` promote across inputs)."""
    dts = {t._data.dtype for t in tensors}
    if len(dts) == 1:
        return tensors
    rt = None
    for t in tensors:
        d = t.dtype
        rt = d if rt is None else _dtype.promote_types(rt, d)
    return [_cast.cast(t, rt) for t in tensors]


def _tensor_list(tensors: Any, name: str) -> list:
    if isinstance(tensors, TensorBase):
        raise TypeError(
            f"{name}(): argument 'tensors' must be a sequence of Tensors, not a Tensor; "
            f"wrap it in a list: {name}([t, ...])"
        )
    out = list(tensors)
    for i, t in enumerate(out):
        if not isinstance(t, TensorBase):
            raise TypeError(
                f"{name}(): expected Tensor as element {i} in argument 0, but got "
                f"{type(t).__name__}"
            )
    return out


concat = cat


concatenate = cat


row_stack = vstack


# ---------------------------------------------------------------------------------------------
# splitting (multi-output views)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Split into chunks of ``split_size`` (the last may be smaller) or of the listed sizes."""
    x = tensor
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor (got a 0-d tensor)")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    s = split_size_or_sections
    if isinstance(s, (tuple, list)) or (isinstance(s, TensorBase) and s._data.ndim == 1):
        sizes = list(_shape_arg((s,)))
        if any(v < 0 for v in sizes) or sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
        return Split.apply(x, d, _split_bounds(sizes))
    s = _int(s, "split_size")
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    k = max((n + s - 1) // s, 1) if s else 1
    sizes = [s] * (k - 1) + [n - s * (k - 1)]
    return SplitEqual.apply(x, d, _split_bounds(sizes))


def split_method(self: Any, split_size: Any, dim: int = 0) -> tuple:
    """``Tensor.split(split_size, dim=0)``: ``split`` under the method's parameter name
    (``torch.split`` calls it ``split_size_or_sections``)."""
    return split(self, split_size, dim)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` pieces of ``ceil(n / chunks)`` (fewer when they run out)."""
    x = input
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        return SplitEqual.apply(x, d, ((0, 0),) * chunks)
    return split(x, size, d)


def tensor_split(input: Any, sections: Any = None, dim: int = 0, *, indices: Any = None,
                 tensor_indices_or_sections: Any = None) -> tuple:
    """Split into ``sections`` nearly equal parts, or at the given ``indices``.

    PyTorch's three overloads share the second positional slot (an int, a list of indices or a
    tensor); by keyword they are ``sections=``, ``indices=`` and ``tensor_indices_or_sections=``.
    """
    ios = _one_of("tensor_split", sections=sections, indices=indices,
                  tensor_indices_or_sections=tensor_indices_or_sections)
    x = input
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    if isinstance(ios, TensorBase):
        if ios._data.dtype.kind not in "iu":
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to have an integral dtype, "
                f"but got {ios.dtype}"
            )
        if ios._data.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims"
            )
        if _function.tracer is not None:  # the split points come from data: compile stays
            _function.tracer.data_read("tensor_split")  # eager (a replay would keep them)
        ios = int(ios._data) if ios._data.ndim == 0 else [int(v) for v in ios._data.tolist()]
    if isinstance(ios, (tuple, list)):
        idx = [_int(v, "indices") for v in ios]
        bounds = []
        prev = 0
        for v in idx:
            v = min(max(v + n if v < 0 else v, 0), n)
            bounds.append((prev, max(v, prev)))
            prev = v
        bounds.append((prev, n))
        return Split.apply(x, d, tuple(bounds))
    k = _int(ios, "sections")
    if k <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {k}")
    q, r = divmod(n, k)
    return Split.apply(x, d, _split_bounds([q + 1] * r + [q] * (k - r)))


def hsplit(input: Any, sections: Any = None, *, indices: Any = None) -> tuple:
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); sections must divide evenly."""
    d = 0 if input._data.ndim == 1 else 1
    return _dir_split(input, _one_of("hsplit", sections=sections, indices=indices), d, "hsplit", 1)


def vsplit(input: Any, sections: Any = None, *, indices: Any = None) -> tuple:
    """``tensor_split`` along dim 0 of a tensor with >= 2 dims."""
    return _dir_split(input, _one_of("vsplit", sections=sections, indices=indices), 0, "vsplit", 2)


def dsplit(input: Any, sections: Any = None, *, indices: Any = None) -> tuple:
    """``tensor_split`` along dim 2 of a tensor with >= 3 dims."""
    return _dir_split(input, _one_of("dsplit", sections=sections, indices=indices), 2, "dsplit", 3)


def unbind(input: Any, dim: int = 0) -> tuple:
    """Tuple of all slices along ``dim`` (that dim removed)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(input, _wrap(dim, nd))


class Split(Op):
    """outs[k] = x[..., a_k:b_k, ...] (views)
    grad_x = concatenate(grads) when the pieces tile x, else the sum of each embedded in zeros"""

    node_name = "SplitWithSizesBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, bounds: tuple) -> Any:
        ctx.dim, ctx.bounds, ctx.shape = dim, bounds, x.shape
        pre = (slice(None),) * dim
        return tuple(x[pre + (slice(a, b),)] for a, b in bounds)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        d, bounds = ctx.dim, ctx.bounds
        tiles = bounds[0][0] == 0 and bounds[-1][1] == ctx.shape[d] and all(
            bounds[k][1] == bounds[k + 1][0] for k in range(len(bounds) - 1))
        if tiles:
            if len(grads) == 1:
                return grads[0], None, None
            whole = _tiled_buffer(grads, ctx.shape, d, bounds)
            if whole is not None:
                return whole, None, None
            return ctx.xp.concatenate(list(grads), axis=d), None, None
        pre = (slice(None),) * d
        total = None
        for g, (a, b) in zip(grads, bounds):
            if g is None or a >= b:
                continue
            e = ctx.call(_Embed, g, ctx.shape, pre + (slice(a, b),))
            total = e if total is None else total + e
        if total is None:
            total = ctx.xp.zeros(ctx.shape, grads[0].dtype)
        return total, None, None


class SplitEqual(Split):
    """outs[k] = x[..., k*s:(k+1)*s, ...] (views)          grad_x = concatenate(grads)"""

    node_name = "SplitBackward0"


class Unbind(Op):
    """outs[i] = x.select(dim, i) (views)          grad_x = stack(grads, dim)"""

    node_name = "UnbindBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int) -> Any:
        ctx.dim = dim
        pre = (slice(None),) * dim
        return tuple(x[pre + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return ctx.xp.stack(list(grads), axis=ctx.dim), None


def _tiled_buffer(grads: Any, shape: tuple, d: int, bounds: tuple) -> Any:
    """The one C-ordered array of ``shape`` whose pieces along ``d`` at ``bounds`` the grads
    already are (views of it, as the attention kernels' gradients of a head split are), viewed
    in that shape; None otherwise (then they are concatenated: the same values)."""
    base = grads[0].base if type(grads[0]) is np.ndarray else None
    if (base is None or type(base) is not np.ndarray or not base.flags.c_contiguous
            or bounds[0][0] != 0 or bounds[-1][1] != shape[d]
            or any(bounds[k][1] != bounds[k + 1][0] for k in range(len(bounds) - 1))
            or base.size != math.prod(shape) or base.dtype != grads[0].dtype):
        return None
    whole = base.reshape(shape)
    at = whole.__array_interface__["data"][0]
    step = whole.strides[d]
    for g, (a, b) in zip(grads, bounds):
        if (type(g) is not np.ndarray or g.base is not base or g.strides != whole.strides
                or g.shape != shape[:d] + (b - a,) + shape[d + 1:]
                or g.__array_interface__["data"][0] != at + a * step):
            return None
    return whole


def _one_of(name: str, **given: Any) -> Any:
    """The one argument of PyTorch's overloads that was given (they share a positional slot)."""
    got = [(k, v) for k, v in given.items() if v is not None]
    if len(got) != 1:
        names = ", ".join(given)
        raise TypeError(f"{name}() expects exactly one of {names} (positionally or by keyword), "
                        f"got {len(got)}")
    return got[0][1]


def _split_bounds(sizes: list[int]) -> tuple:
    b = []
    off = 0
    for s in sizes:
        b.append((off, off + s))
        off += s
    return tuple(b)


def _dir_split(x: Any, ios: Any, d: int, name: str, need: int) -> tuple:
    if x._data.ndim < need:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor "
            f"with {x._data.ndim} dimensions!"
        )
    if isinstance(ios, int) or (isinstance(ios, TensorBase) and ios._data.ndim == 0):
        k = _int(ios, "sections")
        n = x._data.shape[d]
        if k == 0 or n % k:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {d}, but the size of the "
                f"dimension {n} is not divisible by the split_size {k}!"
            )
    return tensor_split(x, ios, d)


# ---------------------------------------------------------------------------------------------
# reordering elements


def flip(input: Any, dims: Any) -> Any:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch; one sequence:
    ``Tensor.flip`` also takes varargs)."""
    return flip_method(input, dims=_args.one_sequence("flip", "dims", dims))


def flip_method(input: Any, *order: Any, dims: Any = None) -> Any:
    """``Tensor.flip``: the dims as varargs, one sequence, or ``dims=``."""
    if dims is not None and order:
        raise TypeError("flip() got the dims both positionally and as dims=")
    ds = _dims_arg(order if dims is None else (dims,))
    nd = input._data.ndim
    w = tuple(_wrap(d, nd) for d in ds)
    if len(set(w)) != len(w):
        raise RuntimeError(
            f"dims has duplicates, original flip dims size={len(w)}, but unique flip dims "
            f"size={len(set(w))}"
        )
    if nd == 0:
        w = ()
    return Flip.apply(input, w)


def fliplr(input: Any) -> Any:
    """Flip dim 1 (left/right)."""
    if input._data.ndim < 2:
        raise RuntimeError(f"Input must be >= 2-d (got shape {_lst(input._data.shape)}).")
    return flip(input, (1,))


def flipud(input: Any) -> Any:
    """Flip dim 0 (up/down)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d (got a 0-d tensor).")
    return flip(input, (0,))


def roll(input: Any, shifts: Any, dims: Any = ()) -> Any:
    """Shift elements circularly along ``dims`` (the flattened tensor when ``dims`` is None)."""
    sh = (_int(shifts, "shifts"),) if not isinstance(shifts, (tuple, list)) else tuple(
        _int(s, "shifts") for s in shifts)
    if dims is None or (isinstance(dims, (tuple, list)) and not dims):
        if len(sh) != 1:
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(sh)}, dims:0 (with dims=None, "
                "give one shift for the flattened tensor)"
            )
        return Roll.apply(input, sh[0], None)
    ds = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if len(sh) != len(ds):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
    nd = input._data.ndim
    w = tuple(_wrap(d, nd) for d in ds)
    if nd == 0:
        return Roll.apply(input, sh[0], None)
    return Roll.apply(input, sh, w)


def rot90(input: Any, k: int = 1, dims: Any = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from dims[0] towards dims[1])."""
    dims = tuple(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _wrap(dims[0], nd), _wrap(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k = _int(k, "k") % 4
    return Rot90.apply(input, k, d0, d1)


class Flip(Op):
    """out = x reversed along dims          grad_x = grad reversed along the same dims"""

    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, dims: tuple) -> Any:
        ctx.dims = dims
        if not dims:
            return _cast._layout_copy(x)
        view = ctx.xp.flip(x, axis=dims)
        if x.flags.c_contiguous and (out := _kernels.dense_copy(view)) is not None:
            return out  # (the last axis reversed: rows copied backwards, C order as x's)
        return _cast._layout_copy(view)  # (x's layout)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Flip, grad, ctx.dims), None


class Roll(Op):
    """out = x rolled by shifts along dims          grad_x = grad rolled by -shifts"""

    node_name = "RollBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, shifts: Any, dims: Any) -> Any:
        ctx.shifts, ctx.dims = shifts, dims
        return _backend.c_contiguous(ctx.xp.roll(x, shifts, axis=dims))  # (C order, as PyTorch's)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        neg = -ctx.shifts if isinstance(ctx.shifts, int) else tuple(-s for s in ctx.shifts)
        return ctx.call(Roll, grad, neg, ctx.dims), None, None


class Rot90(Op):
    """out = x rotated k quarter turns in the plane (d0 -> d1), a copy
    grad_x = grad rotated -k quarter turns"""

    @staticmethod
    def forward(ctx: Any, x: Any, k: int, d0: int, d1: int) -> Any:
        ctx.k, ctx.d0, ctx.d1 = k, d0, d1
        return ctx.xp.rot90(x, k, axes=(d0, d1)).copy()  # (a C-order copy, even for k = 0)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Rot90, grad, (-ctx.k) % 4, ctx.d0, ctx.d1), None, None, None


# ---------------------------------------------------------------------------------------------
# repeating


def repeat(input: Any, *sizes: Any, repeats: Any = None) -> Any:
    """Tile ``input`` ``sizes[i]`` times along each dim (new leading dims when more sizes).

    The sizes come as varargs (``x.repeat(2, 3)``), one sequence, or ``repeats=``.
    """
    if repeats is not None:
        if sizes:
            raise TypeError("repeat() got the sizes both positionally and as repeats=")
        sizes = (repeats,)
    reps = _shape_arg(sizes)
    nd = input._data.ndim
    if len(reps) < nd:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            f"tensor (repeat{list(reps)} of a tensor of shape {_lst(input._data.shape)})"
        )
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats {list(reps)}")
    return Repeat.apply(input, reps)


def tile(input: Any, dims: Any) -> Any:
    """``repeat`` with ``dims`` (one sequence: ``torch.tile(x, (2, 3))``) padded by leading ones
    to the tensor's ndim."""
    return tile_method(input, dims=_args.one_sequence("tile", "dims", dims))


def tile_method(input: Any, *reps: Any, dims: Any = None) -> Any:
    """``Tensor.tile``: ``dims`` as one sequence, as varargs (``x.tile(2, 3)``) or ``dims=``."""
    if dims is not None:
        if reps:
            raise TypeError("tile() got the dims both positionally and as dims=")
        reps = (dims,)
    if not reps:
        raise TypeError("tile() missing 1 required positional argument: 'dims'")
    if len(reps) == 1:
        d0 = reps[0]
        reps = _shape_arg((d0,)) if isinstance(d0, (tuple, list)) else (_int(d0, "dims"),)
    else:
        reps = _shape_arg(reps)
    nd = input._data.ndim
    reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


def repeat_interleave(*args: Any, output_size: int | None = None, **kwargs: Any) -> Any:
    """Repeat each element (or slice along ``dim``) ``repeats`` times (int or 1-D tensor):
    ``repeat_interleave(input, repeats, dim=None)``.

    With one tensor (``repeat_interleave(t)`` or ``repeat_interleave(repeats=t)``): the indices
    0..n-1, each repeated ``t[i]`` times, as PyTorch's one-argument overload; the arguments
    bind as PyTorch's overloads (``repeat_interleave(input=t)`` raises TypeError)."""
    for alias, real in (("x", "input"), ("a", "input"), ("x1", "input"), ("axis", "dim")):
        if alias in kwargs:  # NumPy's names, as PyTorch's builtin takes them
            if real in kwargs:
                raise TypeError(f"repeat_interleave() got '{real}' and '{alias}'")
            kwargs[real] = kwargs.pop(alias)
    b = _args.overload("repeat_interleave", args, kwargs, _REPEAT_INTERLEAVE_FORMS,
                       {"dim": None}, ("output_size",), {"input": None, "dim": None})
    input, repeats, dim = b["input"], b["repeats"], b["dim"]
    if input is None:  # repeat_interleave(repeats): 0..n-1 repeated
        input = repeats
        r = input._data
        if r.ndim > 1 or r.dtype.kind not in "iu":
            raise RuntimeError(
                f"repeat_interleave: repeats must be a 0-dim or 1-dim integer tensor, got shape "
                f"{_lst(r.shape)} and dtype {input.dtype}"
            )
        rh = _backend.to_numpy(r).reshape(-1)
        if (rh < 0).any():
            raise RuntimeError("repeats can not be negative")
        idx = np.repeat(np.arange(rh.shape[0], dtype=np.int64), rh)
        return TensorBase._make(_backend.to_device(idx, _backend.device_of(r)))
    x = input
    if dim is None:
        x = reshape(x, (-1,))
        d = 0
    else:
        d = _wrap(dim, x._data.ndim)
        if x._data.ndim == 0:
            x = reshape(x, (1,))
    n = x._data.shape[d]
    if isinstance(repeats, TensorBase) and repeats._data.ndim == 1 and repeats._data.shape[0] != 1:
        if repeats._data.dtype.kind not in "iu":
            raise RuntimeError(f"repeat_interleave: repeats must have an integer dtype, got "
                               f"{repeats.dtype}")
        if _function.tracer is not None:  # the repeats decide the recorded index: compile
            _function.tracer.data_read("repeat_interleave")  # stays eager
        rh = _backend.to_numpy(repeats._data).astype(np.int64)
        if rh.shape[0] != n:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{rh.shape[0]} and input.size({d}) = {n}"
            )
        if (rh < 0).any():
            raise RuntimeError("repeats can not be negative")
        dev = _backend.device_of(x._data)
        idx = np.repeat(np.arange(n, dtype=np.int64), rh)
        return RepeatInterleaveT.apply(x, _backend.to_device(rh, dev), d,
                                       _backend.to_device(idx, dev))
    if isinstance(repeats, TensorBase) and repeats._data.ndim > 1:
        raise RuntimeError(
            f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape "
            f"{_lst(repeats._data.shape)}"
        )
    r = _int(repeats, "repeats")
    if r < 0:
        raise RuntimeError(f"repeats can not be negative (got {r})")
    op = RepeatInterleaveT if isinstance(repeats, TensorBase) else RepeatInterleave
    return op.apply(x, r, d)


class Repeat(Op):
    """out = x tiled reps times per dim
    grad_x = grad reshaped to (r0, s0, r1, s1, ...) and summed over the r axes"""

    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, reps: tuple) -> Any:
        ctx.shape = x.shape
        ctx.reps = reps
        out = ctx.xp.tile(x, reps)
        # PyTorch's repeat always makes a fresh C-ordered tensor; NumPy's tile with all reps 1
        # copies in the input's own layout (a transposed input stays transposed, so .view fails)
        return out if out.flags.c_contiguous else out.copy(order="C")

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        reps = ctx.reps
        padded = (1,) * (len(reps) - len(ctx.shape)) + tuple(ctx.shape)
        split = []
        for r, s in zip(reps, padded):
            split += [r, s]
        g = grad.reshape(tuple(split)).sum(axis=tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(ctx.shape), None


class RepeatInterleave(Op):
    """out = each slice of x along dim repeated r (or r[i]) times
    grad_x = grad summed over each block of repeats"""

    node_name = "ViewBackward0"  # PyTorch repeats a number of times by expand + view

    @staticmethod
    def forward(ctx: Any, x: Any, repeats: Any, dim: int, idx: Any = None) -> Any:
        ctx.shape, ctx.repeats, ctx.dim, ctx.idx = x.shape, repeats, dim, idx
        if idx is not None:  # per-slice repeats: gather with the precomputed index
            return ctx.xp.take(x, idx, axis=dim)
        return ctx.xp.repeat(x, repeats, axis=dim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        r, d, shp = ctx.repeats, ctx.dim, ctx.shape
        if ctx.idx is None:
            g = grad.reshape(tuple(shp[:d]) + (shp[d], r) + tuple(shp[d + 1 :]))
            return g.sum(axis=d + 1), None, None, None
        return ctx.call(_SegmentSum, grad, r, d, ctx.idx), None, None, None


class RepeatInterleaveT(RepeatInterleave):
    """repeat_interleave with tensor repeats (same rule; PyTorch index_selects)."""

    node_name = "IndexSelectBackward0"


class _SegmentSum(Op):
    """out[i] = sum of grad's block i (block sizes r) along dim          grad_g = grad repeated r"""

    node_name = "RepeatInterleaveBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, r: Any, dim: int, idx: Any) -> Any:
        xp = ctx.xp
        ctx.r, ctx.dim, ctx.idx = r, dim, idx
        shape = g.shape[:dim] + (r.shape[0],) + g.shape[dim + 1 :]
        out = xp.zeros(shape, g.dtype)
        if g.shape[dim] == 0 or g.size == 0:
            return out
        nz = r > 0
        starts = xp.cumsum(r) - r
        out[(slice(None),) * dim + (nz,)] = xp.add.reduceat(g, starts[nz], axis=dim)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(RepeatInterleave, grad, ctx.r, ctx.dim, ctx.idx), None, None, None


repeat_interleave.__signature__ = _args.shown_signature(  # type: ignore[attr-defined]
    repeat_interleave, {"input": None, "repeats": None, "dim": None})
