"""What the indexing rooms share: PyTorch's indexing rules and the index checks (used by
``indexing.py``, ``indexing_scatter.py`` and ``sorting.py``).

- A key (``x[key]``) follows PyTorch's rules and is parsed once into a ``_Key``: integers are
  applied first as ``select``s, then the advanced (tensor, list, mask) indices are placed as in
  NumPy (adjacent ones in place, separated ones in front). ``_Key.gather`` reads ``x[key]``,
  ``_Key.assign`` writes it and ``_Key.scatter_add`` is the gather's adjoint.
- Scatter-adds never loop in Python: the target positions become flat linear indices, and one
  ``np.add.at`` adds floating values in index order in their own dtype, as PyTorch's CPU
  kernels (NumPy 2's ``add.at`` is as fast as ``bincount``); exact integer sums go through a
  sort + ``add.reduceat`` (``_accumulate``).
- Out-of-range indices raise PyTorch's exception, naming the index, the dim and its size
  (``_check_bounds``, ``_check_nonneg_bounds``).
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _backend
from .._tensor_base import TensorBase
from .creation import tensor
from .shape import reshape

# ---------------------------------------------------------------------------------------------
# small helpers


def keeps_index(arg: str, only_for: str | None = None, against: str = "input"
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate an op whose backward reads its index or mask argument ``arg``: the node then
    checks that tensor's version, as PyTorch's saved indices are checked, so changing the index
    in place before ``backward()`` raises PyTorch's error instead of sending the gradient to
    the new positions. With ``only_for``, only when that argument needs a gradient (PyTorch
    keeps ``index_add``'s index for the source's gradient alone). The index must be on the
    device of the tensor it indexes, ``against`` (a CPU index of a CUDA tensor raises, as in
    PyTorch: only ``x[index]`` takes one)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        names = list(inspect.signature(fn).parameters)
        pos = names.index(arg)
        dep = names.index(only_for) if only_for is not None else -1
        on = names.index(against)
        name = fn.__name__

        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            i = args[pos] if len(args) > pos else kwargs.get(arg)
            x = args[on] if len(args) > on else kwargs.get(against)
            if (isinstance(i, TensorBase) and isinstance(x, TensorBase)
                    and type(i._data) is not type(x._data)):
                _check_same_device(name, arg, i, against, x)
            out = fn(*args, **kwargs)
            if isinstance(out, TensorBase) and out._grad_fn is not None:
                if dep >= 0:
                    d = args[dep] if len(args) > dep else kwargs.get(only_for)
                    if not (isinstance(d, TensorBase) and d.requires_grad):
                        return out
                track_index_versions(out, args[pos] if len(args) > pos else kwargs.get(arg))
            return out
        return op
    return deco


def track_index_versions(out: Any, key: Any) -> Any:
    """Add the integer and bool tensors of ``key`` (one, or a tuple of them) to the version
    checks of ``out``'s node; returns ``out``."""
    node = out._grad_fn if isinstance(out, TensorBase) else None
    if node is None:
        return out
    versions = None
    for t in key if type(key) is tuple else (key,):
        if isinstance(t, TensorBase) and t._data.dtype.kind in "biu":
            counter = t._version
            if counter is None:
                counter = t._version = [0]
            if versions is None:
                versions = list(node._versions or ())
            versions.append((counter, counter[0], "index"))
    if versions is not None:
        node._versions = versions
    return out


def _check_same_device(op: str, arg: str, i: TensorBase, against: str, x: TensorBase) -> None:
    di, dx = _backend.device_of(i._data), _backend.device_of(x._data)
    if di != dx and "cuda" in (di.type, dx.type):
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{dx} and {di}! (when checking argument for argument {arg} in method {op}: "
            f"{against} of shape {tuple(x._data.shape)} is on {dx}, {arg} of shape "
            f"{tuple(i._data.shape)} on {di}). Move the {arg} with .to({str(dx)!r}), or "
            f"the {against} to {di}."
        )


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
    if isinstance(index, TensorBase):
        return index
    if isinstance(index, (list, tuple, np.ndarray, int)):
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
    if arr.size == 0 or (type(arr) is not np.ndarray and _backend.is_meta(arr)):
        return  # (a meta tensor has no values to check, as PyTorch's meta kernels assume)
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
    if arr.size == 0 or (type(arr) is not np.ndarray and _backend.is_meta(arr)):
        return  # (a meta tensor has no values to check, as PyTorch's meta kernels assume)
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


