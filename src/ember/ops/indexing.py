"""Indexing: __getitem__/__setitem__, gather/scatter, index_select, masked ops, sort/topk.

Three differentiable pairs carry almost everything here, each op's backward being the other:

- ``Index`` (``x[key]``, a gather) and ``IndexPutAdd`` (scatter-add into zeros);
- ``Gather`` (``gather`` along a dim) and ``ScatterAdd``;
- ``IndexPut`` / ``IndexZero`` for writes (``x[key] = v``): grad_x is grad with zeros written at
  ``key``, grad_v is ``grad[key]``.

Scatter-adds never loop in Python and never use ``ufunc.at``: the target positions become flat
linear indices and one ``xp.bincount(idx, weights=...)`` sums repeated ones (exact integer
sums go through a sort + ``add.reduceat`` instead). Keys follow PyTorch's rules: integers are
applied first as ``select``s, then the advanced (tensor, list, mask) indices are placed as in
NumPy (adjacent ones in place, separated ones in front).
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op, link_view
from . import elementwise as _ew

__all__ = [
    "gather",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_select",
    "index_add",
    "index_fill",
    "index_copy",
    "index_put",
    "masked_fill",
    "masked_select",
    "masked_scatter",
    "take",
    "take_along_dim",
    "put",
    "nonzero",
    "argwhere",
    "topk",
    "sort",
    "argsort",
    "msort",
    "kthvalue",
    "unique",
    "unique_consecutive",
    "searchsorted",
    "bincount",
    "histc",
]



def _return_type(name: str) -> type:
    """PyTorch's ``torch.return_types.<name>``: a named tuple (values, indices), same repr."""

    def __repr__(self: Any) -> str:
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    cls = type(name, (namedtuple(name, ["values", "indices"]),),
               {"__slots__": (), "__repr__": __repr__})
    cls.__qualname__ = f"_{name}_rt"  # where pickle finds it (this module's attribute)
    return cls


_sort_rt = _return_type("sort")
_topk_rt = _return_type("topk")
_kthvalue_rt = _return_type("kthvalue")

_INDEX_DTYPE_MSG = "tensors used as indices must be long, int, byte or bool tensors"


# ---------------------------------------------------------------------------------------------
# small helpers

def _is_t(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "grad_fn")


def _raw(x: Any) -> Any:
    return x._data if _is_t(x) else x


def _make(arr: Any) -> Any:
    return TensorBase._make(arr)


def _wrap_dim(dim: Any, ndim: int) -> int:
    dim = operator.index(dim)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _numel(shape: tuple) -> int:
    return math.prod(shape)


def _c_strides(shape: tuple) -> list[int]:
    """Element strides of a C-contiguous array of ``shape``."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """PyTorch's broadcasting, with PyTorch's error naming the mismatching sizes."""
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
        for d in range(n - 1, -1, -1):
            if pa[d] != pb[d] and pa[d] != 1 and pb[d] != 1:
                raise RuntimeError(
                    f"The size of tensor a ({pa[d]}) must match the size of tensor b ({pb[d]}) "
                    f"at non-singleton dimension {d} (shapes {list(a)} and {list(b)})"
                ) from None
        raise


def _as_index_tensor(index: Any, name: str) -> Any:
    """An index argument as a tensor (lists and arrays accepted, as PyTorch does for lists)."""
    if _is_t(index):
        return index
    if isinstance(index, list | tuple | np.ndarray | int):
        from .creation import tensor

        arr = np.asarray(index)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        return tensor(arr)
    raise TypeError(f"{name}(): index must be a Tensor, got {type(index).__name__}")


def _check_int_index(index: Any, name: str, allow_int32: bool = True) -> Any:
    """The raw integer array of ``index``; PyTorch's dtype error otherwise."""
    arr = index._data
    ok = arr.dtype == np.int64 or (allow_int32 and arr.dtype == np.int32)
    if not ok:
        want = "int32 or int64" if allow_int32 else "int64"
        raise RuntimeError(
            f"{name}(): Expected dtype {want} for index, but got {index.dtype}; convert it "
            "first, e.g. index.long()"
        )
    return arr


