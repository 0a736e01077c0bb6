"""Indexing: ``x[key]`` and ``x[key] = value`` (getitem, setitem), index_select,
index_add/copy/fill, index_put, take/put, masked_fill/select/scatter, nonzero/argwhere and
fill_diagonal_ (the indexing part of torch's "Indexing, Slicing, Joining, Mutating Ops").

Their neighbours: gather/scatter along a dim and take_along_dim in ``indexing_scatter.py``; sort,
topk, unique and searchsorted in ``sorting.py``; the key parsing and index checks all three share
in ``_index.py``; narrow/select/as_strided views in ``shape.py``.

Two differentiable pairs carry almost everything here, each op's backward being the other:

- ``Index`` (``x[key]``, a gather) and ``IndexPutAdd`` (scatter-add into zeros);
- ``IndexPut`` / ``IndexZero`` for writes (``x[key] = v``): grad_x is grad with zeros written at
  ``key``, grad_v is ``grad[key]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype, _threads
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase, wrap_dim
from ..autograd import function as _function
from ..autograd import grad_mode
from ..autograd.function import Op, link_view
from . import _args, _out
from . import _promote as _prom
from . import casting as _cast
from . import pointwise as _pw
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._index import (
    _ELL,
    _INT,
    _NONE,
    _SLICE,
    _accumulate,
    _as_index_tensor,
    _atleast_1d,
    _broadcast_shapes,
    _check_bounds,
    _check_nonneg_bounds,
    _dim_key,
    _Key,
    _parse_key,
    _reshape,
    _type_name,
    keeps_index,
    track_index_versions,
)
from .creation import full
from .shape import Expand

# getitem/setitem (Tensor.__getitem__/__setitem__) and fill_diagonal (Tensor.fill_diagonal_) are
# Tensor methods only: no torch function, so not in the flat op table.
__all__ = [
    "index_select", "index_add", "index_copy", "index_fill", "index_put", "take", "put",
    "masked_fill", "masked_select", "masked_scatter", "nonzero", "argwhere",
]


# ---------------------------------------------------------------------------------------------
# x[key] and its adjoint


def getitem(x: Any, key: Any) -> Any:
    """``x[key]``: integers, slices (positive steps), None, Ellipsis, masks, index tensors.

    Basic keys (integers, slices, None, Ellipsis) return a view; any tensor, list or mask
    makes an advanced index (a copy), placed by NumPy's rules after integers are applied."""
    k = _parse_key(x._data, key)
    if not (grad_mode.state.enabled and x.requires_grad) and _function.tracer is None:
        # nothing to record: skip apply (under compile's trace the op is recorded all the same,
        # so a view of a buffer, such as a causal mask's ``bias[:, :, :T, :T]``, replays)
        out = TensorBase._make(k.gather(x._data))
        return out if k.vkey is not None else link_view(x, out)
    if k.vkey is not None:
        return track_index_versions(Index.apply(x, k), key)
    if type(key) is slice:  # a lone slice is always a slice node in PyTorch, even x[:]
        return IndexView.apply(x, k)
    last = k.last
    if last == _INT:
        return IndexSelectView.apply(x, k)
    if last == _NONE:
        return IndexUnsqueezeView.apply(x, k)
    return (IndexView if last == _SLICE else IndexAliasView).apply(x, k)


