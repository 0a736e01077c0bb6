"""The meta device: arrays with a shape, a dtype and strides, and no data (PyTorch's ``meta``).

``MetaArray`` is the array of a ``device="meta"`` tensor. It holds no memory, so a
``(100000, 100000)`` float32 meta tensor costs a few hundred bytes. It speaks NumPy's protocols
(``__array_ufunc__``, ``__array_function__``, the ndarray methods ember's ops call), so every op
runs its ordinary code and NumPy's rules give the result's shape and dtype:

- ufuncs (``a + b``, ``np.exp``, ``np.add.reduce``, ``matmul``...) compute the broadcast shape,
  and the dtype by running the ufunc on 0-d stand-ins (PyTorch's promotion already happened in
  the op);
- views (slicing, ``reshape``, ``transpose``, ``broadcast_to``, ``as_strided``...) keep strides
  and a storage offset, computed by applying NumPy's own view function to a *probe*: an array
  header that claims the meta array's geometry over a tiny buffer. View functions never read
  memory, and only view functions are ever applied to a probe;
- reductions, joins, gathers, ``einsum``, ``pad`` have shape rules; structural functions run on
  arrays of a zero-byte dtype (NumPy computes the shape, nothing is allocated);
- any other NumPy function runs on zero-stride stand-ins (one element broadcast to the shape:
  safe to read, the shape and dtype come out right; the result is allocated once, then dropped);
- functions whose result shape depends on the values (``nonzero``, ``unique``, boolean-mask
  indexing, ``bincount``) raise ``NotImplementedError``, as PyTorch does on meta; reading values
  (``item()``, ``tolist()``, ``np.asarray``) raises too. A value check inside an op
  (``if (x < 0).any(): raise``) passes: an ``any()`` of a meta array is false and an ``all()``
  true, the valid-data assumption PyTorch's meta kernels make.

Writes (``a[i] = v``, ``np.copyto``, ``out=``) are no-ops. ``namespace`` is the device's array
module (``device("meta").xp``): creation functions that make meta arrays, NumPy for the rest.
This module sits in the backend layer and imports nothing from ember.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"
_V0 = np.dtype([])  # a dtype of zero bytes: arrays of any shape allocate nothing


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    """C-order strides in bytes (PyTorch's: a size-0 or size-1 dim counts as 1)."""
    out = []
    acc = itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _layout_strides(template: Any, shape: tuple, itemsize: int) -> tuple:
    """Dense strides for a new array of ``shape`` laid out in ``template``'s memory order (NumPy's
    and PyTorch's ``preserve_format``: a transposed input gives a transposed result); C order
    when the template is C-contiguous, broadcast or of another shape."""
    if (template is None or template.shape != shape or template.flags.c_contiguous
            or any(s == 0 and n > 1 for s, n in zip(template.strides, shape))):
        return _c_strides(shape, itemsize)
    order = sorted(range(len(shape)), key=lambda i: (-abs(template.strides[i]), i))
    strides = [0] * len(shape)
    acc = itemsize
    for i in reversed(order):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


class _Flags:
    """The part of ``ndarray.flags`` ember reads."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")
    writeable = True
    aligned = True
    writebackifcopy = False
    _NAMES = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
              "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
              "OWNDATA": "owndata", "O": "owndata", "WRITEABLE": "writeable", "W": "writeable",
              "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy"}

    def __init__(self, m: MetaArray) -> None:
        self.c_contiguous = _contiguous(m.shape, m.strides, m.itemsize, reversed)
        self.f_contiguous = _contiguous(m.shape, m.strides, m.itemsize, iter)
        self.owndata = m.base is None

    @property
    def contiguous(self) -> bool:
        return self.c_contiguous

    def __getitem__(self, name: str) -> bool:
        return getattr(self, self._NAMES[name.upper()])


def _contiguous(shape: tuple, strides: tuple, itemsize: int, walk: Any) -> bool:
    if 0 in shape:
        return True
    acc = itemsize
    for n, s in walk(list(zip(shape, strides))):
        if n != 1:
            if s != acc:
                return False
            acc *= n
    return True


class MetaArray(NDArrayOperatorsMixin):
    """An array with a shape, a dtype and strides (in bytes, as NumPy's), and no data.

    ``offset`` is the first element's position in its storage (elements); ``base`` the array
    that owns the storage (None for an array that owns it)."""

    __slots__ = ("shape", "dtype", "strides", "offset", "base", "_truth")
    __hash__ = object.__hash__  # identity, as ndarray's owners key them (NDArrayOperatorsMixin's
    # __eq__ would otherwise make the class unhashable)

    def __init__(self, shape: Any, dtype: Any, strides: Any = None, offset: int = 0,
                 base: MetaArray | None = None) -> None:
        self.shape = tuple(operator.index(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimensions are not allowed: {self.shape}")
        self.dtype = np.dtype(dtype)
        self.strides = (_c_strides(self.shape, self.dtype.itemsize) if strides is None
                        else tuple(int(s) for s in strides))
        self.offset = int(offset)
        self.base = base
        self._truth: bool | None = None

    # -- attributes ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> _Flags:
        return _Flags(self)

    @property
    def T(self) -> MetaArray:
        return self.transpose()

    @property
    def mT(self) -> MetaArray:
        return self.swapaxes(-1, -2)

    @property
    def real(self) -> MetaArray:
        return self

    @property
    def root(self) -> MetaArray:
        """The array that owns the storage this one views."""
        return self if self.base is None else self.base

    def storage_elements(self) -> int:
        """How many elements the storage holds (the owner's extent)."""
        r = self.root
        if r.size == 0:
            return 0
        return 1 + sum((n - 1) * abs(s) for n, s in zip(r.shape, r.strides)) // r.itemsize

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # -- no data ------------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise NotImplementedError(NO_DATA)

    def __bool__(self) -> bool:
        if self._truth is not None:  # a value check inside an op (any()/all()): data is valid
            return self._truth
        raise RuntimeError(f"{NO_ITEM} (the operation reads the tensor's values, which a meta "
                           "tensor does not have)")

    def item(self, *args: Any) -> Any:
        raise RuntimeError(NO_ITEM)

    __float__ = __int__ = __index__ = __complex__ = item

    def tolist(self) -> Any:
        raise NotImplementedError(NO_DATA)

    def tobytes(self, *args: Any, **kwargs: Any) -> bytes:
        raise NotImplementedError(NO_DATA)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_DATA)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_DATA)

    # -- writes are no-ops ----------------------------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        return None

    def fill(self, value: Any) -> None:
        return None

    # -- views --------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> MetaArray:
        parts = key if type(key) is tuple else (key,)
        if all(_basic_index(k) for k in parts):
            return _view(self, _probe(self)[key])
        return _advanced_getitem(self, parts)

    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> MetaArray:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        if order not in ("C", "A"):
            raise NotImplementedError(f"reshape(order={order!r}) of a meta array")
        p = _probe(self)
        if copy is not True:
            try:
                return _view(self, p.reshape(shape, copy=False))
            except ValueError as e:
                if "cannot reshape" in str(e):
                    raise
        new_shape = np.empty(self.shape, _V0).reshape(shape).shape  # NumPy's -1 and errors
        return MetaArray(new_shape, self.dtype)

    def transpose(self, *axes: Any) -> MetaArray:
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
            axes = () if axes[0] is None else tuple(axes[0])
        return _view(self, _probe(self).transpose(*axes))

    def swapaxes(self, a: int, b: int) -> MetaArray:
        return _view(self, _probe(self).swapaxes(a, b))

    def squeeze(self, axis: Any = None) -> MetaArray:
        return _view(self, _probe(self).squeeze(axis))

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> MetaArray:
        return _view(self, _probe(self).diagonal(offset, axis1, axis2))

    def ravel(self, order: str = "C") -> MetaArray:
        return self.reshape(-1)

    def flatten(self, order: str = "C") -> MetaArray:
        return MetaArray((self.size,), self.dtype)

    def view(self, dtype: Any = None, type: Any = None) -> MetaArray:  # noqa: A002 - NumPy's name
        if type is not None or (isinstance(dtype, builtins_type)
                                and issubclass(dtype, np.ndarray)):
            raise NotImplementedError(NO_DATA)
        if dtype is None:
            return _view(self, _probe(self))
        dt = np.dtype(dtype)
        v = _probe(self).view(f"|V{dt.itemsize}")
        out = MetaArray(v.shape, dt, v.strides, _offset_of(v, self.itemsize), self.root)
        return out

    # -- copies -------------------------------------------------------------------------------
    def copy(self, order: str = "C") -> MetaArray:
        if order == "K":
            return MetaArray(self.shape, self.dtype,
                             _layout_strides(self, self.shape, self.itemsize))
        return MetaArray(self.shape, self.dtype)

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> MetaArray:
        dt = np.dtype(dtype)
        if not copy and dt == self.dtype:
            return self
        return MetaArray(self.shape, dt, _layout_strides(self, self.shape, dt.itemsize))

    def __copy__(self) -> MetaArray:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> MetaArray:
        return self.copy()

    def __reduce__(self) -> tuple:
        return (MetaArray, (self.shape, self.dtype.str if self.dtype.names is None
                            else self.dtype, self.strides))

    # -- NumPy's protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        rule = _RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        if func in _REFUSED:
            raise NotImplementedError(_refusal(func))
        return _generic(func, args, kwargs)

    # the ndarray methods that are NumPy functions (``a.sum(axis=1)`` is ``np.sum(a, axis=1)``)
    def __getattr__(self, name: str) -> Any:
        fn = _METHODS.get(name)
        if fn is None:
            raise AttributeError(f"'MetaArray' object has no attribute '{name}'")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


builtins_type = type
_METHODS: dict[str, Any] = {
    name: getattr(np, name) for name in (
        "sum", "prod", "mean", "std", "var", "max", "min", "any", "all", "argmax", "argmin",
        "cumsum", "cumprod", "clip", "round", "conj", "conjugate", "dot", "repeat", "take",
        "nonzero", "sort", "argsort", "partition", "argpartition", "searchsorted", "trace",
        "ptp", "compress", "choose", "put")
}


def is_meta(x: Any) -> bool:
    return type(x) is MetaArray


class WrapperDataError(RuntimeError):
    """Reading the values of a wrapper subclass's own array."""


class WrapperArray(NDArrayOperatorsMixin):
    """The array of a tensor made by ``Tensor._make_wrapper_subclass``: PyTorch's metadata (a
    shape, a dtype, strides in bytes, a storage offset in elements, a device) and no storage.
    Metadata reads answer; anything that would read or compute with values raises
    ``WrapperDataError`` naming the class, since the data lives in a tensor the subclass wraps."""

    __slots__ = ("shape", "dtype", "strides", "offset", "device", "owner")
    __hash__ = object.__hash__  # (the operators, through __array_ufunc__, refuse)
    base = None

    def __init__(self, shape: tuple, dtype: Any, strides: tuple, offset: int, device: Any,
                 owner: str) -> None:
        self.shape, self.dtype, self.strides = shape, np.dtype(dtype), strides
        self.offset, self.device, self.owner = offset, device, owner

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    flags = property(lambda self: _Flags(self))

    def __repr__(self) -> str:
        return f"WrapperArray(shape={self.shape}, dtype={self.dtype}, device={self.device})"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise WrapperDataError(
            f"{self.owner} (made by Tensor._make_wrapper_subclass, shape {self.shape}, "
            f"{self.dtype}) has no data of its own: an operation tried to read its values. Its "
            "class's __torch_function__ (or __torch_dispatch__) must unwrap it and pass the "
            "tensor it wraps (ember has no dispatch layer below __torch_function__).")

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __setitem__ = _refuse
    __bool__ = __float__ = __int__ = __index__ = __iter__ = __len__ = _refuse
    item = tolist = tobytes = copy = astype = reshape = view = get = __dlpack__ = _refuse

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()


def empty(shape: Any, dtype: Any = float, order: str = "C") -> MetaArray:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return MetaArray(shape, dtype)


def like(arr: Any) -> MetaArray:
    """A meta array of ``arr``'s shape and dtype (strides kept when ``arr`` is dense, as
    PyTorch's ``.to("meta")`` keeps them)."""
    if type(arr) is MetaArray:
        return arr
    if not hasattr(arr, "shape") or not hasattr(arr, "dtype"):
        arr = np.asarray(arr)
    shape, dt = tuple(arr.shape), np.dtype(arr.dtype)
    strides = getattr(arr, "strides", None)
    if strides is not None and _dense(shape, strides, dt.itemsize):
        return MetaArray(shape, dt, strides)
    return MetaArray(shape, dt)


def _dense(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """No gaps and no repeats: some permutation of the dims is C-contiguous."""
    if 0 in shape:
        return False
    dims = sorted((abs(s), n) for n, s in zip(shape, strides) if n != 1)
    acc = itemsize
    for s, n in dims:
        if s != acc:
            return False
        acc *= n
    return all(s >= 0 for s in strides)


# ---------------------------------------------------------------------------------------------
# probes: NumPy's view functions applied to an array header with the meta array's geometry


class _Interface:
    __slots__ = ("__array_interface__",)


_PROBE_BUFFER = np.zeros(64, np.uint8)
_PROBE_ADDRESS = _PROBE_BUFFER.__array_interface__["data"][0]
_PROBE_SPACING = 1 << 44  # each probe of one call starts in its own address range


def _probe(m: MetaArray, slot: int = 0) -> np.ndarray:
    """A read-only array header with ``m``'s shape, strides and offset over a tiny buffer. Only
    view functions (which compute a new header and never touch memory) may be applied to it."""
    holder = _Interface()
    holder.__array_interface__ = {
        "data": (_PROBE_ADDRESS + slot * _PROBE_SPACING + m.offset * m.itemsize, True),
        "shape": m.shape, "strides": m.strides, "typestr": f"|V{m.itemsize}", "version": 3,
    }
    return np.asarray(holder)


def _offset_of(v: np.ndarray, itemsize: int, slot: int = 0) -> int:
    return (v.__array_interface__["data"][0] - _PROBE_ADDRESS - slot * _PROBE_SPACING) // itemsize


def _view(m: MetaArray, v: np.ndarray, slot: int = 0) -> MetaArray:
    """The meta array whose geometry is the probe view ``v`` of ``m``."""
    return MetaArray(v.shape, m.dtype, v.strides, _offset_of(v, m.itemsize, slot), m.root)


def _basic_index(k: Any) -> bool:
    return (k is None or k is Ellipsis or type(k) is slice
            or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))))