def _check_bounds(arr: Any, size: int, dim: int, name: str = "", exc: type = IndexError) -> None:
    """Out-of-range indices are an error naming the index, the dim and its size (negative
    indices from -size are accepted where PyTorch accepts them: callers pass wrapped arrays
    otherwise)."""
    if arr.size == 0:
        return
    lo, hi = int(arr.min()), int(arr.max())
    bad = hi if hi >= size else (lo if lo < -size else None)
    if bad is not None:
        prefix = f"{name}(): " if name else ""
        raise exc(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {size}")


def _check_nonneg_bounds(arr: Any, size: int, dim: int, name: str,
                         exc: type = RuntimeError, torch_msg: str = "") -> None:
    """For ops that do not wrap negative indices (gather/scatter, index_select/add/copy,
    embedding): any index outside ``[0, size)`` raises ``exc``, the exception PyTorch raises
    (``torch_msg``, PyTorch's own wording, is kept at the end of ours)."""
    if arr.size == 0:
        return
    lo, hi = int(arr.min()), int(arr.max())
    bad = hi if hi >= size else (lo if lo < 0 else None)
    if bad is not None:
        hint = (f"; {name} does not count negative indices from the end: use index % {size}"
                if bad < 0 and bad >= -size else "")
        tail = f" ({torch_msg})" if torch_msg else ""
        raise exc(
            f"{name}(): index {bad} is out of bounds for dimension {dim} with size {size}"
            f"{hint}{tail}"
        )


def _accumulate(xp: Any, idx: Any, w: Any, size: int, dtype: Any) -> Any:
    """out[idx[i]] += w[i] over a zero 1-D array of ``size`` (repeated indices add up).

    Floating types use one ``bincount`` (summed in float64, then cast back); integer and bool
    types are summed exactly by a sort and ``add.reduceat``."""
    if dtype.kind == "f" or dtype.kind == "V":  # "V": bfloat16 from ml_dtypes
        # bincount sums in float64; converting first is faster than letting it convert
        out = xp.bincount(idx, weights=w.astype(np.float64, copy=False), minlength=size)
        return out.astype(dtype, copy=False)
    out = xp.zeros(size, dtype)
    if idx.size == 0:
        return out
    order = xp.argsort(idx, kind="stable")
    s = idx[order]
    starts = _group_starts(xp, s)
    out[s[starts]] = xp.add.reduceat(w[order], starts)
    return out


def _group_starts(xp: Any, s: Any) -> Any:
    """Start positions of the runs of equal values in the sorted 1-D ``s`` (non-empty)."""
    change = xp.empty(s.shape[0], dtype=bool)
    change[0] = True
    change[1:] = s[1:] != s[:-1]
    return xp.flatnonzero(change)


# ---------------------------------------------------------------------------------------------
# keys: PyTorch's indexing rules, parsed once into a basic part and an advanced part

_NONE, _ELL, _BOOL, _INT, _SLICE, _ARR, _MASK = range(7)


def _seq_as_tuple(key: Any) -> bool:
    """PyTorch (like old NumPy) reads a short list holding sequences, tensors, slices, None or
    Ellipsis as a tuple of indices: ``x[[idx0, idx1]]`` is ``x[idx0, idx1]``."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice | list | tuple | range) or _is_t(k):
            return True
        if isinstance(k, np.ndarray):
            return True
    return False


def _type_name(k: Any) -> str:
    t = type(k)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__name__}"


def _ok_index_dtype(dt: Any) -> bool:
    """An index *tensor* dtype PyTorch accepts: int64, int32, uint8 (a mask) or bool."""
    kind = dt.kind
    return kind == "b" or (kind == "i" and dt.itemsize in (4, 8)) or (kind == "u" and
                                                                      dt.itemsize == 1)


def _seq_index_array(k: Any) -> Any:
    """A list/tuple/range used as an index, as a NumPy array: PyTorch converts sequences like
    ``torch.tensor`` would but makes them long, so float entries truncate (``[1.7] -> [1]``);
    tensors inside the sequence keep their own rules (a float tensor is refused)."""
    if isinstance(k, range):
        return np.arange(k.start, k.stop, k.step, dtype=np.int64)
    if len(k) == 0:
        return np.zeros(0, np.int64)
    if any(_is_t(e) for e in k):
        from .creation import tensor

        arr = tensor(list(k))._data
        if not _ok_index_dtype(arr.dtype):
            raise TypeError(
                "only integer tensors of a single element can be converted to an index (got a "
                f"sequence of {arr.dtype} tensors)"
            )
        return arr
    if any(isinstance(e, str | bytes) for e in k):
        raise TypeError(
            f"an index sequence may hold only integers or booleans (got {_type_name(k[0])} "
            "entries)"
        )
    arr = np.asarray(k)
    if arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64, copy=False)
    elif arr.dtype.kind != "b":
        raise TypeError(
            f"an index sequence may hold only integers or booleans (got dtype {arr.dtype})"
        )
    return arr


def _index_array(k: Any, dev: Any) -> Any:
    """A tensor/array/list/range used as an index, as a bool or integer array on ``dev``.

    PyTorch's rules per kind: index *tensors* must be int64, int32, uint8 (a mask) or bool;
    NumPy arrays and Python sequences are converted first, so any NumPy integer dtype works and
    float entries are truncated to integers. A CPU index may index a CUDA tensor; a CUDA index
    of a CPU tensor is PyTorch's error."""
    if _is_t(k):
        arr = k._data
        if not _ok_index_dtype(arr.dtype):
            raise IndexError(f"{_INDEX_DTYPE_MSG} (got an index tensor of dtype {k.dtype})")
    elif _backend.is_array(k):
        arr = k
        kind = arr.dtype.kind
        if kind == "f":
            arr = arr.astype(np.int64)
        elif kind in "iu" and arr.dtype != np.uint8:
            arr = arr.astype(np.int64, copy=False)
        elif kind != "b" and arr.dtype != np.uint8:
            raise TypeError(
                f"can't index with a NumPy array of dtype {arr.dtype}: index arrays must hold "
                "integers or booleans"
            )
    elif isinstance(k, list | tuple | range):
        arr = _seq_index_array(k)
    elif isinstance(k, str | bytes):
        raise TypeError(
            f"a tensor cannot be indexed by a {type(k).__name__} ({k!r}): use integers, slices, "
            "None, Ellipsis, or integer/bool tensors"
        )
    else:
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            f"valid indices (got {_type_name(k)})"
        )
    if arr.dtype == np.uint8:
        arr = arr.astype(bool)  # PyTorch's deprecated byte masks
    adev = _backend.device_of(arr)
    if adev != dev:
        if dev.type == "cpu" and arr.ndim > 0:
            raise RuntimeError(
                f"indices should be either on cpu or on the same device as the indexed tensor "
                f"({dev}): got an index on {adev}; move the index with index.cpu() (or the "
                f"tensor with .to({str(adev)!r}))"
            )
        arr = _backend.to_device(arr, dev)
    return arr


def _check_slice(s: slice) -> slice:
    start, stop, step = s.start, s.stop, s.step
    if step is not None:
        step = operator.index(step)
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step < 0:
            raise ValueError(
                "step must be greater than zero (PyTorch has no negative-step slices; use "
                "x.flip(dim) to reverse a dimension)"
            )
    start = None if start is None else operator.index(start)
    stop = None if stop is None else operator.index(stop)
    return slice(start, stop, step)


class _Key:
    """A parsed index: ``x[key] == x[basic][vkey]``.

    ``basic`` holds integers, slices and None (a view of x); ``vkey`` (None when there is no
    advanced index) indexes that view with arrays and masks at ``adv`` = [(view dim, array,
    is_mask)], and full slices elsewhere."""

    __slots__ = ("shape", "basic", "trivial", "vshape", "vkey", "adv", "unique", "last")

    # ``last``: the kind of the key's last item that changes the view (an integer, a slice
    # that does not cover its dim, None), which names the view's node as in PyTorch

    def gather(self, arr: Any) -> Any:
        v = arr if self.trivial else arr[self.basic]
        return v if self.vkey is None else v[self.vkey]

    def assign(self, out: Any, value: Any) -> None:
        """out[key] = value, in place (``out`` is a fresh array)."""
        if self.vkey is None:
            if self.trivial:
                out[...] = value
            else:
                out[self.basic] = value
            return
        v = out if self.trivial else out[self.basic]
        v[self.vkey] = value

    def out_shape(self) -> tuple:
        """The shape of ``x[key]`` (without indexing)."""
        if self.vkey is None:
            return tuple(self.vshape)
        shapes, dims = [], []
        for vd, arr, is_mask in self.adv:
            if is_mask:
                shapes.append((int(arr.sum()),))
                dims.extend(range(vd, vd + arr.ndim))
            else:
                shapes.append(tuple(arr.shape))
                dims.append(vd)
        b = _index_broadcast(shapes)
        rest = [s for d, s in enumerate(self.vshape) if d not in dims]
        if dims == list(range(dims[0], dims[0] + len(dims))):
            return tuple(rest[: dims[0]]) + b + tuple(rest[dims[0]:])
        return b + tuple(rest)

    def scatter_add(self, grad: Any, xp: Any) -> Any:
        """zeros(shape) with ``grad`` added at ``key`` (repeated positions add up)."""
        if self.vkey is None or self.unique:
            out = xp.zeros(self.shape, grad.dtype)
            self.assign(out, grad)
            return out
        gv = self._scatter_add_adv(grad, xp)
        if self.trivial:
            return gv
        out = xp.zeros(self.shape, grad.dtype)
        out[self.basic] = gv
        return out

    def _scatter_add_adv(self, grad: Any, xp: Any) -> Any:
        vshape = self.vshape
        arrays, dims = [], []
        for vd, arr, is_mask in self.adv:
            if is_mask:
                arrays.extend(xp.nonzero(arr))
                dims.extend(range(vd, vd + arr.ndim))
            else:
                a = arr.astype(np.int64, copy=False)
                if vshape[vd]:
                    a = xp.where(a < 0, a + vshape[vd], a)
                arrays.append(a)
                dims.append(vd)
        # linear index of each gathered element into the advanced dims (row-major)
        lin = arrays[0]
        for a, d in zip(arrays[1:], dims[1:]):
            lin = lin * vshape[d] + a
        if lin.ndim == 0:
            lin = lin.reshape(1)
        sizes = [vshape[d] for d in dims]
        rest_dims = [d for d in range(len(vshape)) if d not in dims]
        rest = [vshape[d] for d in rest_dims]
        nb = lin.ndim
        g = grad
        adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
        if adjacent and dims[0] > 0:  # the broadcast index dims sit in place: move them first
            g = xp.moveaxis(g, tuple(range(dims[0], dims[0] + nb)), tuple(range(nb)))
        r_tot = _numel(rest)
        m = _numel(sizes)
        if r_tot == 1:
            comb = lin.reshape(-1)
        else:
            comb = (lin.reshape(-1, 1) * r_tot + xp.arange(r_tot)).reshape(-1)
        acc = _accumulate(xp, comb, g.reshape(-1), m * r_tot, grad.dtype)
        acc = acc.reshape(tuple(sizes) + tuple(rest))
        order = dims + rest_dims
        if order != sorted(order):  # back to the view's dim order
            acc = acc.transpose(tuple(sorted(range(len(order)), key=order.__getitem__)))
        return acc