def setitem(x: Any, key: Any, value: Any) -> Any:
    """The new value of x after ``x[key] = value`` (``Tensor.__setitem__`` makes it in place).

    ``value`` (a number or tensor) is broadcast to ``x[key]``'s shape and cast to x's dtype.
    Differentiable w.r.t. x (zero gradient where written) and value (``grad[key]``)."""
    if key is False:  # PyTorch writes nothing and checks nothing for a lone False key
        value = False if x._data.dtype == np.bool_ else 0
    if not isinstance(value, TensorBase):
        value = _check_scalar_value(x, value)
    k = _parse_key(x._data, key)
    if (k.vkey is not None and isinstance(value, TensorBase) and value._data.dtype != x._data.dtype
            and not _casting_key(key, k, value)):
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{_dtype.legacy_name(x.dtype)} for the destination and "
            f"{_dtype.legacy_name(value.dtype)} for the source. Convert "
            "the value first: x[key] = value.to(x.dtype)"
        )
    if k.vkey is None and isinstance(value, TensorBase):
        # a basic key writes by copying into a view, which PyTorch does across devices too
        dev = _backend.device_of(x._data)
        if _backend.device_of(value._data) != dev:
            value = _cast.to_device(value, dev)
    out = IndexPut.apply(x, _value_for(x, value, k), k)
    return track_index_versions(out, key) if k.vkey is not None else out


class Index(Op):
    """out = x[key]          grad_x = zeros_like(x) with grad added at key (IndexPutAdd)"""

    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, key: _Key) -> Any:
        ctx.key = key
        return key.gather(x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(IndexPutAdd, grad, ctx.key), None


class IndexView(Index):
    """out = x[key] for a basic key (integers, slices, None): a view sharing x's storage.
    grad_x = zeros_like(x) with grad written at key"""

    node_name = "SliceBackward0"
    is_view = True


class IndexSelectView(IndexView):
    """``x[..., i]``: an integer index last (same rule as IndexView)."""

    node_name = "SelectBackward0"


class IndexUnsqueezeView(IndexView):
    """``x[..., None]``: None last (same rule as IndexView)."""

    node_name = "UnsqueezeBackward0"


class IndexAliasView(IndexView):
    """``x[...]``, ``x[:, :]``: every dim kept whole (same rule as IndexView)."""

    node_name = "AliasBackward0"


class IndexSelect(Index):
    """``index_select`` (same rule as Index; the result is contiguous whatever x's layout, as
    PyTorch's)."""

    node_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, key: _Key) -> Any:
        ctx.key = key
        dim, idx, _ = key.adv[0]
        return ctx.xp.take(x, idx, axis=dim)


class MaskedSelect(Index):
    """``masked_select`` (same rule as Index)."""

    node_name = "MaskedSelectBackward0"


class Take(Op):
    """out = x.flatten()[idx] (of idx's shape)
    grad_x = zeros(x.shape) with grad added at idx (repeats add up): one buffer of x's shape,
    which becomes ``.grad`` as it is (not a reshaped view the engine would copy)"""

    node_name = "TakeBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, idx: Any) -> Any:
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return ctx.xp.take(x, idx)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(_TakeAdd, grad, idx, ctx.shape), None


class _TakeAdd(Op):
    """out = zeros(shape) with g added at the flat positions idx (repeats add up, in index
    order, as PyTorch's CPU kernel)          grad_g = grad.flatten()[idx] (``Take``)"""

    node_name = "TakeBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, idx: Any, shape: tuple) -> Any:
        ctx.save_for_backward(idx)
        xp = ctx.xp
        if xp is np and g.dtype.kind in "fc":
            out = np.zeros(shape, g.dtype)
            np.add.at(out.reshape(-1), idx.reshape(-1), g.reshape(-1))
            return out
        size = math.prod(shape)
        pos = idx.reshape(-1)
        pos = xp.where(pos < 0, pos + size, pos)
        return _accumulate(xp, pos, g.reshape(-1), size, g.dtype).reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (idx,) = ctx.saved
        return ctx.call(Take, grad, idx), None, None