def _advanced_getitem(m: MetaArray, parts: tuple) -> MetaArray:
    keys = []
    for k in parts:
        kd = getattr(k, "dtype", None)
        if (kd is not None and kd == np.bool_) or isinstance(k, (bool, np.bool_)) or (
                isinstance(k, list) and _has_bool(k)):
            raise NotImplementedError(
                "indexing a meta tensor with a boolean mask has a data-dependent output shape "
                "(aten::nonzero has no meta kernel, as in PyTorch); index with integer tensors "
                "or use torch.where")
        keys.append(_standin(k) if type(k) is MetaArray else k)
    return MetaArray(np.empty(m.shape, _V0)[tuple(keys)].shape, m.dtype)


def _has_bool(seq: list) -> bool:
    for x in seq:
        if isinstance(x, list):
            if _has_bool(x):
                return True
        elif isinstance(x, (bool, np.bool_)):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# stand-ins


def _standin(m: Any) -> Any:
    """A zero-stride NumPy array of ``m``'s shape and dtype: one zero element, safe to read."""
    return np.broadcast_to(np.zeros((), m.dtype), m.shape)


def _tiny(x: Any) -> Any:
    """A 0-d array of ``x``'s dtype for dtype resolution; Python scalars stay weak (NEP 50)."""
    if type(x) is MetaArray or isinstance(x, np.ndarray):
        return np.zeros((), x.dtype)
    return x