def _index_broadcast(shapes: list) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        desc = ", ".join(str(list(s)) for s in shapes)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {desc}"
        ) from None


def _parse_basic(shape: tuple, key: tuple) -> _Key | None:
    """The fast path for keys of plain ints and slices (``x[0]``, ``x[:, 1:3]``); None when
    the key needs the general parser."""
    if len(key) > len(shape):
        return None
    vshape = []
    trivial = True
    last = _ELL
    for d, k in enumerate(key):
        t = type(k)
        if t is int:
            size = shape[d]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            trivial = False
            last = _INT
        elif t is slice:
            a, b, c = k.start, k.stop, k.step
            if (a is not None and type(a) is not int) or (b is not None and type(b) is not int) \
                    or (c is not None and (type(c) is not int or c <= 0)):
                return None
            n = len(range(*k.indices(shape[d])))
            vshape.append(n)
            trivial = trivial and a is None and b is None and c is None
            if n != shape[d] or (c is not None and c != 1):
                last = _SLICE
        else:
            return None
    vshape.extend(shape[len(key):])
    kk = _Key()
    kk.shape, kk.basic, kk.trivial, kk.vshape = shape, key + (Ellipsis,), trivial, tuple(vshape)
    kk.last = last
    kk.vkey, kk.adv, kk.unique = None, [], True
    return kk


def _parse_key(x: Any, key: Any) -> _Key:
    """Parse ``key`` for the raw array ``x`` (PyTorch's rules and errors)."""
    shape = tuple(x.shape)
    t = type(key)
    if t is int or t is slice or t is tuple:
        kk = _parse_basic(shape, key if t is tuple else (key,))
        if kk is not None:
            return kk
    ndim = len(shape)
    dev = _backend.device_of(x)
    if type(key) is not tuple:
        key = tuple(key) if _seq_as_tuple(key) else (key,)
    items = []
    consumed = 0
    seen_ellipsis = False
    for k in key:
        if k is None:
            items.append((_NONE, None))
        elif k is Ellipsis:
            # PyTorch accepts several: the first expands to the remaining dims, later ones to none
            items.append((_ELL, None) if not seen_ellipsis else (_NONE, False))
            seen_ellipsis = True
        elif isinstance(k, bool):
            items.append((_BOOL, bool(k)))
        elif isinstance(k, int | np.integer):
            items.append((_INT, int(k)))
            consumed += 1
        elif isinstance(k, slice):
            items.append((_SLICE, _check_slice(k)))
            consumed += 1
        else:
            arr = _index_array(k, dev)
            if arr.ndim == 0:
                if arr.dtype == bool:
                    items.append((_BOOL, bool(arr)))
                else:
                    items.append((_INT, int(arr)))
                    consumed += 1
            elif arr.dtype == bool:
                items.append((_MASK, arr))
                consumed += arr.ndim
            else:
                items.append((_ARR, arr))
                consumed += 1
    if consumed > ndim:
        if ndim == 0:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        raise IndexError(
            f"too many indices for tensor of dimension {ndim} (got {consumed} indices for a "
            f"tensor of shape {list(shape)})"
        )
    xp = _backend.xp_of(x)
    basic: list = []
    vshape: list = []
    adv: list = []
    d = 0
    last = _ELL
    for kind, p in items:
        if kind == _ELL:
            n = ndim - consumed
            basic.extend([slice(None)] * n)
            vshape.extend(shape[d:d + n])
            d += n
        elif kind == _NONE:
            if p is False:  # a second Ellipsis: no dims
                continue
            basic.append(None)
            vshape.append(1)
            last = _NONE
        elif kind == _BOOL:
            basic.append(None)
            adv.append((len(vshape), xp.zeros(1 if p else 0, np.int64), False))
            vshape.append(1)
        elif kind == _INT:
            size = shape[d]
            if not -size <= p < size:
                raise IndexError(f"index {p} is out of bounds for dimension {d} with size {size}")
            basic.append(p)
            d += 1
            last = _INT
        elif kind == _SLICE:
            basic.append(p)
            n = len(range(*p.indices(shape[d])))
            vshape.append(n)
            if n != shape[d] or (p.step is not None and p.step != 1):
                last = _SLICE
            d += 1
        elif kind == _ARR:
            _check_bounds(p, shape[d], d)
            basic.append(slice(None))
            adv.append((len(vshape), p, False))
            vshape.append(shape[d])
            d += 1
        else:  # _MASK
            k = p.ndim
            if tuple(p.shape) != shape[d:d + k]:
                j = next(j for j in range(k) if p.shape[j] != shape[d + j])
                raise IndexError(
                    f"The shape of the mask {list(p.shape)} at index {j} does not match the "
                    f"shape of the indexed tensor {list(shape)} at index {d + j}"
                )
            basic.extend([slice(None)] * k)
            adv.append((len(vshape), p, True))
            vshape.extend(shape[d:d + k])
            d += k
    vshape.extend(shape[d:])
    kk = _Key()
    kk.shape = shape
    kk.last = last
    kk.trivial = all(type(b) is slice and b == slice(None) for b in basic)
    kk.basic = tuple(basic) + (Ellipsis,)  # the Ellipsis keeps an all-integer key a 0-d view
    kk.vshape = tuple(vshape)
    kk.adv = adv
    # masks (and bool scalars) never repeat a position: their backward can assign, not add
    kk.unique = not any(kind == _ARR for kind, _ in items)
    if adv:
        entries: list = []
        at = {vd: (arr, is_mask) for vd, arr, is_mask in adv}
        vd = 0
        while vd < len(vshape):
            if vd in at:
                arr, is_mask = at[vd]
                entries.append(arr)
                vd += arr.ndim if is_mask else 1
            else:
                entries.append(slice(None))
                vd += 1
        kk.vkey = tuple(entries)
        arr_shapes = [tuple(a.shape) for _, a, m in adv if not m]
        if len(arr_shapes) > 1:  # PyTorch's error when the index tensors do not broadcast
            _index_broadcast(arr_shapes)
    else:
        kk.vkey = None
    return kk


def _dim_key(x: Any, dim: int, index: Any) -> _Key:
    """The key ``(:, ..., :, index)`` selecting ``index`` along ``dim``."""
    return _parse_key(x, (slice(None),) * dim + (index,))


# ---------------------------------------------------------------------------------------------
# x[key] and its adjoint


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
    """``index_select`` (same rule as Index)."""

    node_name = "IndexSelectBackward0"


class MaskedSelect(Index):
    """``masked_select`` (same rule as Index)."""

    node_name = "MaskedSelectBackward0"


class Take(Index):
    """``take`` (same rule as Index)."""

    node_name = "TakeBackward0"


class IndexPutAdd(Op):
    """out = zeros(key.shape) with g added at key (repeats add up)          grad_g = grad[key]"""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, key: _Key) -> Any:
        ctx.key = key
        return key.scatter_add(g, ctx.xp)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Index, grad, ctx.key), None