class IndexPutAdd(Op):
    """out = zeros(key.shape) with g added at key (repeats add up)          grad_g = grad[key]

    With ``base`` (an array, not differentiated here), the values are added one at a time, in
    index order, onto a copy of it, as PyTorch's kernels do (an ``_Onto`` op then routes the
    base's gradient)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, key: _Key, base: Any = None, opmath: bool = False) -> Any:
        ctx.key = key
        return key.scatter_add(g, ctx.xp, base, opmath)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Index, grad, ctx.key), None, None, None


class IndexPut(Op):
    """out = x with out[key] = value
    grad_x = grad with zeros at key (IndexZero)          grad_value = grad[key]"""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any, key: _Key) -> Any:
        ctx.key = key
        if key.vkey is not None or key.last != _ELL:  # released after one backward, as
            ctx.save_for_backward()  # PyTorch's IndexPutBackward0 and CopySlices; a key that
            # keeps every dim whole writes the tensor itself (PyTorch's fill_/copy_: reusable)
        out = x.copy()
        key.assign(out, value)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        key = ctx.key
        gx = None
        if ctx.needs_input_grad[0]:
            # a key that keeps every dim whole overwrote all of x (PyTorch's fill_/copy_): its
            # gradient is fresh zeros, with no graph under create_graph, as PyTorch's
            whole = key.vkey is None and key.last == _ELL
            gx = ctx.xp.zeros_like(grad) if whole else ctx.call(IndexZero, grad, key)
        gv = ctx.call(Index, grad, key) if ctx.needs_input_grad[1] else None
        return gx, gv, None


class IndexFill(IndexPut):
    """index_fill with a number (same rule as IndexPut)."""


class IndexFillT(IndexPut):
    """index_fill with a 0-d tensor (same rule as IndexPut)."""

    node_name = "IndexFillBackward1"


class IndexCopy(IndexPut):
    """index_copy (same rule as IndexPut)."""


class IndexZero(Op):
    """out = g with zeros at key (a projection)          grad_g = grad with zeros at key"""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, key: _Key) -> Any:
        ctx.key = key
        out = g.copy()
        key.assign(out, 0)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(IndexZero, grad, ctx.key), None


def _expand(x: Any, shape: tuple) -> Any:
    """``x`` broadcast to ``shape`` (``expand``'s op), or ``x`` itself when it has that shape."""
    if tuple(x._data.shape) == tuple(shape):
        return x
    return Expand.apply(x, tuple(shape))


def _value_for(x: Any, value: Any, k: _Key, what: str = "value tensor") -> Any:
    """``value`` ready to be written at ``k`` into x: a Python number, or a tensor of x's
    dtype whose shape broadcasts to the indexed shape (extra leading 1-dims dropped)."""
    if isinstance(value, (bool, int, float, np.generic)):
        return value.item() if isinstance(value, np.generic) else value
    if not isinstance(value, TensorBase):
        value = _cast.as_tensor_arg(value)
        if not isinstance(value, TensorBase):
            return value
    if value._data.dtype != x._data.dtype:
        value = _cast.cast(value, _dtype.from_numpy(x._data.dtype))
    target = k.out_shape()
    vshape = tuple(value._data.shape)
    extra = len(vshape) - len(target)
    if extra > 0:
        if any(s != 1 for s in vshape[:extra]):
            _bad_value_shape(vshape, target, what)
        value = _reshape(value, vshape[extra:])
        vshape = vshape[extra:]
    try:
        ok = tuple(np.broadcast_shapes(vshape, target)) == tuple(target)
    except ValueError:
        ok = False
    if not ok:
        _bad_value_shape(vshape, target, what)
    return value


def _bad_value_shape(vshape: tuple, target: tuple, what: str) -> None:
    raise RuntimeError(
        f"shape mismatch: {what} of shape {list(vshape)} cannot be broadcast to indexing "
        f"result of shape {list(target)}"
    )


def _check_scalar_value(x: Any, value: Any) -> Any:
    """A Python number written by ``x[key] = value``, checked as PyTorch checks it: it must fit
    x's dtype (integers wrap only when negative into an unsigned dtype); lists, arrays, NumPy
    scalars and strings are refused (PyTorch's ``TypeError``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"Overflow when unpacking long long: {value} does not fit 64 bits")
    elif isinstance(value, complex):
        if x._data.dtype.kind == "c":
            return value
        value = _args.real_part_of(value, _dtype.from_numpy(x._data.dtype))
    elif not isinstance(value, float):
        if isinstance(value, TensorBase):
            return value
        raise TypeError(
            f"can't assign a {_type_name(value)} to a tensor with x[key] = value: the value must "
            "be a number or a tensor (wrap it: x[key] = torch.tensor(value))"
        )
    dt = x._data.dtype
    if dt.kind not in "iu":
        return value
    info = np.iinfo(dt)
    if isinstance(value, float):  # (a float must lie in the dtype's range, unsigned included)
        bad = not math.isfinite(value) or value > info.max or value < info.min
        v = 0 if bad else int(value)
    else:
        v = value
        bad = v > info.max or (v < info.min if dt.kind == "i" else False)
    if bad:
        raise RuntimeError(
            f"value {value} cannot be converted to type {_dtype.from_numpy(dt)} without overflow"
        )
    return v % (info.max + 1) if v < 0 and dt.kind == "u" else v


def _casting_key(key: Any, k: _Key, value: Any) -> bool:
    """True for the advanced keys PyTorch writes through with a cast rather than index_put
    (which needs equal dtypes): a lone ``True`` (a copy into x[None]), or a key whose only
    advanced item is one mask of ndim >= 1 (integers, slices, None around it), given a
    one-element value (masked_fill)."""
    if key is True:
        return True
    return value._data.size == 1 and len(k.adv) == 1 and k.adv[0][2]


# ---------------------------------------------------------------------------------------------
# index_* ops (a 1-D index along a dim: the getitem machinery with one advanced index)


_OUT_OF_RANGE = "index out of range in self"


@keeps_index("index")
def index_select(input: Any, dim: int, index: Any, *, out: Any = None) -> Any:
    """The slices of ``input`` along ``dim`` at the 1-D ``index`` (repeats allowed; negative
    indices are out of range, as in PyTorch: ``IndexError``)."""
    if out is not None:
        return _out.write(out, index_select(input, dim, index), "index_select")
    idx = _index_1d(index, "index_select")
    if input._data.ndim == 0:
        wrap_dim(dim, 0)
        _check_nonneg_bounds(idx, 1, 0, "index_select", IndexError, _OUT_OF_RANGE)
        out = index_select(_atleast_1d(input), 0, TensorBase._make(idx))
        return _reshape(out, ())
    dim = wrap_dim(dim, input._data.ndim)
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_select", IndexError,
                         _OUT_OF_RANGE)
    return IndexSelect.apply(input, _dim_key(input._data, dim, idx))


@keeps_index("index", only_for="source")
def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1,
              out: Any = None) -> Any:
    """Out-of-place ``index_add_``: ``out[..., index[i], ...] += alpha * source[..., i, ...]``
    (indices must lie in ``[0, size)``: PyTorch's ``RuntimeError`` otherwise)."""
    if out is not None:
        return _out.write(out, index_add(input, dim, index, source, alpha=alpha), "index_add")
    idx = _index_1d(index, "index_add")
    if input._data.ndim == 0:
        x1, s1 = _zero_dim_case(input, dim, idx, source, "index_add")
        _check_nonneg_bounds(idx, 1, 0, "index_add", IndexError, _OUT_OF_RANGE)
        return _reshape(index_add(x1, 0, TensorBase._make(idx), s1, alpha=alpha), ())
    dim = wrap_dim(dim, input._data.ndim)
    _check_index_source(input, dim, idx, source, "index_add")
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_add")
    if alpha != 1:
        source = _pw.mul(source, alpha)
    if source._data.dtype == input._data.dtype:  # accumulated onto input's values, in order
        # (PyTorch adds float16/bfloat16 slices in float32, single elements in their dtype)
        b = IndexPutAdd.apply(source, _dim_key(input._data, dim, idx), input._data,
                              input._data.ndim > 1)
        return _IndexAddOnto.apply(input, b)
    a, b = _prom._promote(input, IndexPutAdd.apply(source, _dim_key(input._data, dim, idx)))
    return _IndexAddInto.apply(a, b)


@keeps_index("index")
def index_copy(input: Any, dim: int, index: Any, source: Any, *, out: Any = None) -> Any:
    """Out-of-place ``index_copy_``: ``out[..., index[i], ...] = source[..., i, ...]``
    (indices must lie in ``[0, size)``: PyTorch's ``IndexError`` otherwise)."""
    if out is not None:
        return _out.write(out, index_copy(input, dim, index, source), "index_copy")
    if _amp.active:
        input, source = _amp_cast("index_copy", input, source)
    idx = _index_1d(index, "index_copy")
    if input._data.ndim == 0:
        x1, s1 = _zero_dim_case(input, dim, idx, source, "index_copy")
        _check_nonneg_bounds(idx, 1, 0, "index_copy", IndexError)
        return _reshape(index_copy(x1, 0, TensorBase._make(idx), s1), ())
    dim = wrap_dim(dim, input._data.ndim)
    _check_index_source(input, dim, idx, source, "index_copy")
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_copy", IndexError)
    k = _dim_key(input._data, dim, idx)
    return IndexCopy.apply(input, source, k)


@keeps_index("index")
def index_fill(input: Any, dim: int, index: Any, value: Any) -> Any:
    """Out-of-place ``index_fill_``: the slices at ``index`` along ``dim`` set to ``value``
    (negative indices count from the end, as in PyTorch)."""
    idx = _index_1d(index, "index_fill")
    if isinstance(value, TensorBase) and value._data.ndim != 0:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    if input._data.ndim == 0:
        x1, _ = _zero_dim_case(input, dim, idx, None, "index_fill")
        return _reshape(index_fill(x1, 0, TensorBase._make(idx), value), ())
    dim = wrap_dim(dim, input._data.ndim)
    _check_bounds(idx, input._data.shape[dim], dim, "index_fill")
    k = _dim_key(input._data, dim, idx)
    if isinstance(value, complex) and input._data.dtype.kind != "c":
        raise RuntimeError(f"index_fill_(): Converting complex Scalar to non-complex type is not "
                           f"supported (value {value}, input {input.dtype})")
    op = IndexFillT if isinstance(value, TensorBase) else IndexFill
    return op.apply(input, _value_for(input, value, k), k)


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """Out-of-place ``index_put_``: ``out[indices] = values`` (``+=`` with ``accumulate``,
    where repeated indices add up)."""
    if _amp.active:
        input, values = _amp_cast("index_put", input, values)
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): indices must be a tuple of tensors")
    for i, t in enumerate(indices):
        if not isinstance(t, TensorBase):
            raise TypeError(
                f"expected Tensor as element {i} in argument 1 (indices), but got "
                f"{type(t).__name__}"
            )
    key = tuple(indices)
    if not accumulate:
        return setitem(input, key, values)
    k = _parse_key(input._data, key)
    v = _value_for(input, values, k, "values")
    if not isinstance(v, TensorBase):
        v = full(k.out_shape(), v, dtype=input.dtype, device=input.device)
    v = _expand(v, k.out_shape())
    if v._data.dtype == input._data.dtype:  # accumulated onto input's values, in order
        return _IndexPutOnto.apply(input, IndexPutAdd.apply(v, k, input._data))
    return _pw.add(input, IndexPutAdd.apply(v, k))


@keeps_index("index")
def take(input: Any, index: Any, *, out: Any = None) -> Any:
    """``input.flatten()[index]`` (negative indices count from the end)."""
    if out is not None:
        return _out.write(out, take(input, index), "take")
    index = _as_index_tensor(index, "take")
    idx = index._data
    if idx.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    n = input._data.size
    _check_take_bounds(idx, n)
    return Take.apply(input, idx)


@keeps_index("index")
def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """Out-of-place ``put_``: ``input.flatten()[index] = source.flatten()`` (``+=`` with
    ``accumulate``)."""
    index = _as_index_tensor(index, "put")
    idx = index._data
    if idx.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype}")
    if idx.size != source._data.size:
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source._data.size}, index.numel() = {idx.size}"
        )
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"put_(): self ({input.dtype}) and source ({source.dtype}) must have the same "
            "scalar type"
        )
    n = input._data.size
    _check_take_bounds(idx, n)
    flat = _reshape(input, (n,))
    src = _reshape(source, (idx.size,))
    key = (TensorBase._make(idx.reshape(-1)),)
    out = index_put(flat, key, src, accumulate) if accumulate else setitem(flat, key, src)
    return _reshape(out, tuple(input._data.shape))