def _accumulate(xp: Any, idx: Any, w: Any, size: int, dtype: Any, base: Any = None,
                opmath: bool = False) -> Any:
    """out[idx[i]] += w[i] over a zero 1-D array of ``size`` (repeated indices add up), or
    over a copy of ``base`` (any shape of ``size`` elements, read in C order).

    Floating types on the CPU add one value at a time in index order and in their own dtype
    (``add.at``), as PyTorch's CPU kernels do: float32 sums stay float32 sums (1e8 + 1 - 1e8 +
    1 is 1.0, not 2.0), float16/bfloat16 round at each step. On other devices one ``bincount``
    (summed in float64, then cast back). Integer and bool types are summed exactly by a sort
    and ``add.reduceat``. ``opmath``: float16/bfloat16 accumulate in float32 and round once
    (PyTorch's scatter_add kernel and its index_add of slices; its index_add of a 1-D tensor
    and its index_put round at each step)."""
    if xp is np and (dtype.kind == "f" or dtype.kind == "V"):  # "V": bfloat16 from ml_dtypes
        acc = np.dtype(np.float32) if opmath and dtype.itemsize == 2 else dtype
        out = np.zeros(size, acc) if base is None else base.reshape(-1).astype(acc)
        np.add.at(out, idx, w.astype(acc, copy=False))
        return out.astype(dtype, copy=False)
    if base is not None:
        return base.reshape(-1) + _accumulate(xp, idx, w, size, dtype)
    if dtype.kind == "f" or dtype.kind == "V":
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


_ROWS_BLOCK = 1 << 20  # elements of gradient rows scattered at once by ``_add_rows``