class IndexPut(Op):
    """out = x with out[key] = value
    grad_x = grad with zeros at key (IndexZero)          grad_value = grad[key]"""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any, key: _Key) -> Any:
        ctx.key = key
        ctx.save_for_backward()  # released after one backward, as PyTorch's CopySlices/IndexPut
        out = x.copy()
        key.assign(out, value)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(IndexZero, grad, ctx.key) if ctx.needs_input_grad[0] else None
        gv = ctx.call(Index, grad, ctx.key) if ctx.needs_input_grad[1] else None
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


class _Expand(Op):
    """out = x broadcast to shape (a view)          grad_x = grad (the engine sums it back)"""

    node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        return ctx.xp.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, None


def _expand(x: Any, shape: tuple) -> Any:
    if tuple(x._data.shape) == tuple(shape):
        return x
    return _Expand.apply(x, tuple(shape))


def _reshape(x: Any, shape: tuple) -> Any:
    from . import shape as _sh

    if tuple(x._data.shape) == tuple(shape):
        return x
    return _sh.reshape(x, tuple(shape))


def getitem(x: Any, key: Any) -> Any:
    """``x[key]``: integers, slices (positive steps), None, Ellipsis, masks, index tensors.

    Basic keys (integers, slices, None, Ellipsis) return a view; any tensor, list or mask
    makes an advanced index (a copy), placed by NumPy's rules after integers are applied."""
    k = _parse_key(x._data, key)
    if not (grad_mode.state.enabled and x.requires_grad):  # nothing to record: skip apply
        out = _make(k.gather(x._data))
        return out if k.vkey is not None else link_view(x, out)
    if k.vkey is not None:
        return Index.apply(x, k)
    if type(key) is slice:  # a lone slice is always a slice node in PyTorch, even x[:]
        return IndexView.apply(x, k)
    last = k.last
    if last == _INT:
        return IndexSelectView.apply(x, k)
    if last == _NONE:
        return IndexUnsqueezeView.apply(x, k)
    return (IndexView if last == _SLICE else IndexAliasView).apply(x, k)


def _value_for(x: Any, value: Any, k: _Key, what: str = "value tensor") -> Any:
    """``value`` ready to be written at ``k`` into x: a Python number, or a tensor of x's
    dtype whose shape broadcasts to the indexed shape (extra leading 1-dims dropped)."""
    if isinstance(value, bool | int | float | np.generic):
        return value.item() if isinstance(value, np.generic) else value
    if not _is_t(value):
        value = _ew.as_tensor_arg(value)
        if not _is_t(value):
            return value
    if value._data.dtype != x._data.dtype:
        value = _ew.cast(value, _dtype.from_numpy(x._data.dtype))
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
        raise RuntimeError(f"value {value} cannot be converted to type {_dtype.from_numpy(x._data.dtype)} "
                           "without overflow (ember has no complex dtypes)")
    elif not isinstance(value, float):
        if _is_t(value):
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


def setitem(x: Any, key: Any, value: Any) -> Any:
    """The new value of x after ``x[key] = value`` (``Tensor.__setitem__`` makes it in place).

    ``value`` (a number or tensor) is broadcast to ``x[key]``'s shape and cast to x's dtype.
    Differentiable w.r.t. x (zero gradient where written) and value (``grad[key]``)."""
    if key is False:  # PyTorch writes nothing and checks nothing for a lone False key
        value = False if x._data.dtype == np.bool_ else 0
    if not _is_t(value):
        value = _check_scalar_value(x, value)
    k = _parse_key(x._data, key)
    if (k.vkey is not None and _is_t(value) and value._data.dtype != x._data.dtype
            and not _casting_key(key, k, value)):
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{_dtype.legacy_name(x.dtype)} for the destination and "
            f"{_dtype.legacy_name(value.dtype)} for the source. Convert "
            "the value first: x[key] = value.to(x.dtype)"
        )
    if k.vkey is None and _is_t(value):
        # a basic key writes by copying into a view, which PyTorch does across devices too
        dev = _backend.device_of(x._data)
        if _backend.device_of(value._data) != dev:
            value = _ew.to_device(value, dev)
    return IndexPut.apply(x, _value_for(x, value, k), k)


# ---------------------------------------------------------------------------------------------
# gather / scatter along a dim


def _dim_lin(xp: Any, index: Any, dim: int, shape: tuple) -> Any:
    """For each element of ``index`` (same ndim as ``shape``), its flat position in an array of
    ``shape`` when dim ``dim`` takes the index value and the others their own coordinate."""
    strides = _c_strides(shape)
    lin = index.astype(np.int64) * strides[dim]
    nd = index.ndim
    for d in range(nd):
        if d != dim and index.shape[d] > 1:
            ar = xp.arange(index.shape[d], dtype=np.int64) * strides[d]
            lin = lin + ar.reshape((-1,) + (1,) * (nd - d - 1))
    return lin