class _IndexAddInto(_pw.Add):
    """x + the placed source: index_add's last step (same rule as Add)."""

    node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any) -> Any:
        if ctx.needs_input_grad[1]:  # PyTorch's node saves the index for the source's
            ctx.save_for_backward()  # gradient: freed after one backward
        return a + b


class _IndexAddOnto(_IndexAddInto):
    """index_add's last step when ``b`` was accumulated onto ``x`` already (IndexPutAdd's
    ``base``): out = b, with Add's rule (grad_x = grad, grad_b = grad)."""

    node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, b: Any) -> Any:
        if ctx.needs_input_grad[1]:
            ctx.save_for_backward()
        return b


class _IndexPutOnto(_pw.Add):
    """index_put's last step with ``accumulate`` (``b`` holds x already): out = b, with Add's
    rule."""

    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, b: Any) -> Any:
        return b


def _index_1d(index: Any, name: str) -> Any:
    index = _as_index_tensor(index, name)
    if index._data.dtype.kind not in "iu" or index._data.dtype == np.uint8:
        raise RuntimeError(
            f"{name}(): Expected dtype int32/int64 for index, but got {index.dtype}; convert it "
            "first, e.g. index.long()"
        )
    idx = index._data
    if idx.ndim > 1:
        raise IndexError(
            f"{name}(): Index is supposed to be a vector, but got an index of shape "
            f"{list(idx.shape)}; flatten it first"
        )
    return idx.reshape(-1)