def _zero_bytes(x: Any) -> Any:
    if type(x) is MetaArray or isinstance(x, np.ndarray):
        return np.broadcast_to(np.empty((), _V0), x.shape)
    return x


def _shape(x: Any) -> tuple:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else tuple(np.shape(x))


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _to_meta(r: Any) -> Any:
    """A stand-in computation's result as meta arrays (fresh, C-contiguous)."""
    if isinstance(r, np.ndarray):
        return MetaArray(r.shape, r.dtype)
    if isinstance(r, np.generic):
        return MetaArray((), r.dtype)
    if isinstance(r, tuple):
        items = [_to_meta(x) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_to_meta(x) for x in r]
    return r


def _map(x: Any, fn: Any) -> Any:
    if type(x) is MetaArray:
        return fn(x)
    if type(x) in (list, tuple):
        return type(x)(_map(y, fn) for y in x)
    return x


def _generic(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``func`` on zero-stride stand-ins: NumPy's own shape and dtype rules, at the price of
    allocating the result once."""
    a = _map(args, _standin)
    k = {key: _map(v, _standin) for key, v in kwargs.items()}
    try:
        res = _quiet(func, *a, **k)
    except np.linalg.LinAlgError:  # (a zero stand-in is singular: retry with the identity)
        a = _map(args, _eye_standin)
        k = {key: _map(v, _eye_standin) for key, v in kwargs.items()}
        res = _quiet(func, *a, **k)
    return _to_meta(res)


def _eye_standin(m: MetaArray) -> np.ndarray:
    if m.ndim >= 2 and m.shape[-1] == m.shape[-2]:
        return np.broadcast_to(np.eye(m.shape[-1], dtype=m.dtype), m.shape)
    return _standin(m)


# ---------------------------------------------------------------------------------------------
# ufuncs


def _ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    out = kwargs.pop("out", None)
    kwargs.pop("where", None)
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if o is not None and type(o) is not MetaArray:
                raise NotImplementedError(NO_DATA)
    if method == "at":
        return None
    if method == "__call__":
        if ufunc.signature is not None:
            shapes = _gufunc_shape(ufunc, inputs)
            dts = _quiet(ufunc, *[np.zeros((1, 1), x.dtype) if getattr(x, "ndim", 0)
                                  else _tiny(x) for x in inputs], **kwargs)
            res: Any = MetaArray(shapes, dts.dtype)
        else:
            shape = np.broadcast_shapes(*[_shape(x) for x in inputs])
            dts = _quiet(ufunc, *[_tiny(x) for x in inputs], **kwargs)
            template = next((x for x in inputs if type(x) is MetaArray and x.shape == shape),
                            None)
            if ufunc.nout == 1:
                res = MetaArray(shape, dts.dtype,
                                _layout_strides(template, shape, dts.dtype.itemsize))
            else:
                res = tuple(MetaArray(shape, d.dtype) for d in dts)
    elif method in ("reduce", "accumulate"):
        x = inputs[0]
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        tiny = np.zeros((1,) * x.ndim, x.dtype)
        if method == "reduce":
            dt = _quiet(ufunc.reduce, tiny, axis=axis, keepdims=keepdims, **kwargs).dtype
            res = MetaArray(_reduced(x.shape, axis, keepdims, ufunc, kwargs), dt)
        else:
            dt = _quiet(ufunc.accumulate, tiny, axis=axis, **kwargs).dtype
            res = MetaArray(x.shape, dt)
    elif method == "reduceat":
        x, idx = inputs[0], inputs[1]
        axis = kwargs.pop("axis", 0) % max(x.ndim, 1)
        dt = _quiet(ufunc.reduceat, np.zeros((1,) * x.ndim, x.dtype), [0], axis=axis,
                    **kwargs).dtype
        res = MetaArray(x.shape[:axis] + (len(idx),) + x.shape[axis + 1:], dt)
    elif method == "outer":
        a, b = inputs
        dt = _quiet(ufunc, _tiny(a), _tiny(b), **kwargs).dtype
        res = MetaArray(_shape(a) + _shape(b), dt)
    else:
        return NotImplemented
    if out is not None:
        return out[0] if len(outs) == 1 else outs
    return res


def _reduced(shape: tuple, axis: Any, keepdims: bool, ufunc: Any = None,
             kwargs: dict | None = None) -> tuple:
    nd = len(shape)
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {operator.index(a) % max(nd, 1) for a in ((axis,) if isinstance(
            axis, (int, np.integer)) else axis)}
    if (ufunc is not None and ufunc.identity is None and "initial" not in (kwargs or {})
            and any(shape[a] == 0 for a in axes if a < nd)):
        raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has "
                         "no identity")
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _gufunc_shape(ufunc: Any, inputs: tuple) -> tuple:
    if ufunc.__name__ not in ("matmul", "vecdot", "matvec", "vecmat"):
        return _to_meta(_quiet(ufunc, *[_standin(x) if type(x) is MetaArray else x
                                        for x in inputs])).shape
    a, b = (_shape(x) for x in inputs)
    if ufunc.__name__ == "vecdot":
        return np.broadcast_shapes(a[:-1], b[:-1])
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {b2[-2]} is different from {a2[-1]})")
    out = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


# ---------------------------------------------------------------------------------------------
# NumPy functions: rules


def _dtype_of(func: Any, *args: Any, **kwargs: Any) -> np.dtype:
    """The dtype ``func`` gives on one-element stand-ins of the arguments."""
    def one(x: Any) -> Any:
        if type(x) is MetaArray or isinstance(x, np.ndarray):
            return np.zeros((1,) * x.ndim, x.dtype)
        if type(x) in (list, tuple):
            return type(x)(one(y) for y in x)
        return x
    return np.result_type(_quiet(func, *[one(a) for a in args],
                                 **{k: one(v) for k, v in kwargs.items()}))


def _reduction(func: Any, truth: bool | None = None) -> Any:
    def rule(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **kw: Any) -> Any:
        kw.pop("where", None)
        extra = {"dtype": dtype} if dtype is not None else {}
        dt = _dtype_of(func, a, axis=axis, keepdims=keepdims, **extra, **kw)
        if func in (np.argmax, np.argmin, np.nanargmax, np.nanargmin) and axis is None:
            shape = (1,) * a.ndim if keepdims else ()
        else:
            shape = _reduced(a.shape, axis, keepdims)
        res = MetaArray(shape, dt)
        res._truth = truth
        return out if out is not None else res
    return rule


def _argreduce(func: Any) -> Any:
    def rule(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        if axis is None:
            shape = (1,) * a.ndim if keepdims else ()
        else:
            shape = _reduced(a.shape, axis, keepdims)
        return MetaArray(shape, np.intp)
    return rule


def _same_shape(func: Any, flatten_on_none: bool = True, default_axis: Any = -1) -> Any:
    def rule(a: Any, *args: Any, **kw: Any) -> Any:
        dt = _dtype_of(func, a, *args, **kw)
        axis = kw.get("axis", default_axis)
        if flatten_on_none and axis is None and a.ndim != 1:
            return MetaArray((a.size,), dt)
        return MetaArray(a.shape, dt)
    return rule


def _elementwise(func: Any) -> Any:
    def rule(*args: Any, **kw: Any) -> Any:
        out = kw.pop("out", None)
        arrays = [x for x in list(args) + list(kw.values())
                  if type(x) is MetaArray or isinstance(x, np.ndarray)]
        shape = np.broadcast_shapes(*[x.shape for x in arrays])
        dt = _quiet(func, *[_tiny(x) for x in args], **{k: _tiny(v) for k, v in kw.items()})
        return out if out is not None else MetaArray(shape, np.result_type(dt))
    return rule


def _where(cond: Any, *rest: Any) -> Any:
    if not rest:
        raise NotImplementedError(_refusal(np.nonzero))
    return _elementwise(np.where)(cond, *rest)


def _like(kind: str) -> Any:
    def rule(a: Any, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True,
             shape: Any = None, **kw: Any) -> MetaArray:
        if kind == "full":  # full_like(a, fill_value, dtype=None...)
            if dtype is None and args:
                dtype = np.result_type(a.dtype) if not isinstance(a, MetaArray) else a.dtype
        dt = np.dtype(dtype) if dtype is not None else a.dtype
        if shape is not None:
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            return MetaArray(shape, dt)
        return MetaArray(a.shape, dt, _layout_strides(a if type(a) is MetaArray else None,
                                                      _shape(a), dt.itemsize))
    return rule


def _copy(a: Any, order: str = "K", subok: bool = False) -> MetaArray:
    return a.copy("K" if order in ("K", "A") else order)


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    arrays = list(arrays)
    shape = _quiet(np.concatenate, [_zero_bytes(x) for x in arrays], axis=axis).shape
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[_tiny(x) for x in arrays])
    return out if out is not None else MetaArray(shape, dt)


def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    arrays = list(arrays)
    shape = _quiet(np.stack, [_zero_bytes(x) for x in arrays], axis=axis).shape
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[_tiny(x) for x in arrays])
    return out if out is not None else MetaArray(shape, dt)


def _structural(func: Any) -> Any:
    """Functions that move elements without computing with them: the shape from a zero-byte
    array, the dtype from the input."""
    def rule(a: Any, *args: Any, **kw: Any) -> Any:
        out = kw.pop("out", None)
        if func is np.repeat and type(args[0] if args else kw.get("repeats")) is MetaArray:
            raise NotImplementedError(_refusal(func))
        args = tuple(_index_standin(x) if type(x) is MetaArray else x for x in args)
        kw = {k: _index_standin(v) if type(v) is MetaArray else v for k, v in kw.items()}
        shape = _quiet(func, _zero_bytes(a), *args, **kw).shape
        return out if out is not None else MetaArray(shape, a.dtype)
    return rule


def _index_standin(x: MetaArray) -> Any:
    return _standin(x) if x.dtype.kind in "iu" else _zero_bytes(x)


def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> MetaArray:
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    return MetaArray(tuple(int(n + w[0] + w[1]) for n, w in zip(array.shape, widths)),
                     array.dtype)


def _einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
            casting: str = "safe", optimize: Any = False) -> Any:
    spec = operands[0]
    if not isinstance(spec, str):
        return _generic(np.einsum, operands, {"dtype": dtype} if dtype else {})
    arrays = operands[1:]
    spec = spec.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    ellipses = []
    for sub, x in zip(lhs.split(","), arrays):
        shp = _shape(x)
        if "..." in sub:
            pre, post = sub.split("...")
            k = len(shp) - len(pre) - len(post)
            ellipses.append(shp[len(pre):len(pre) + k])
            labels, dims = pre + post, shp[:len(pre)] + shp[len(pre) + k:]
        else:
            labels, dims = sub, shp
        for c, n in zip(labels, dims):
            counts[c] = counts.get(c, 0) + 1
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"operands could not be broadcast together: label '{c}' has "
                                 f"sizes {sizes[c]} and {n}")
    ell = np.broadcast_shapes(*ellipses) if ellipses else ()
    if not arrow:
        rhs = ("..." if ellipses else "") + "".join(sorted(c for c, k in counts.items() if k == 1))
    pre, _, post = rhs.partition("...")
    shape = (tuple(sizes[c] for c in pre) + (ell if "..." in rhs else ())
             + tuple(sizes[c] for c in post))
    tiny = [np.zeros((1,) * len(_shape(x)), x.dtype) if hasattr(x, "dtype") else x
            for x in arrays]
    dt = _quiet(np.einsum, operands[0], *tiny, **({"dtype": dtype} if dtype else {})).dtype
    return out if out is not None else MetaArray(shape, dt)


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        shape = np.broadcast_shapes(sa, sb)
    elif len(sb) == 1:
        shape = sa[:-1]
    else:
        shape = sa[:-1] + sb[:-2] + sb[-1:]
    dt = np.result_type(_tiny(a), _tiny(b))
    return out if out is not None else MetaArray(shape, dt)


def _tensordot(a: Any, b: Any, axes: Any = 2) -> MetaArray:
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)):
        ia, ib = list(range(len(sa) - axes, len(sa))), list(range(axes))
    else:
        ia, ib = axes
        ia = [ia] if isinstance(ia, (int, np.integer)) else list(ia)
        ib = [ib] if isinstance(ib, (int, np.integer)) else list(ib)
    ia = [i % len(sa) for i in ia]
    ib = [i % len(sb) for i in ib]
    shape = (tuple(n for i, n in enumerate(sa) if i not in ia)
             + tuple(n for i, n in enumerate(sb) if i not in ib))
    return MetaArray(shape, np.result_type(_tiny(a), _tiny(b)))


def _outer(a: Any, b: Any, out: Any = None) -> MetaArray:
    return MetaArray((math.prod(_shape(a)), math.prod(_shape(b))),
                     np.result_type(_tiny(a), _tiny(b)))


def _as_strided(x: Any, shape: Any = None, strides: Any = None, subok: bool = False,
                writeable: bool = True) -> MetaArray:
    if type(x) is not MetaArray:
        return np.lib.stride_tricks.as_strided(x, shape, strides, subok, writeable)
    shape = x.shape if shape is None else tuple(shape)
    strides = x.strides if strides is None else tuple(strides)
    return MetaArray(shape, x.dtype, strides, x.offset, x.root)


def _view_function(func: Any) -> Any:
    """A NumPy function that only makes views: applied to probes (each input its own address
    range), its outputs keep strides and offsets."""
    def rule(*args: Any, **kwargs: Any) -> Any:
        metas: list[MetaArray] = []

        def probe(m: MetaArray) -> np.ndarray:
            metas.append(m)
            return _probe(m, len(metas) - 1)

        res = func(*_map(args, probe), **{k: _map(v, probe) for k, v in kwargs.items()})
        return _from_probe(res, metas)
    return rule


def _from_probe(r: Any, metas: list) -> Any:
    if isinstance(r, np.ndarray):
        slot = (r.__array_interface__["data"][0] - _PROBE_ADDRESS) // _PROBE_SPACING
        return _view(metas[slot], r, slot)
    if isinstance(r, (tuple, list)):
        return type(r)(_from_probe(x, metas) for x in r)
    return r


def _refusal(func: Any) -> str:
    name = getattr(func, "__name__", str(func))
    return (f"{name} has a data-dependent output shape, which a meta tensor cannot give (no "
            "meta kernel, as in PyTorch: nonzero, unique, masked_select, bincount...); run it on "
            "a tensor with data")


def _may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    return False


def _bincount(x: Any, weights: Any = None, minlength: int = 0) -> MetaArray:
    """Counts of valid indices (below ``minlength``, as an op's scatter-add passes it): the
    output is ``minlength`` long. Without ``minlength`` the length is the largest value + 1,
    which a meta array does not have."""
    if not minlength:
        raise NotImplementedError(_refusal(np.bincount))
    return MetaArray((int(minlength),), np.float64 if weights is not None else np.intp)


_REFUSED = {np.nonzero, np.flatnonzero, np.argwhere, np.unique, np.extract, np.compress,
            np.histogram, np.histogram_bin_edges, np.histogramdd, np.histogram2d,
            np.allclose, np.array_equal, np.array_equiv, np.trim_zeros, np.unique_values,
            np.unique_counts, np.unique_inverse, np.unique_all}

_RULES: dict[Any, Any] = {
    np.where: _where,
    np.concatenate: _concatenate, np.stack: _stack,
    np.einsum: _einsum, np.dot: _dot, np.tensordot: _tensordot, np.outer: _outer,
    np.pad: _pad, np.copy: _copy,
    np.zeros_like: _like("zeros"), np.ones_like: _like("ones"), np.empty_like: _like("empty"),
    np.full_like: _like("full"),
    np.copyto: _noop, np.put_along_axis: _noop, np.put: _noop, np.place: _noop,
    np.putmask: _noop, np.fill_diagonal: _noop,
    np.may_share_memory: _may_share_memory, np.shares_memory: _may_share_memory,
    np.bincount: _bincount,
    np.argmax: _argreduce(np.argmax), np.argmin: _argreduce(np.argmin),
    np.nanargmax: _argreduce(np.nanargmax), np.nanargmin: _argreduce(np.nanargmin),
    np.any: _reduction(np.any, truth=False), np.all: _reduction(np.all, truth=True),
    np.lib.stride_tricks.as_strided: _as_strided,
}
for _f in (np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.amax, np.amin,
           np.nansum, np.nanprod, np.nanmean, np.nanstd, np.nanvar, np.nanmax, np.nanmin,
           np.median, np.nanmedian, np.ptp, np.count_nonzero):
    _RULES.setdefault(_f, _reduction(_f))
for _f in (np.cumsum, np.cumprod, np.nancumsum, np.nancumprod):
    _RULES[_f] = _same_shape(_f, default_axis=None)
for _f in (np.sort, np.argsort, np.partition, np.argpartition):
    _RULES[_f] = _same_shape(_f)
for _f in (np.clip, np.round, np.around, np.isclose, np.nan_to_num, np.real_if_close,
           np.conj, np.conjugate, np.fix, np.sinc, np.i0, np.heaviside):
    _RULES[_f] = _elementwise(_f)
for _f in (np.take, np.take_along_axis, np.repeat, np.tile, np.roll, np.delete, np.insert,
           np.append):
    _RULES[_f] = _structural(_f)
_RULES[np.tril] = _RULES[np.triu] = lambda m, k=0: MetaArray(m.shape, m.dtype)
_RULES[np.searchsorted] = lambda a, v, side="left", sorter=None: MetaArray(_shape(v), np.intp)
for _f in (np.transpose, np.swapaxes, np.moveaxis, np.rollaxis, np.expand_dims, np.squeeze,
           np.broadcast_to, np.broadcast_arrays, np.diagonal, np.flip, np.fliplr, np.flipud,
           np.rot90, np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.atleast_1d,
           np.atleast_2d, np.atleast_3d, np.real, np.lib.stride_tricks.sliding_window_view,
           np.matrix_transpose, np.permute_dims, np.unstack):
    _RULES[_f] = _view_function(_f)
_RULES[np.reshape] = lambda a, shape=None, order="C", *, newshape=None, copy=None: a.reshape(
    shape if shape is not None else newshape, order=order, copy=copy)
_RULES[np.ravel] = lambda a, order="C": a.reshape(-1)
_RULES[np.ndim] = lambda a: a.ndim
_RULES[np.shape] = lambda a: a.shape
_RULES[np.size] = lambda a, axis=None: a.size if axis is None else a.shape[axis]
_RULES[np.result_type] = lambda *xs: np.result_type(*[_tiny(x) for x in xs])


# ---------------------------------------------------------------------------------------------
# the array module of the meta device


def _size_arg(shape: Any) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


class _StrideTricks:
    as_strided = staticmethod(_as_strided)

    def __getattr__(self, name: str) -> Any:
        return getattr(np.lib.stride_tricks, name)


class _Lib:
    stride_tricks = _StrideTricks()

    def __getattr__(self, name: str) -> Any:
        return getattr(np.lib, name)


class _Namespace:
    """``device("meta").xp``: NumPy, with creation functions that make meta arrays."""

    __name__ = "ember._meta.namespace"
    ndarray = MetaArray
    lib = _Lib()

    @staticmethod
    def zeros(shape: Any, dtype: Any = float, order: str = "C", **_: Any) -> MetaArray:
        return MetaArray(_size_arg(shape), dtype)

    ones = empty = zeros

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C",
             **_: Any) -> MetaArray:
        dt = dtype if dtype is not None else np.result_type(fill_value)
        return MetaArray(_size_arg(shape), dt)

    @staticmethod
    def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float, **_: Any) -> MetaArray:
        return MetaArray((n, n if m is None else m), dtype)

    @staticmethod
    def identity(n: int, dtype: Any = float, **_: Any) -> MetaArray:
        return MetaArray((n, n), dtype)

    @staticmethod
    def arange(*args: Any, **kwargs: Any) -> MetaArray:
        return like(np.arange(*args, **kwargs))

    @staticmethod
    def linspace(*args: Any, **kwargs: Any) -> Any:
        return _to_meta(np.linspace(*args, **kwargs))

    @staticmethod
    def asarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> MetaArray:
        m = a if type(a) is MetaArray else like(np.asarray(a))
        return m if dtype is None else m.astype(dtype, copy=False)

    @staticmethod
    def array(a: Any, dtype: Any = None, copy: Any = True, **kwargs: Any) -> MetaArray:
        m = a if type(a) is MetaArray else like(np.asarray(a))
        if dtype is not None:
            return m.astype(dtype, copy=bool(copy))
        return m.copy("K") if copy and m is a else m

    @staticmethod
    def ascontiguousarray(a: Any, dtype: Any = None, **kwargs: Any) -> MetaArray:
        m = _Namespace.asarray(a, dtype)
        return m if m.flags.c_contiguous else m.copy()

    @staticmethod
    def asfortranarray(a: Any, dtype: Any = None, **kwargs: Any) -> MetaArray:
        m = _Namespace.asarray(a, dtype)
        if m.flags.f_contiguous:
            return m
        return MetaArray(m.shape, m.dtype, _c_strides(m.shape[::-1], m.itemsize)[::-1])

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


namespace = _Namespace()