class Gather(Op):
    """out[i][j] = x[index[i][j]][j] (dim 0)          grad_x = scatter-add of grad at index"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, index: Any) -> Any:
        ctx.dim, ctx.index, ctx.shape = dim, index, x.shape
        if any(index.shape[d] < x.shape[d] for d in range(x.ndim) if d != dim):
            x = x[tuple(slice(None) if d == dim else slice(0, index.shape[d])
                        for d in range(x.ndim))]
        return ctx.xp.take_along_axis(x, index, axis=dim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(ScatterAdd, grad, ctx.dim, ctx.index, ctx.shape), None, None


class ScatterAdd(Op):
    """out = zeros(shape); out[index[i][j]][j] += src[i][j] (dim 0)          grad_src = grad
    gathered at index"""

    @staticmethod
    def forward(ctx: Any, src: Any, dim: int, index: Any, shape: tuple) -> Any:
        ctx.dim, ctx.index = dim, index
        xp = ctx.xp
        lin = _dim_lin(xp, index, dim, shape).reshape(-1)
        return _accumulate(xp, lin, src.reshape(-1), _numel(shape), src.dtype).reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Gather, grad, ctx.dim, ctx.index), None, None, None


class Scatter(Op):
    """out = x with out[index[i][j]][j] = src[i][j] (dim 0; src may be a number)
    grad_x = grad with zeros at the written positions          grad_src = grad gathered at index"""

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any, dim: int, index: Any) -> Any:
        ctx.dim, ctx.index = dim, index
        out = x.copy()
        lin = _dim_lin(ctx.xp, index, dim, x.shape).reshape(-1)
        flat = out.reshape(-1)
        flat[lin] = src.reshape(-1) if _backend.is_array(src) else src
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        gx = ctx.call(Scatter, grad, 0, ctx.dim, ctx.index) if ctx.needs_input_grad[0] else None
        gs = ctx.call(Gather, grad, ctx.dim, ctx.index) if ctx.needs_input_grad[1] else None
        return gx, gs, None, None


class ScatterValue(Scatter):
    """scatter of a number (same rule as Scatter)."""

    node_name = "ScatterBackward1"


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Op):
    """out[p] = reduce({x[p] if include_self} + {src[j] : index sends j to p}); p not hit
    keeps x[p].
    sum:       grad_x = grad (0 at hit p without include_self)      grad_src = grad[p(j)]
    mean:      grad_x = grad / n            grad_src = grad[p(j)] / n[p(j)]   (n = group size)
    prod:      grad_e = grad[p] * product of the other members of e's group (exact with zeros)
    amax/amin: grad[p] is split evenly among the members equal to out[p]
    (Unlike PyTorch, an excluded self value (include_self=False) is not counted in a tie, so the
    gradient of each output sums to grad[p].)"""

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any, dim: int, index: Any, reduce: str,
                include_self: bool) -> Any:
        xp = ctx.xp
        lin = _dim_lin(xp, index, dim, x.shape).reshape(-1)
        w = src.reshape(-1)
        size = x.size
        flat = x.reshape(-1)
        cnt = None
        if reduce == "mean" or (reduce == "sum" and not include_self):
            cnt = xp.bincount(lin, minlength=size)
        if reduce in ("sum", "mean"):
            acc = _accumulate(xp, lin, w, size, x.dtype)
            total = flat + acc if include_self else acc
            if reduce == "mean":
                n = (cnt + 1 if include_self else xp.maximum(cnt, 1)).astype(x.dtype)
                total = total / n if x.dtype.kind == "f" else total // n
                total = total.astype(x.dtype, copy=False)
            out = total if include_self else xp.where(cnt > 0, total, flat)
        else:
            ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
            out = flat.copy()
            if lin.size:
                order = xp.argsort(lin, kind="stable")
                s = lin[order]
                starts = _group_starts(xp, s)
                red = ufunc.reduceat(w[order], starts)
                pos = s[starts]
                out[pos] = ufunc(out[pos], red) if include_self else red
        ctx.lin, ctx.cnt, ctx.reduce, ctx.include_self = lin, cnt, reduce, include_self
        ctx.src_shape = src.shape
        out = out.reshape(x.shape)
        if reduce in ("prod", "amax", "amin") and any(ctx.needs_input_grad):
            ctx.save_for_backward(x, src, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        # coefficients are computed on raw arrays (bx); only products with grad use ctx.xp, so
        # the rule also runs under create_graph (prod excepted: its coefficients depend on x)
        xp = ctx.xp
        lin, cnt, reduce, inc = ctx.lin, ctx.cnt, ctx.reduce, ctx.include_self
        bx = _backend.xp_of(lin)
        if cnt is None:
            cnt = bx.bincount(lin, minlength=_numel(tuple(grad.shape)))
        g = grad.reshape(-1)
        hit = cnt > 0
        dt = _raw(grad).dtype
        if reduce == "sum":
            gx = g if inc else xp.where(hit, 0, g)
            gs = g[lin]
        elif reduce == "mean":
            n = (cnt + 1 if inc else bx.maximum(cnt, 1)).astype(dt)
            gn = g / n
            gx = gn if inc else xp.where(hit, 0, g)
            gs = gn[lin]
        else:
            x, src, out = (_raw(s) for s in ctx.saved)
            flat, w, r = x.reshape(-1), src.reshape(-1), out.reshape(-1)
            self_member = (~hit) | inc
            if reduce == "prod":
                if _is_t(grad):
                    raise RuntimeError(
                        "scatter_reduce(reduce='prod') does not support double backward "
                        "(create_graph=True) in ember; use reduce='sum' or compute the product "
                        "with differentiable ops"
                    )
                cx, cs = _prod_coefs(bx, flat, w, lin, self_member)
            else:
                eq_src = w == r[lin]
                eq_self = self_member & (flat == r)
                total = bx.bincount(lin[eq_src], minlength=flat.size) + eq_self
                inv = (1.0 / bx.maximum(total, 1)).astype(dt)
                cx = bx.where(eq_self, inv, 0).astype(dt)
                cs = bx.where(eq_src, inv[lin], 0).astype(dt)
            gx = g * cx
            gs = g[lin] * cs
        gx = gx.reshape(grad.shape) if ctx.needs_input_grad[0] else None
        gs = gs.reshape(ctx.src_shape) if ctx.needs_input_grad[1] else None
        return gx, gs, None, None, None, None


def _prod_coefs(xp: Any, flat: Any, w: Any, lin: Any, self_member: Any) -> tuple[Any, Any]:
    """d(group product)/d(member) for the self values and the src values, exact with zeros:
    the product of the other members (0 when another member is 0)."""
    size = flat.size
    dt = flat.dtype
    zero_self = self_member & (flat == 0)
    zc = xp.bincount(lin[w == 0], minlength=size) + zero_self
    # product of the nonzero members of each group
    pnz = xp.where(self_member & (flat != 0), flat, 1).astype(dt)
    if lin.size:
        order = xp.argsort(lin, kind="stable")
        s = lin[order]
        starts = _group_starts(xp, s)
        ws = w[order]
        red = xp.multiply.reduceat(xp.where(ws == 0, 1, ws).astype(dt), starts)
        pos = s[starts]
        pnz[pos] = pnz[pos] * red

    def coef(e: Any, z: Any, p: Any) -> Any:
        safe = xp.where(e == 0, 1, e)
        return xp.where(e == 0, (z == 1) * p, (z == 0) * p / safe).astype(dt)

    cx = xp.where(self_member, coef(flat, zc, pnz), 0).astype(dt)
    cs = coef(w, zc[lin], pnz[lin])
    return cx, cs


def _check_dim_index(x: Any, dim: int, index: Any, name: str, src: Any = None) -> None:
    """PyTorch's shape rules for gather/scatter: same ndim; index no larger than x apart from
    ``dim`` (and no larger than src anywhere)."""
    xs, ids = tuple(x._data.shape), tuple(index._data.shape)
    if len(ids) != len(xs) and not (len(ids) <= 1 and len(xs) <= 1):
        raise RuntimeError(
            f"{name}(): Index tensor must have the same number of dimensions as input tensor "
            f"(index shape {list(ids)}, input shape {list(xs)})"
        )
    too_big = any(ids[d] > xs[d] for d in range(len(ids)) if d != dim)
    ss = tuple(src._data.shape) if src is not None else None
    if ss is not None and len(ss) == len(ids):
        too_big = too_big or any(ids[d] > ss[d] for d in range(len(ids)))
    if too_big:
        extra = f" and to be no larger size than src {list(ss)}" if ss is not None else ""
        raise RuntimeError(
            f"{name}(): Expected index {list(ids)} to be no larger than self {list(xs)} apart "
            f"from dimension {dim}{extra}"
        )


def _atleast_1d(t: Any) -> Any:
    return _reshape(t, (1,)) if t._data.ndim == 0 else t


def gather(input: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> Any:
    """``out[i][j] = input[index[i][j]][j]`` for dim 0 (index no larger than input elsewhere)."""
    index = _as_index_tensor(index, "gather")
    idx = _check_int_index(index, "gather")
    dim = _wrap_dim(dim, input._data.ndim)
    _check_dim_index(input, dim, index, "gather")
    _check_nonneg_bounds(idx, input._data.shape[dim] if input._data.ndim else 1, dim, "gather")
    if input._data.ndim == 0 or idx.ndim == 0:  # PyTorch treats 0-d as 1-element vectors
        out = Gather.apply(_atleast_1d(input), 0, idx.reshape(-1))
        return _reshape(out, tuple(idx.shape))
    return Gather.apply(input, dim, idx)


def _scatter_prep(input: Any, dim: int, index: Any, src: Any, name: str) -> tuple:
    index = _as_index_tensor(index, name)
    idx = _check_int_index(index, name)
    dim = _wrap_dim(dim, input._data.ndim)
    if _is_t(src) and src._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype (self is {input.dtype}, src "
            f"is {src.dtype}); convert src first, e.g. src.to(self.dtype)"
        )
    _check_dim_index(input, dim, index, name, src if _is_t(src) else None)
    _check_nonneg_bounds(idx, input._data.shape[dim] if input._data.ndim else 1, dim, name)
    if _is_t(src) and tuple(src._data.shape) != tuple(idx.shape):
        src = getitem(src, tuple(slice(0, s) for s in idx.shape))
    return dim, idx, src


def scatter(input: Any, dim: int, index: Any, src: Any = None, value: Any = None, *,
            reduce: str | None = None) -> Any:
    """Out-of-place ``scatter_``: write ``src`` (a tensor) or ``value`` (a number) at ``index``
    along ``dim``. ``reduce='add' | 'multiply'`` combines instead (and, unlike PyTorch, stays
    differentiable)."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing the src tensor or the value to write")
    if _is_t(src) and src._data.ndim == 0 and input._data.ndim > 0:
        src = src.item()
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(
                f"reduce argument must be either add or multiply, got {reduce!r}"
            )
        if not _is_t(src):
            from .creation import full

            src = full(tuple(_raw(index).shape), src, dtype=input.dtype, device=input.device)
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        return scatter_reduce(input, dim, index, src, "prod", include_self=True)
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter")
    return (Scatter if _is_t(src) else ScatterValue).apply(input, src, dim, idx)