def _check_index_source(input: Any, dim: int, idx: Any, source: Any, name: str) -> None:
    xs, ss = list(input._data.shape), list(source._data.shape)
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"{name}(): self ({input.dtype}) and source ({source.dtype}) must have the same "
            "scalar type; convert source first, e.g. source.to(self.dtype)"
        )
    want = list(xs)
    if want:
        want[dim] = idx.size
    if ss != want:
        raise RuntimeError(
            f"{name}(): source of shape {ss} does not fit self of shape {xs} with {idx.size} "
            f"indices along dimension {dim}: source must have shape {want}"
        )


def _zero_dim_case(input: Any, dim: Any, idx: Any, source: Any, name: str) -> tuple:
    """``index_add``/``index_copy``/``index_fill`` of a 0-d tensor: PyTorch treats it as one
    element along dim 0. Returns (input, source) as 1-element vectors."""
    wrap_dim(dim, 0)
    if source is None:
        return _atleast_1d(input), None
    ok = tuple(source._data.shape) == () or (
        name == "index_copy" and tuple(source._data.shape) == (1,))
    if not ok:
        raise RuntimeError(
            f"{name}(): source tensor shape must match self tensor shape, excluding the "
            f"specified dimension. Got self.shape = [] source.shape = "
            f"{list(source._data.shape)}"
        )
    if source._data.dtype != input._data.dtype:
        _check_index_source(input, 0, idx, source, name)
    return _atleast_1d(input), _reshape(source, (1,) * idx.size)