def _add_rows(out: Any, idx: Any, rows: Any, take: Any = None) -> Any:
    """out[idx[i]] += rows[i] for the rows of 2-D host arrays (``out`` C-ordered), repeated
    indices summed in index order in ``out``'s dtype, as one scatter-add into ``out``: ``add.at``
    over the flat positions of a block of at most ``_ROWS_BLOCK`` elements at a time, so never
    a position array of the whole gradient (measured faster than a stable sort and
    ``add.reduceat``, and than ``bincount``'s float64 sums). ``take``: the i-th row is
    ``rows[take[i]]`` (a gather never built whole)."""
    n, d = idx.shape[0], out.shape[1]
    flat = out.reshape(-1)
    cols = np.arange(d, dtype=np.int64)
    step = max(1, _ROWS_BLOCK // max(1, d))
    for a in range(0, n, step):
        pos = idx[a:a + step].astype(np.int64).reshape(-1, 1) * d + cols
        src = rows[a:a + step] if take is None else rows[take[a:a + step]]
        np.add.at(flat, pos.reshape(-1), src.reshape(-1).astype(out.dtype, copy=False))
    return out


def _group_starts(xp: Any, s: Any) -> Any:
    """Start positions of the runs of equal values in the sorted 1-D ``s`` (non-empty)."""
    change = xp.empty(s.shape[0], dtype=bool)
    change[0] = True
    change[1:] = s[1:] != s[:-1]
    return xp.flatnonzero(change)


def _reshape(x: Any, shape: tuple) -> Any:
    if tuple(x._data.shape) == tuple(shape):
        return x
    return reshape(x, tuple(shape))


def _atleast_1d(t: Any) -> Any:
    return _reshape(t, (1,)) if t._data.ndim == 0 else t


# ---------------------------------------------------------------------------------------------
# keys: PyTorch's indexing rules, parsed once into a basic part and an advanced part


_INDEX_DTYPE_MSG = "tensors used as indices must be long, int, byte or bool tensors"


_NONE, _ELL, _BOOL, _INT, _SLICE, _ARR, _MASK = range(7)


class _Key:
    """A parsed index: ``x[key] == x[basic][vkey]``.

    ``basic`` holds integers, slices and None (a view of x); ``vkey`` (None when there is no
    advanced index) indexes that view with arrays and masks at ``adv`` = [(view dim, array,
    is_mask)], and full slices elsewhere."""

    __slots__ = ("shape", "basic", "trivial", "vshape", "vkey", "adv", "unique", "last",
                 "from_tensor", "news")

    # ``news``: (view dim, x's dim after it) for each None, whose stride is PyTorch's: the
    # size times the stride of the dim it goes before, or 1 at the end (NumPy's is 0)

    # ``last``: the kind of the key's last item that changes the view (an integer, a slice
    # that does not cover its dim, None), which names the view's node as in PyTorch

    def __eq__(self, other: object) -> bool:
        """By value, index arrays by their contents, for keys made of Python and NumPy values
        (``x[:, 0]``, a constant index list): compile trusts a region only when its two traces
        made equal keys. A key holding a tensor equals only itself."""
        if type(other) is not _Key:
            return NotImplemented
        if self.from_tensor or other.from_tensor:
            # an index given as a tensor may hold data the region computed (argsort, a 0-d
            # argmax): equal in two traces of equal inputs does not make it a constant
            return self is other
        return all(_backend.values_equal(getattr(self, k), getattr(other, k))
                   for k in self.__slots__)

    def __hash__(self) -> int:
        return hash((self.shape, self.trivial, self.last))

    def gather(self, arr: Any) -> Any:
        """``arr[key]``: a view for a basic key; a C-contiguous copy for an advanced one, as
        PyTorch's index gives (NumPy's fancy indexing puts the index dims first in memory
        when they are not the leading dims)."""
        v = arr if self.trivial else arr[self.basic]
        if self.vkey is None:
            if self.news:
                st, shp = list(v.strides), arr.shape
                for vd, d in self.news:
                    st[vd] = shp[d] * arr.strides[d] if d < len(shp) else arr.itemsize
                return _backend.with_strides(v, tuple(st))
            return v
        if len(self.adv) == 1 and self.adv[0][0]:
            # one index array after the first dim: take writes the result in order, one pass
            # (an index into dim 0 keeps the other dims' order, as PyTorch's does)
            vd, idx, is_mask = self.adv[0]
            if not is_mask:
                return _backend.xp_of(v).take(v, idx, axis=vd)
            if idx.ndim == 1:
                xp = _backend.xp_of(v)
                return xp.take(v, xp.flatnonzero(idx), axis=vd)
        out = v[self.vkey]
        if self.adv[0][0] == 0 or out.flags.c_contiguous:
            return out  # leading index dims: NumPy keeps the other dims' order, as PyTorch does
        return _backend.xp_of(out).ascontiguousarray(out)

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

    def scatter_add(self, grad: Any, xp: Any, base: Any = None, opmath: bool = False) -> Any:
        """zeros(shape) with ``grad`` added at ``key`` (repeated positions add up); with
        ``base``, a copy of it instead of zeros, each value added onto it in index order
        (``opmath``: float16/bfloat16 sums in float32, see ``_accumulate``)."""
        if self.vkey is None or self.unique:
            if base is None:
                out = xp.zeros(self.shape, grad.dtype)
                self.assign(out, grad)
            else:
                out = base.copy()
                self.assign(out, self.gather(out) + grad)
            return out
        vbase = None if base is None else (base if self.trivial else base[self.basic])
        gv = self._scatter_add_adv(grad, xp, vbase, opmath)
        if self.trivial:
            return gv
        out = xp.zeros(self.shape, grad.dtype) if base is None else base.copy()
        out[self.basic] = gv
        return out

    def _scatter_add_adv(self, grad: Any, xp: Any, base: Any = None,
                         opmath: bool = False) -> Any:
        vshape = self.vshape
        arrays, dims = [], []
        for vd, arr, is_mask in self.adv:
            if is_mask:
                arrays.extend(xp.nonzero(arr))
                dims.extend(range(vd, vd + arr.ndim))
            else:
                a = arr.astype(np.int64, copy=False)
                if vshape[vd] and a.size and int(a.min()) < 0:
                    a = xp.where(a < 0, a + vshape[vd], a)
                arrays.append(a)
                dims.append(vd)
        if (dims == [0] and base is None and xp is np and grad.dtype.kind == "f"
                and grad.dtype.itemsize >= 4 and vshape[0] and arrays[0].ndim == 1
                and _numel(vshape) >= 16 * vshape[0]):
            # one index array on the leading dim of rows of 16 and more (index_select(0),
            # x[idx]): whole rows summed into one buffer, in index order (= add.at)
            width = _numel(vshape) // vshape[0]
            out = np.zeros(vshape, grad.dtype)  # (owns its memory: no copy as a .grad)
            _add_rows(out.reshape(vshape[0], width), arrays[0],
                      grad.reshape(arrays[0].shape[0], width))
            return out
        # each gathered element's offset in the (C-contiguous) view: the advanced dims' part
        # ``lin`` plus the other dims' part ``rest_off``, so the sum lands in the view's order
        cs = _c_strides(vshape)
        lin = arrays[0] * cs[dims[0]] if cs[dims[0]] != 1 else arrays[0]
        for a, d in zip(arrays[1:], dims[1:]):
            lin = lin + a * cs[d]
        if lin.ndim == 0:
            lin = lin.reshape(1)
        rest_dims = [d for d in range(len(vshape)) if d not in dims]
        nb = lin.ndim
        g = grad
        adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
        if adjacent and dims[0] > 0:  # the broadcast index dims sit in place: move them first
            g = xp.moveaxis(g, tuple(range(dims[0], dims[0] + nb)), tuple(range(nb)))
        rest_off = None
        for d in rest_dims:
            if vshape[d] != 1:
                step = xp.arange(vshape[d], dtype=np.int64) * cs[d]
                rest_off = step if rest_off is None else (
                    rest_off.reshape(-1, 1) + step).reshape(-1)
        comb = lin.reshape(-1) if rest_off is None else (
            lin.reshape(-1, 1) + rest_off).reshape(-1)
        acc = _accumulate(xp, comb, g.reshape(-1), _numel(vshape), grad.dtype, base, opmath)
        return acc.reshape(vshape)


def _seq_as_tuple(key: Any) -> bool:
    """PyTorch (like old NumPy) reads a short list holding sequences, tensors, slices, None or
    Ellipsis as a tuple of indices: ``x[[idx0, idx1]]`` is ``x[idx0, idx1]``."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (slice, list, tuple, range, TensorBase)):
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
    if any(isinstance(e, TensorBase) for e in k):
        arr = tensor(list(k))._data
        if not _ok_index_dtype(arr.dtype):
            raise TypeError(
                "only integer tensors of a single element can be converted to an index (got a "
                f"sequence of {arr.dtype} tensors)"
            )
        return arr
    if any(isinstance(e, (str, bytes)) for e in k):
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
    if isinstance(k, TensorBase):
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
    elif isinstance(k, (list, tuple, range)):
        arr = _seq_index_array(k)
    elif isinstance(k, (str, bytes)):
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
                # bounds given as 0-d tensors (nanoGPT's data[i:i+block_size] over i in ix)
                k = _check_slice(k)  # or NumPy integers: as ints (PyTorch's errors otherwise)
                key = key[:d] + (k,) + key[d + 1:]
                a, b, c = k.start, k.stop, k.step
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
    kk.from_tensor = False
    kk.news = ()
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
        elif isinstance(k, (int, np.integer)):
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
    news: list = []
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
            news.append((len(vshape), d))
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
    kk.from_tensor = any(isinstance(k, TensorBase) for k in key)
    kk.trivial = all(type(b) is slice and b == slice(None) for b in basic)
    kk.basic = tuple(basic) + (Ellipsis,)  # the Ellipsis keeps an all-integer key a 0-d view
    kk.vshape = tuple(vshape)
    kk.adv = adv
    kk.news = tuple(news)
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