class _ScatterAddInto(_ew.Add):
    """x + the scattered src: scatter_add's last step (same rule as Add)."""

    node_name = "ScatterAddBackward0"


class _IndexAddInto(_ew.Add):
    """x + the placed source: index_add's last step (same rule as Add)."""

    node_name = "IndexAddBackward0"


def scatter_add(input: Any, dim: int, index: Any, src: Any) -> Any:
    """Out-of-place ``scatter_add_``: ``out[index[i][j]][j] += src[i][j]`` (dim 0)."""
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter_add")
    a, b = _ew._promote(input, ScatterAdd.apply(src, dim, idx, tuple(input._data.shape)))
    return _ScatterAddInto.apply(a, b)


def scatter_reduce(input: Any, dim: int, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True) -> Any:
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with sum, prod, mean, amax, amin."""
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce!r}"
        )
    dim, idx, src = _scatter_prep(input, dim, index, src, "scatter_reduce")
    return ScatterReduce.apply(input, src, dim, idx, reduce, bool(include_self))


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Any:
    """Pick values along ``dim`` at ``indices`` (broadcast against input elsewhere); with
    ``dim=None`` both are flattened first."""
    indices = _as_index_tensor(indices, "take_along_dim")
    idx = _check_int_index(indices, "take_along_dim")
    if dim is None:
        flat = _reshape(input, (input._data.size,))
        return gather(flat, 0, _make(idx.reshape(-1)))
    nd = input._data.ndim
    if idx.ndim != nd:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {nd} dimensions for input, and {idx.ndim} dimensions for indices"
        )
    dim = _wrap_dim(dim, nd)
    xs, ids = list(input._data.shape), list(idx.shape)
    xs_d, ids_d = xs[dim], ids[dim]
    xs[dim] = ids[dim] = 1
    b = list(_broadcast_shapes(tuple(xs), tuple(ids)))
    xb = b.copy()
    xb[dim] = xs_d
    b[dim] = ids_d
    xp = _backend.xp_of(idx)
    x = _expand(input, tuple(xb))
    idx = xp.broadcast_to(idx, tuple(b))
    # PyTorch counts negative indices from the end here (unlike gather); beyond [-size, size)
    # it reads unchecked memory, which we refuse
    _check_bounds(idx, xs_d, dim, "take_along_dim", RuntimeError)
    if idx.size and int(idx.min()) < 0:
        idx = xp.where(idx < 0, idx + xs_d, idx)
    return Gather.apply(x, dim, idx)


# ---------------------------------------------------------------------------------------------
# index_* ops (a 1-D index along a dim: the getitem machinery with one advanced index)


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


_OUT_OF_RANGE = "index out of range in self"


def index_select(input: Any, dim: int, index: Any) -> Any:
    """The slices of ``input`` along ``dim`` at the 1-D ``index`` (repeats allowed; negative
    indices are out of range, as in PyTorch: ``IndexError``)."""
    idx = _index_1d(index, "index_select")
    if input._data.ndim == 0:
        _wrap_dim(dim, 0)
        _check_nonneg_bounds(idx, 1, 0, "index_select", IndexError, _OUT_OF_RANGE)
        out = index_select(_atleast_1d(input), 0, _make(idx))
        return _reshape(out, ())
    dim = _wrap_dim(dim, input._data.ndim)
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_select", IndexError,
                         _OUT_OF_RANGE)
    return IndexSelect.apply(input, _dim_key(input._data, dim, idx))


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
    _wrap_dim(dim, 0)
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


def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    """Out-of-place ``index_add_``: ``out[..., index[i], ...] += alpha * source[..., i, ...]``
    (indices must lie in ``[0, size)``: PyTorch's ``RuntimeError`` otherwise)."""
    idx = _index_1d(index, "index_add")
    if input._data.ndim == 0:
        x1, s1 = _zero_dim_case(input, dim, idx, source, "index_add")
        _check_nonneg_bounds(idx, 1, 0, "index_add", IndexError, _OUT_OF_RANGE)
        return _reshape(index_add(x1, 0, _make(idx), s1, alpha=alpha), ())
    dim = _wrap_dim(dim, input._data.ndim)
    _check_index_source(input, dim, idx, source, "index_add")
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_add")
    if alpha != 1:
        source = _ew.mul(source, alpha)
    a, b = _ew._promote(input, IndexPutAdd.apply(source, _dim_key(input._data, dim, idx)))
    return _IndexAddInto.apply(a, b)


def index_copy(input: Any, dim: int, index: Any, source: Any) -> Any:
    """Out-of-place ``index_copy_``: ``out[..., index[i], ...] = source[..., i, ...]``
    (indices must lie in ``[0, size)``: PyTorch's ``IndexError`` otherwise)."""
    idx = _index_1d(index, "index_copy")
    if input._data.ndim == 0:
        x1, s1 = _zero_dim_case(input, dim, idx, source, "index_copy")
        _check_nonneg_bounds(idx, 1, 0, "index_copy", IndexError)
        return _reshape(index_copy(x1, 0, _make(idx), s1), ())
    dim = _wrap_dim(dim, input._data.ndim)
    _check_index_source(input, dim, idx, source, "index_copy")
    _check_nonneg_bounds(idx, input._data.shape[dim], dim, "index_copy", IndexError)
    k = _dim_key(input._data, dim, idx)
    return IndexCopy.apply(input, source, k)


def index_fill(input: Any, dim: int, index: Any, value: Any) -> Any:
    """Out-of-place ``index_fill_``: the slices at ``index`` along ``dim`` set to ``value``
    (negative indices count from the end, as in PyTorch)."""
    idx = _index_1d(index, "index_fill")
    if _is_t(value) and value._data.ndim != 0:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    if input._data.ndim == 0:
        x1, _ = _zero_dim_case(input, dim, idx, None, "index_fill")
        return _reshape(index_fill(x1, 0, _make(idx), value), ())
    dim = _wrap_dim(dim, input._data.ndim)
    _check_bounds(idx, input._data.shape[dim], dim, "index_fill")
    k = _dim_key(input._data, dim, idx)
    return (IndexFillT if _is_t(value) else IndexFill).apply(input, _value_for(input, value, k), k)


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """Out-of-place ``index_put_``: ``out[indices] = values`` (``+=`` with ``accumulate``,
    where repeated indices add up)."""
    if not isinstance(indices, tuple | list):
        raise TypeError("index_put(): indices must be a tuple of tensors")
    for i, t in enumerate(indices):
        if not _is_t(t):
            raise TypeError(
                f"expected Tensor as element {i} in argument 1 (indices), but got "
                f"{type(t).__name__}"
            )
    key = tuple(indices)
    if not accumulate:
        return setitem(input, key, values)
    k = _parse_key(input._data, key)
    v = _value_for(input, values, k, "values")
    if not _is_t(v):
        from .creation import full

        v = full(k.out_shape(), v, dtype=input.dtype, device=input.device)
    v = _expand(v, k.out_shape())
    return _ew.add(input, IndexPutAdd.apply(v, k))


def take(input: Any, index: Any) -> Any:
    """``input.flatten()[index]`` (negative indices count from the end)."""
    index = _as_index_tensor(index, "take")
    idx = index._data
    if idx.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    n = input._data.size
    _check_take_bounds(idx, n)
    flat = _reshape(input, (n,))
    out = Take.apply(flat, _parse_key(flat._data, (idx.reshape(-1),)))
    return _reshape(out, tuple(idx.shape))


def _check_take_bounds(idx: Any, n: int) -> None:
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    bad = hi if hi >= n else (lo if lo < -n else None)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


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
    key = (_make(idx.reshape(-1)),)
    out = index_put(flat, key, src, accumulate) if accumulate else setitem(flat, key, src)
    return _reshape(out, tuple(input._data.shape))


# ---------------------------------------------------------------------------------------------
# masked ops


def _check_mask(mask: Any, name: str) -> Any:
    if not _is_t(mask):
        mask = _ew.as_tensor_arg(mask)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(
            f"{name} only supports boolean masks, but got mask with dtype {mask.dtype}; "
            "compare first, e.g. x > 0"
        )
    return mask._data


class MaskedFill(Op):
    """out = where(mask, value, x)          grad_x = where(mask, 0, grad)
    grad_value = sum(where(mask, grad, 0))   (value a 0-d tensor)"""

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any, mask: Any) -> Any:
        xp = ctx.xp
        ctx.mask = mask
        v = xp.asarray(value).astype(x.dtype)
        return xp.where(mask, v, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xp, mask = ctx.xp, ctx.mask
        gx = xp.where(mask, 0, grad) if ctx.needs_input_grad[0] else None
        gv = xp.where(mask, grad, 0) if ctx.needs_input_grad[1] else None
        return gx, gv, None


def masked_fill(input: Any, mask: Any, value: Any) -> Any:
    """``value`` where ``mask`` (broadcast) is True, ``input`` elsewhere."""
    m = _check_mask(mask, "masked_fill_")
    if _is_t(value):
        if value._data.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
    elif isinstance(value, np.generic):
        value = value.item()
    elif not isinstance(value, bool | int | float):
        raise TypeError(f"masked_fill(): value must be a number or 0-d tensor, got {type(value)}")
    _broadcast_shapes(tuple(input._data.shape), tuple(m.shape))
    return MaskedFill.apply(input, value, m)


def masked_select(input: Any, mask: Any) -> Any:
    """The 1-D tensor of ``input``'s elements where ``mask`` (broadcast) is True."""
    m = _check_mask(mask, "masked_select:")
    shape = _broadcast_shapes(tuple(input._data.shape), tuple(m.shape))
    x = _expand(input, shape)
    if tuple(m.shape) != shape:
        m = _backend.xp_of(m).broadcast_to(m, shape)
    return MaskedSelect.apply(x, _parse_key(x._data, (m,)))


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


# ---------------------------------------------------------------------------------------------
# nonzero


def nonzero(input: Any, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or a tuple of 1-D ones."""
    a = input._data
    xp = _backend.xp_of(a)
    if as_tuple:
        if a.ndim == 0:
            return (_make(xp.nonzero(a.reshape(1))[0].astype(np.int64)),)
        return tuple(_make(i.astype(np.int64, copy=False)) for i in xp.nonzero(a))
    if a.ndim == 0:
        n = int(a != 0)
        return _make(xp.zeros((n, 0), np.int64))
    return _make(xp.argwhere(a).astype(np.int64, copy=False))


def argwhere(input: Any) -> Any:
    """``nonzero(input)``: an (n, ndim) int64 tensor of the nonzero positions."""
    return nonzero(input)


# ---------------------------------------------------------------------------------------------
# sorting and selection


def _argsort(xp: Any, a: Any, axis: int, descending: bool) -> Any:
    """Stable argsort; descending keeps equal elements in their original order and puts NaN
    first (PyTorch's order), by sorting the reversed array."""
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = xp.flip(xp.argsort(xp.flip(a, axis), axis=axis, kind="stable"), axis)
    return (n - 1) - rev


class Sort(Op):
    """out = x's values at ``idx`` along ``dim``, reshaped to ``shape`` (a 0-d x counts as one
    element)          grad_x = grad scattered back to idx (as Gather's)"""

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, idx: Any, shape: tuple) -> Any:
        ctx.dim, ctx.idx, ctx.xshape = dim, idx, x.shape
        a = x.reshape(1) if x.ndim == 0 else x
        return ctx.xp.take_along_axis(a, idx, axis=dim).reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        shape = ctx.xshape
        g = grad.reshape(tuple(ctx.idx.shape))
        full = ctx.call(ScatterAdd, g, ctx.dim, ctx.idx, shape if len(shape) else (1,))
        return full.reshape(shape), None, None, None


class Topk(Sort):
    """topk's values (same rule as Sort)."""


class Kthvalue(Sort):
    """kthvalue's values (same rule as Sort)."""


def _take(x: Any, dim: int, idx: Any, op: Any = Sort, shape: Any = None) -> Any:
    """x's values at ``idx`` along ``dim`` (differentiable), reshaped to ``shape``."""
    return op.apply(x, dim, idx, tuple(idx.shape) if shape is None else tuple(shape))


def _dim_1d(input: Any, dim: int) -> tuple[Any, int, bool]:
    """A 0-d tensor is handled as a 1-element vector (PyTorch's sort/topk accept 0-d)."""
    if input._data.ndim == 0:
        _wrap_dim(dim, 0)
        return _atleast_1d(input), 0, True
    return input, _wrap_dim(dim, input._data.ndim), False


def sort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """``(values, indices)`` sorted along ``dim`` (always stable; NaN sorts as the largest)."""
    x, d, was0 = _dim_1d(input.detach(), dim)
    idx = _argsort(_backend.xp_of(x._data), x._data, d, descending)
    if was0:
        return _sort_rt(_take(input, d, idx, Sort, ()), _make(idx.reshape(())))
    return _sort_rt(_take(input, d, idx, Sort), _make(idx))


def argsort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """The int64 indices that sort ``input`` along ``dim``."""
    x, d, was0 = _dim_1d(input, dim)
    idx = _argsort(_backend.xp_of(x._data), x._data, d, descending)
    return _make(idx.reshape(()) if was0 else idx)


def msort(input: Any) -> Any:
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices, sorted."""
    x, d, was0 = _dim_1d(input.detach(), dim)
    a = x._data
    xp = _backend.xp_of(a)
    n = a.shape[d]
    k = operator.index(k)
    if not 0 <= k <= n:
        raise RuntimeError(
            f"selected index k out of range (k = {k}, but dimension {d} has size {n})"
        )
    if 0 < k < n and n > 64:  # partition first: O(n), then sort only the k candidates
        if largest:
            cand = xp.argpartition(a, n - k, axis=d)
            cand = xp.take(cand, xp.arange(n - k, n), axis=d)
        else:
            cand = xp.argpartition(a, k - 1, axis=d)
            cand = xp.take(cand, xp.arange(k), axis=d)
        order = _argsort(xp, xp.take_along_axis(a, cand, axis=d), d, largest)
        idx = xp.take_along_axis(cand, order, axis=d)
    else:
        idx = _argsort(xp, a, d, largest)
        idx = xp.take(idx, xp.arange(k), axis=d)
    if was0:
        return _topk_rt(_take(input, d, idx, Topk, ()), _make(idx.reshape(())))
    return _topk_rt(_take(input, d, idx, Topk), _make(idx))


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest value along ``dim`` and its index."""
    x, d, was0 = _dim_1d(input.detach(), dim)
    a = x._data
    xp = _backend.xp_of(a)
    n = a.shape[d]
    k = operator.index(k)
    if not 1 <= k <= n:
        raise RuntimeError(
            f"kthvalue(): selected number k out of range for dimension {d} (k = {k}, size {n})"
        )
    idx = _argsort(xp, a, d, False)
    idx = xp.take(idx, xp.arange(k - 1, k), axis=d)
    if was0:
        return _kthvalue_rt(_take(input, d, idx, Kthvalue, ()), _make(idx.reshape(())))
    shape = idx.shape
    if not keepdim:
        shape = tuple(s for i, s in enumerate(idx.shape) if i != d)
    return _kthvalue_rt(_take(input, d, idx, Kthvalue, shape), _make(idx.reshape(shape)))


def unique(input: Any, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The sorted unique elements (or slices along ``dim``), optionally with the inverse
    indices and counts."""
    a = input._data
    xp = _backend.xp_of(a)
    if dim is None:
        vals, inv, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True,
                                      equal_nan=False)
        inv = inv.reshape(a.shape)
    else:
        d = _wrap_dim(dim, a.ndim)
        vals, inv, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=d,
                                      equal_nan=False)
        inv = inv.reshape(-1)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


def _unique_result(vals: Any, inv: Any, counts: Any, ret_inv: bool, ret_counts: bool) -> Any:
    out = [_make(vals)]
    if ret_inv:
        out.append(_make(inv.astype(np.int64, copy=False)))
    if ret_counts:
        out.append(_make(counts.astype(np.int64, copy=False)))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Any, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    a = input._data
    xp = _backend.xp_of(a)
    if dim is None:
        flat = a.reshape(-1)
        rows = flat
    else:
        d = _wrap_dim(dim, a.ndim)
        moved = xp.moveaxis(a, d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        flat = moved
    n = rows.shape[0]
    change = xp.ones(n, dtype=bool)
    if n > 1:
        diff = rows[1:] != rows[:-1]
        change[1:] = diff if diff.ndim == 1 else diff.any(axis=1)
    vals = flat[change]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, d)
    starts = xp.flatnonzero(change)
    counts = xp.diff(xp.concatenate([starts, xp.asarray([n], dtype=starts.dtype)]))
    inv = xp.cumsum(change) - 1
    if dim is None:
        inv = inv.reshape(a.shape)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Any:
    """Insertion indices of ``input`` into ``sorted_sequence`` along its last dim (batched
    over the leading dims)."""
    seq = sorted_sequence._data
    xp = _backend.xp_of(seq)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    if sorter is not None:
        seq = xp.take_along_axis(seq, _raw(sorter), axis=-1)
    vals = input._data if _is_t(input) else xp.asarray(input)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        res = xp.searchsorted(seq.reshape(-1), vals, side=how)
    else:
        if vals.ndim != seq.ndim or tuple(vals.shape[:-1]) != tuple(seq.shape[:-1]):
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                "dimensions of boundaries tensor and input value tensor must match, but we got "
                f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}"
            )
        res = _batched_searchsorted(xp, seq, vals, right)
    return _make(xp.asarray(res).astype(np.int32 if out_int32 else np.int64))


def _batched_searchsorted(xp: Any, seq: Any, vals: Any, right: bool) -> Any:
    """Row-wise searchsorted without a Python loop: stable-sort each row of [values, sequence]
    (or [sequence, values] for right) and count the sequence elements before each value."""
    n, m = seq.shape[-1], vals.shape[-1]
    ct = xp.result_type(seq.dtype, vals.dtype)
    s2 = seq.reshape(-1, n).astype(ct)
    v2 = vals.reshape(-1, m).astype(ct)
    rows = s2.shape[0]
    cat = xp.concatenate([s2, v2] if right else [v2, s2], axis=1)
    order = xp.argsort(cat, axis=1, kind="stable")
    is_seq = order < n if right else order >= m
    before = xp.cumsum(is_seq, axis=1)
    is_val = ~is_seq
    slots = order[is_val].reshape(rows, m) - (n if right else 0)
    found = before[is_val].reshape(rows, m)
    res = xp.empty((rows, m), np.int64)
    res[xp.arange(rows)[:, None], slots] = found
    return res.reshape(vals.shape)


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
    """Counts of each value in a 1-D non-negative integer tensor (sums of ``weights``)."""
    a = input._data
    xp = _backend.xp_of(a)
    if a.ndim != 1 or a.dtype.kind not in "iub" or (a.size and int(a.min()) < 0):
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs (got shape {list(a.shape)},"
            f" dtype {input.dtype})."
        )
    if weights is None:
        return _make(xp.bincount(a, minlength=minlength).astype(np.int64, copy=False))
    w = _raw(weights)
    if w.shape != a.shape:
        raise RuntimeError(
            f"bincount(): weights should be 1-d and have the same length as input (input "
            f"{list(a.shape)}, weights {list(w.shape)})"
        )
    out = xp.bincount(a, weights=w, minlength=minlength)
    dt = w.dtype if w.dtype.kind == "f" else np.float64
    return _make(out.astype(dt, copy=False))


def histc(input: Any, bins: int = 100, min: Any = 0, max: Any = 0) -> Any:
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    elements outside are ignored."""
    a = input._data
    if a.dtype.kind != "f" and a.dtype.kind != "V":
        raise NotImplementedError(
            f'"histogram_cpu" not implemented for {input.dtype}: histc needs a floating tensor; '
            "convert first, e.g. x.float()"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    xp = _backend.xp_of(a)
    flat = a.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and flat.size:
        lo, hi = float(flat.min()), float(flat.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min (min {lo}, max {hi})")
    keep = flat[(flat >= lo) & (flat <= hi)]
    lo_a, hi_a = xp.asarray(lo, a.dtype), xp.asarray(hi, a.dtype)
    pos = ((keep - lo_a) / (hi_a - lo_a) * bins).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    return _make(xp.bincount(pos, minlength=bins).astype(a.dtype))


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


def fill_diagonal(input: Any, fill_value: Any, wrap: bool = False) -> Any:
    """The value ``input.fill_diagonal_(fill_value, wrap)`` writes."""
    a = input._data
    if a.ndim < 2:
        raise RuntimeError(f"dimensions must larger than 1 (got a tensor of shape {list(a.shape)})")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise RuntimeError(
            f"all dimensions of input must be of equal length (got shape {list(a.shape)})"
        )
    if _is_t(fill_value):
        fill_value = fill_value.item()
    return FillDiagonal.apply(input, fill_value, bool(wrap))