def _check_take_bounds(idx: Any, n: int) -> None:
    if idx.size == 0 or _backend.is_meta(idx):
        return
    lo, hi = int(idx.min()), int(idx.max())
    bad = hi if hi >= n else (lo if lo < -n else None)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


# ---------------------------------------------------------------------------------------------
# masked ops


@keeps_index("mask")
def masked_fill(input: Any, mask: Any, value: Any) -> Any:
    """``value`` where ``mask`` (broadcast) is True, ``input`` elsewhere."""
    m = _check_mask(mask, "masked_fill_")
    if isinstance(value, TensorBase):
        if value._data.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
    else:
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, complex):
            value = _check_scalar_value(input, value)
        elif not isinstance(value, (bool, int, float)):
            raise TypeError(f"masked_fill(): value must be a number or 0-d tensor, got "
                            f"{type(value)}")
    _broadcast_shapes(tuple(input._data.shape), tuple(m.shape))
    return MaskedFill.apply(input, value, m)


@keeps_index("mask")
def masked_select(input: Any, mask: Any, *, out: Any = None) -> Any:
    """The 1-D tensor of ``input``'s elements where ``mask`` (broadcast) is True."""
    if out is not None:
        return _out.write(out, masked_select(input, mask), "masked_select")
    m = _check_mask(mask, "masked_select:")
    shape = _broadcast_shapes(tuple(input._data.shape), tuple(m.shape))
    x = _expand(input, shape)
    if tuple(m.shape) != shape:
        m = _backend.xp_of(m).broadcast_to(m, shape)
    return MaskedSelect.apply(x, _parse_key(x._data, (m,)))


@keeps_index("mask")
def masked_scatter(input: Any, mask: Any, source: Any) -> Any:
    """Out-of-place ``masked_scatter_``: copy ``source``'s elements, in order, to the True
    positions of ``mask``."""
    m = _check_mask(mask, "masked_scatter_:")
    shape = _broadcast_shapes(tuple(input._data.shape), tuple(m.shape))
    x = _expand(input, shape)
    xp = _backend.xp_of(m)
    if tuple(m.shape) != shape:
        m = xp.broadcast_to(m, shape)
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"masked_scatter_: expected self and source to have same dtypes but got "
            f"{input.dtype} and {source.dtype}"
        )
    n = int(m.sum())
    if source._data.size < n:
        raise RuntimeError(
            f"masked_scatter_: Number of elements of source ({source._data.size}) < number of "
            f"ones in mask ({n})"
        )
    key = _parse_key(x._data, (m,))
    flat_src = xp.broadcast_to(xp.zeros((), np.bool_), (source._data.size,))  # shape only
    pad_key = _parse_key(flat_src, (slice(0, n),))
    return MaskedScatter.apply(x, source, key, pad_key)


class MaskedFill(Op):
    """out = where(mask, value, x)          grad_x = where(mask, 0, grad)
    grad_value = sum(where(mask, grad, 0))   (value a 0-d tensor)"""

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any, mask: Any) -> Any:
        xp = ctx.xp
        ctx.mask = mask
        v = xp.asarray(value).astype(x.dtype)
        if (out := _kernels.select(mask, v, x)) is not None:
            return out  # (one pass, C-ordered: a later reshape is a view, as PyTorch's)
        if type(x) is np.ndarray and x.size >= _threads.cut and (
                out := _threads.where(mask, v, x)) is not None:
            return out  # (large: split over the threads; C-ordered)
        # C-ordered whatever x's layout, as PyTorch's (so a later reshape is a view, as there)
        if type(x) is np.ndarray and type(mask) is np.ndarray and x.ndim and mask.size < x.size:
            return _fill_where(mask, v, x)
        out = xp.where(mask, v, x)
        return out if out.flags.c_contiguous else xp.asarray(out, order="C")  # (0-d stays 0-d)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp, mask = ctx.xp, ctx.mask
        if (gs := _kernels.select_grads(mask, grad, ctx.needs_input_grad[1::-1])) is not None:
            return gs[1], gs[0], None  # (one pass each)
        if type(grad) is np.ndarray and grad.size >= _threads.cut:  # (split over the threads)
            gx = _threads.select(mask, 0, grad) if ctx.needs_input_grad[0] else None
            gv = _threads.select(mask, grad, 0) if ctx.needs_input_grad[1] else None
            return gx, gv, None
        gx = None
        if ctx.needs_input_grad[0]:
            gx = (_fill_where(mask, grad.dtype.type(0), grad) if type(grad) is np.ndarray
                  and type(mask) is np.ndarray and grad.ndim and mask.size < grad.size
                  else xp.where(mask, 0, grad))
        gv = xp.where(mask, grad, 0) if ctx.needs_input_grad[1] else None
        return gx, gv, None


class MaskedScatter(Op):
    """out = x with the True positions of mask filled, in order, by source's first elements
    grad_x = grad with zeros at mask          grad_source = grad[mask] then zeros, reshaped"""

    @staticmethod
    def forward(ctx: Any, x: Any, source: Any, key: _Key, pad_key: _Key) -> Any:
        ctx.key, ctx.pad_key, ctx.src_shape = key, pad_key, source.shape
        out = x.copy()
        n = pad_key.vshape[0]
        key.assign(out, source.reshape(-1)[:n])
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(IndexZero, grad, ctx.key) if ctx.needs_input_grad[0] else None
        gs = None
        if ctx.needs_input_grad[1]:
            picked = ctx.call(Index, grad, ctx.key)
            gs = ctx.call(IndexPutAdd, picked, ctx.pad_key).reshape(ctx.src_shape)
        return gx, gs, None, None


def _fill_where(mask: np.ndarray, v: Any, x: np.ndarray) -> np.ndarray:
    """``np.where(mask, v, x)`` (v 0-d, of x's dtype) as a copy of x and a masked copy of v, C-ordered:
    2/3 of where's time for a mask broadcast over a batch, where the select kernel is not built."""
    out = np.empty(np.broadcast_shapes(mask.shape, x.shape), x.dtype)
    np.copyto(out, x)
    np.copyto(out, v, where=mask)
    return out


def _check_mask(mask: Any, name: str) -> Any:
    if not isinstance(mask, TensorBase):
        mask = _cast.as_tensor_arg(mask)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(
            f"{name} only supports boolean masks, but got mask with dtype {mask.dtype}; "
            "compare first, e.g. x > 0"
        )
    return mask._data


# ---------------------------------------------------------------------------------------------
# nonzero


def nonzero(input: Any, *, out: Any = None, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or a tuple of 1-D ones."""
    if out is not None:
        return _out.write(out, nonzero(input, as_tuple=as_tuple), "nonzero")
    a = input._data
    xp = _backend.xp_of(a)
    if as_tuple:
        if a.ndim == 0:
            return (TensorBase._make(xp.nonzero(a.reshape(1))[0].astype(np.int64)),)
        return tuple(TensorBase._make(i.astype(np.int64, copy=False)) for i in xp.nonzero(a))
    if a.ndim == 0:
        n = int(a != 0)
        return TensorBase._make(xp.zeros((n, 0), np.int64))
    return TensorBase._make(xp.argwhere(a).astype(np.int64, copy=False))


def argwhere(input: Any) -> Any:
    """``nonzero(input)``: an (n, ndim) int64 tensor of the nonzero positions."""
    return nonzero(input)


# ---------------------------------------------------------------------------------------------
# fill_diagonal_ (Tensor.fill_diagonal_ only: no torch function)


def fill_diagonal(input: Any, fill_value: Any, wrap: bool = False) -> Any:
    """The value ``input.fill_diagonal_(fill_value, wrap)`` writes."""
    a = input._data
    if a.ndim < 2:
        raise RuntimeError(f"dimensions must larger than 1 (got a tensor of shape {list(a.shape)})")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise RuntimeError(
            f"all dimensions of input must be of equal length (got shape {list(a.shape)})"
        )
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    return FillDiagonal.apply(input, fill_value, bool(wrap))


class FillDiagonal(Op):
    """out = x with its main diagonal set to value          grad_x = grad with a zero diagonal"""

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any, wrap: bool) -> Any:
        ctx.wrap = wrap
        out = x.copy()
        ctx.xp.fill_diagonal(out, value, wrap=wrap)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(FillDiagonal, grad, 0, ctx.wrap), None, None
