"""``save``: storage planning (one record per shared memory block), the fast pickler for tensors
and plain values (exactly what ``torch.load``'s weights-only reader expects), the general pickler
for anything else (ember's classes named by their PyTorch paths), and the zip writer."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import struct
import sys
import types
import weakref
import zlib
from collections import Counter, OrderedDict
from typing import IO, Any

import numpy as np

from .. import _backend, _dtype, _dtype_info, _tensor_wrapper
from .._dtype import dtype as _dtype_cls
from .._size import Size
from .._tensor import Tensor
from ..ops import sparse as _sparse
from ._atomic import _atomic_write
from ._common import (
    _STORAGE_OF,
    _as_strided,
    _contiguous_strides,
    _is_parameter,
    _location,
    _module_of,
    _public_name,
    _torch_global,
)
from ._options import _skip_data

DEFAULT_PROTOCOL = 2

_ALIGN = 64

_ZIP64_LIMIT = 0xFFFFFFFF  # sizes/offsets at or above this need zip64 records (tests lower it)


# =============================================================================================
# save
# =============================================================================================
def save(obj: Any, f: str | os.PathLike | IO[bytes], pickle_module: Any = None,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` in PyTorch's checkpoint format (``torch.load`` and ``ember.load`` read it).

    Tensors, numbers, strings and containers (state dicts) are written exactly as
    ``torch.load``'s default ``weights_only=True`` reader expects; anything else Python can
    pickle (a whole ``nn.Module``, a NumPy array, a user's class) is pickled as ``torch.save``
    pickles it, ember's classes and functions named by their PyTorch paths, so loading it
    needs ``weights_only=False`` or ``add_safe_globals`` (on either side). Tensors that view one array
    are saved as one storage with offsets and strides (they share memory again when loaded).
    To a path, the write is atomic: a temporary file in the same folder is written, flushed,
    fsynced and renamed over ``f``, so a crash never leaves a half-written checkpoint. A
    file-like ``f`` (``io.BytesIO``) is written in place.

    Args:
        obj: what to save: usually ``model.state_dict()``/``opt.state_dict()`` (tensors,
            numbers, strings, ``None``, dtypes, devices, ``Size`` in dicts/lists/tuples/sets);
            any picklable object also works.
        f: a path, or a binary file object with ``write``.

    Example::

        >>> ember.save({"model": model.state_dict(), "step": 100}, "ckpt.pt")
    """
    if pickle_protocol != DEFAULT_PROTOCOL:
        raise ValueError(
            f"ember.save writes pickle protocol 2 only (the protocol torch.load's weights_only "
            f"reader expects); got pickle_protocol={pickle_protocol}. Drop the argument."
        )
    if not _use_new_zipfile_serialization:
        raise ValueError(
            "ember.save writes only the zip checkpoint format; the legacy format "
            "(_use_new_zipfile_serialization=False) is not supported"
        )
    try:
        pkl, storages = _Pickler().dump(obj)
    except _NeedsFullPickle:
        pkl = b""
    if not pkl:
        # objects beyond what torch.load's weights_only reader rebuilds (a whole module, a
        # NumPy array, a user's class): pickled as torch.save pickles them
        pkl, storages = _full_pickle(obj)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        name = _archive_name(path)
        _atomic_write(path, lambda fh: _write_archive(fh, name, pkl, storages))
    elif hasattr(f, "write"):
        _write_archive(f, "archive", pkl, storages)
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {type(f).__name__}")


def _archive_name(path: str) -> str:
    stem = os.path.basename(path).split(".", 1)[0]
    return stem if re.fullmatch(r"[A-Za-z0-9_\-]{1,100}", stem) else "archive"


class _OutStorage:
    """One storage to write: a contiguous 1-D region of an array (any device)."""

    __slots__ = ("key", "dtype", "numel", "location", "region")

    def __init__(self, key: str, dt: _dtype_cls, region: Any, location: str) -> None:
        self.key = key
        self.dtype = dt
        self.numel = int(region.size)
        self.location = location
        self.region = region

    def host_bytes(self) -> memoryview:
        r = self.region
        if not isinstance(r, np.ndarray):
            r = _backend.to_device(r, _backend.CPU)
        r = np.ascontiguousarray(np.asarray(r))
        if sys.byteorder == "big":  # pragma: no cover - checkpoints are little-endian
            r = r.byteswap()
        return memoryview(r.reshape(-1).view(np.uint8))


def _data_ptr(arr: Any) -> int:
    iface = getattr(arr, "__array_interface__", None)
    if iface is not None:
        return int(iface["data"][0])
    return int(arr.__cuda_array_interface__["data"][0])


def _memory_owner(arr: Any) -> Any:
    """The object owning ``arr``'s memory: views of one owner may share a storage."""
    a = arr
    while True:
        b = a.base
        if b is None:
            return a
        if isinstance(b, np.ndarray) or _backend.is_array(b):
            a = b
            continue
        return b  # a buffer (bytes, mmap...) that arrays were made over


def _plan_storages(tensors: list[Tensor]) -> tuple[dict[int, tuple], list[_OutStorage]]:
    """Group tensors whose arrays overlap in one memory owner into shared storages.

    Returns ``{id(tensor): (storage, offset, stride)}`` and the storages in key order. Views
    of one array become one storage spanning the bytes they use (not the whole owner);
    arrays whose strides PyTorch cannot express (negative, not a multiple of the item size)
    are copied into their own contiguous storage.
    """
    plan: dict[int, tuple] = {}
    storages: list[_OutStorage] = []
    groups: dict[tuple, list] = {}
    order: list[tuple] = []

    def new_storage(dt: _dtype_cls, region: Any, location: str) -> _OutStorage:
        s = _OutStorage(str(len(storages)), dt, region, location)
        storages.append(s)
        return s

    for t in tensors:
        arr = t._data
        shape = tuple(arr.shape)
        dt = _dtype.from_numpy(arr.dtype)
        if arr.size == 0:
            xp = _backend.xp_of(arr)
            plan[id(t)] = (new_storage(dt, xp.empty((0,), arr.dtype), _location(arr)), 0,
                           _contiguous_strides(shape))
            continue
        isz = arr.itemsize
        if any(n > 1 and (s < 0 or s % isz) for n, s in zip(shape, arr.strides, strict=True)):
            arr = _backend.xp_of(arr).ascontiguousarray(arr)  # a fresh owner of its own
        lo = _data_ptr(arr)
        hi = lo + isz + sum((n - 1) * s for n, s in zip(shape, arr.strides, strict=True) if n > 1)
        owner = _memory_owner(arr)
        key = (id(owner), _location(arr), arr.dtype, lo % isz)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((lo, hi, t, arr, owner))
    # merge overlapping byte spans of one owner; each connected span becomes a storage
    for key in order:
        members = sorted(groups[key], key=lambda m: m[0])
        comps: list[list] = []
        for m in members:
            if comps and m[0] < comps[-1][1]:
                comps[-1][1] = max(comps[-1][1], m[1])
                comps[-1][2].append(m)
            else:
                comps.append([m[0], m[1], [m]])
        for lo, hi, ms in comps:
            base = ms[0][3]
            isz = base.itemsize
            if len(ms) == 1 and base.flags.c_contiguous:
                region = base.reshape(-1)  # the common case: one whole contiguous tensor
            else:
                region = _as_strided(base, ((hi - lo) // isz,), (isz,))
            st = new_storage(_dtype.from_numpy(base.dtype), region, key[1])
            for mlo, _, t, arr, _ in ms:
                cstr = _contiguous_strides(tuple(arr.shape))
                stride = [s // isz if n > 1 else c
                          for n, s, c in zip(arr.shape, arr.strides, cstr, strict=True)]
                plan[id(t)] = (st, (mlo - lo) // isz, stride)
    # number storages in the order their first tensor appears
    first: dict[int, int] = {}
    for t in tensors:
        s = plan[id(t)][0]
        first.setdefault(id(s), len(first))
    storages.sort(key=lambda s: first[id(s)])
    for i, s in enumerate(storages):
        s.key = str(i)
    return plan, storages


class _Pickler:
    """Writes protocol 2 with only the opcodes and globals torch's weights_only reader allows."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.memo: dict[Any, int] = {}
        self.keep: list[Any] = []  # objects whose id() is a memo key stay alive
        self.plan: dict[int, tuple] = {}
        self.tuples_in_progress: set[int] = set()

    def dump(self, obj: Any) -> tuple[bytes, list[_OutStorage]]:
        tensors: list[Tensor] = []
        _collect(obj, tensors, set(), ())
        self.plan, storages = _plan_storages(tensors)
        self.out += b"\x80\x02"
        self.save(obj)
        self.out += b"."
        return bytes(self.out), storages

    # -- memo -------------------------------------------------------------------------------
    def _put(self, key: Any) -> None:
        i = len(self.memo)
        self.memo[key] = i
        self.out += b"q" + bytes((i,)) if i < 256 else b"r" + struct.pack("<I", i)

    def _get(self, key: Any) -> bool:
        i = self.memo.get(key)
        if i is None:
            return False
        self.out += b"h" + bytes((i,)) if i < 256 else b"j" + struct.pack("<I", i)
        return True

    def _global(self, module: str, name: str) -> None:
        key = ("global", module, name)
        if not self._get(key):
            self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"
            self._put(key)

    def _obj_key(self, obj: Any) -> tuple:
        self.keep.append(obj)
        return ("obj", id(obj))

    # -- values -----------------------------------------------------------------------------
    def save(self, obj: Any) -> None:
        t = type(obj)
        out = self.out
        if obj is None:
            out += b"N"
        elif t is bool:
            out += b"\x88" if obj else b"\x89"
        elif t is int:
            self._int(obj)
        elif t is float:
            out += b"G" + struct.pack(">d", obj)
        elif t is str:
            b = obj.encode("utf-8", "surrogatepass")
            out += b"X" + struct.pack("<I", len(b)) + b
        elif isinstance(obj, Tensor):
            self._tensor(obj)
        elif t is Size:
            self._global("torch", "Size")
            self.save(tuple(obj))
            out += b"\x85R"
        elif t is dict or t is OrderedDict or t is list or t is tuple:
            self._container(obj, t)
        elif t is _dtype_cls:
            self._global("torch", obj.name)
        elif t is _backend.device:
            self._global("torch", "device")
            self.save(str(obj))
            out += b"\x85R"
        elif t is bytes:
            self._global("_codecs", "encode")
            self.save(obj.decode("latin-1"))
            self.save("latin1")
            out += b"\x86R"
        elif t is bytearray:
            self._global("builtins", "bytearray")
            self.save(bytes(obj).decode("latin-1"))
            self.save("latin-1")
            out += b"\x86R"
        elif t is complex:
            self._global("builtins", "complex")
            self.save(obj.real)
            self.save(obj.imag)
            out += b"\x86R"
        elif t is set:
            self._global("builtins", "set")
            self.save(list(obj))
            out += b"\x85R"
        elif t is Counter:
            self._global("collections", "Counter")
            self.save(dict(obj))
            out += b"\x85R"
        elif isinstance(obj, np.generic):
            self.save(obj.item())
        else:  # pragma: no cover - _collect refuses these first
            raise TypeError(f"ember.save cannot save {type(obj).__name__}")

    def _int(self, v: int) -> None:
        if 0 <= v < 256:
            self.out += b"K" + bytes((v,))
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -(2**31) <= v < 2**31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            n = (v.bit_length() + 8) // 8  # room for the sign bit
            self.out += b"\x8a" + bytes((n,)) + v.to_bytes(n, "little", signed=True)

    def _container(self, obj: Any, t: type) -> None:
        key = self._obj_key(obj)
        if self._get(key):
            return
        out = self.out
        if t is tuple:
            if id(obj) in self.tuples_in_progress:
                raise TypeError("ember.save: a tuple that contains itself cannot be saved")
            self.tuples_in_progress.add(id(obj))
            if len(obj) <= 3:
                for x in obj:
                    self.save(x)
                out += (b")", b"\x85", b"\x86", b"\x87")[len(obj)]
            else:
                out += b"("
                for x in obj:
                    self.save(x)
                out += b"t"
            self.tuples_in_progress.discard(id(obj))
            if key not in self.memo:
                self._put(key)
            return
        if t is list:
            out += b"]"
            self._put(key)
            items = list(obj)
            for i in range(0, len(items), 1000):
                out += b"("
                for x in items[i:i + 1000]:
                    self.save(x)
                out += b"e"
            return
        if t is OrderedDict:
            self._global("collections", "OrderedDict")
            out += b")R"
        else:
            out += b"}"
        self._put(key)
        items = list(obj.items())
        for i in range(0, len(items), 1000):
            out += b"("
            for k, v in items[i:i + 1000]:
                self.save(k)
                self.save(v)
            out += b"u"
        if t is OrderedDict and vars(obj):
            self.save(dict(vars(obj)))  # state_dict()._metadata: restored by BUILD
            out += b"b"

    def _tensor(self, t: Tensor) -> None:
        key = self._obj_key(t)
        if self._get(key):
            return
        is_param = _is_parameter(t)
        state = _user_state(t)  # Python attributes (t.note = ...), saved as torch.save does
        out = self.out
        if is_param:
            self._global("torch._utils", "_rebuild_parameter_with_state" if state
                         else "_rebuild_parameter")
            out += b"("
        st, offset, stride = self.plan[id(t)]
        untyped = st.dtype.name not in _STORAGE_OF  # uint16/32/64: PyTorch's v3 form
        rebuild = "_rebuild_tensor_v3" if untyped else "_rebuild_tensor_v2"
        if not is_param and state:
            self._global("torch._tensor", "_rebuild_from_type_v2")
            out += b"("
            self._global("torch._utils", rebuild)
            self._global("torch", "Tensor")
        if not state or is_param:
            self._global("torch._utils", rebuild)
        out += b"("
        if not self._get(("storage", id(st))):
            out += b"("
            self.save("storage")
            if untyped:
                self._global("torch.storage", "UntypedStorage")
            else:
                self._global("torch", _STORAGE_OF[st.dtype.name])
            self.save(st.key)
            self.save(st.location)
            self.save(st.numel * st.dtype.itemsize if untyped else st.numel)
            out += b"t"
            self._put(("storage", id(st)))
        out += b"Q"
        self.save(offset)
        self.save(tuple(int(n) for n in t._data.shape))
        self.save(tuple(stride))
        self.save(False if is_param else bool(t.requires_grad))
        self._global("collections", "OrderedDict")
        out += b")R"
        if untyped:
            self._global("torch", st.dtype.name)
        out += b"t" if state and not is_param else b"tR"
        if is_param:
            self.save(bool(t.requires_grad))
            self._global("collections", "OrderedDict")
            out += b")R"
            if state:
                self.save(state)
        elif state:
            self.save(state)
        if is_param or state:
            out += b"tR"
        self._put(key)


_SAVE_LEAVES = (type(None), bool, int, float, str, bytes, bytearray, complex, _dtype_cls,
                _backend.device)


def _where(path: tuple) -> str:
    return "obj" + "".join(f"[{k!r}]" for k in path)


def _collect(obj: Any, tensors: list[Tensor], seen: set[int], path: tuple) -> None:
    """Gather ``obj``'s tensors in order, or raise ``_NeedsFullPickle`` if it holds anything
    torch's weights_only reader would not rebuild (then the general pickler saves it)."""
    t = type(obj)
    if t in _SAVE_LEAVES or isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
        return
    if isinstance(obj, Tensor):
        if _sparse.is_sparse(obj):  # torch._utils._rebuild_sparse_tensor: the general pickler
            raise _NeedsFullPickle(f"{_where(path)} is a sparse tensor")
        if _tensor_wrapper.is_wrapper(obj):  # no storage: its class and attributes
            raise _NeedsFullPickle(f"{_where(path)} is a wrapper tensor subclass")
        if id(obj) not in seen:
            seen.add(id(obj))
            tensors.append(obj)
            if type(obj) is not Tensor and not (_is_parameter(obj)
                                                and type(obj).__name__ == "Parameter"):
                raise _NeedsFullPickle(f"{_where(path)} is a tensor subclass")
            state = _user_state(obj)
            if state:
                _collect(state, tensors, seen, path)
        return
    if t is Size:
        return
    if t in (dict, OrderedDict, list, tuple, set, Counter):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if t in (dict, OrderedDict, Counter):
            for k, v in obj.items():
                _collect(k, tensors, seen, path)
                _collect(v, tensors, seen, (*path, k))
            if t is OrderedDict:
                _collect(dict(vars(obj)), tensors, seen, path)
        else:
            for i, v in enumerate(obj):
                _collect(v, tensors, seen, (*path, i))
        return
    raise _NeedsFullPickle(f"{_where(path)} of type {t.__module__}.{t.__qualname__}")


class _NeedsFullPickle(Exception):
    """``obj`` holds more than tensors and plain values: use the general pickler."""


# -- the general pickler: anything Python's pickle handles, in torch.save's format -----------
class _TorchGlobal:
    """A name written as a pickle GLOBAL (``torch._utils._rebuild_tensor_v2``)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce wants a callable
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


_G_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_G_TENSOR_V3 = _TorchGlobal("torch._utils", "_rebuild_tensor_v3")  # untyped storage + dtype


def _rebuild_of(t: Any) -> _TorchGlobal:
    """v2 for the dtypes with a typed storage; v3 (as PyTorch writes) for uint16/32/64."""
    return _G_TENSOR if t.dtype.name in _STORAGE_OF else _G_TENSOR_V3


_G_PARAM = _TorchGlobal("torch._utils", "_rebuild_parameter")

_G_PARAM_STATE = _TorchGlobal("torch._utils", "_rebuild_parameter_with_state")

_G_FROM_TYPE = _TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
_G_SPARSE = _TorchGlobal("torch._utils", "_rebuild_sparse_tensor")
_G_WRAPPER = _TorchGlobal("torch._utils", "_rebuild_wrapper_subclass")
_G_GET_LAYOUT = _TorchGlobal("torch.serialization", "_get_layout")


class _SavedLayout:
    """A layout as PyTorch pickles it: ``torch.serialization._get_layout("torch.sparse_coo")``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_SPARSE_PARTS: dict[int, tuple] = {}  # id(sparse tensor) -> (weakref, record, data)


def _sparse_parts(t: Tensor) -> tuple:
    """A sparse tensor's data as PyTorch pickles it (the same tensor objects on both passes of
    the general pickler, so their storages are planned once)."""
    key = id(t)
    hit = _SPARSE_PARTS.get(key)
    rec = t._data
    if hit is None or hit[0]() is not t or hit[1] is not rec:
        if rec.layout is _dtype_info.sparse_coo:
            data: tuple = (Tensor._make(rec.indices), Tensor._make(rec.values), Size(rec.shape),
                           rec.coalesced)
        else:
            data = (Tensor._make(rec.compressed), Tensor._make(rec.plain),
                    Tensor._make(rec.values), Size(rec.shape))
        ref = weakref.ref(t, lambda _r, k=key: _SPARSE_PARTS.pop(k, None))
        hit = _SPARSE_PARTS[key] = (ref, rec, data)
    return hit[2]

_G_ODICT = _TorchGlobal("collections", "OrderedDict")


class _PlainTensor:
    """The bare tensor inside a parameter or a subclass rebuild."""

    __slots__ = ("t",)

    def __init__(self, t: Tensor) -> None:
        self.t = t


def _user_state(t: Tensor) -> dict:
    """A tensor's own Python attributes (``t.note = ...``); names starting with ``_`` are
    ember's bookkeeping (gradients, versions, hooks) and are not saved."""
    return {k: v for k, v in t.__dict__.items() if not k.startswith("_")}


class _FullPickler(pickle._Pickler):  # the Python pickler: its save_global can be replaced
    """Protocol-2 pickler writing ``torch.save``'s object layout.

    Tensors become ``torch._utils._rebuild_tensor_v2(storage, ...)`` calls over persistent
    storage ids, ember's classes and functions are named by their PyTorch paths, and anything
    else is pickled as Python pickles it. With ``plan=None`` it only gathers the tensors.
    """

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file: IO[bytes], plan: dict[int, tuple] | None) -> None:
        super().__init__(file, protocol=DEFAULT_PROTOCOL)
        self.plan = plan
        self.tensors: list[Tensor] = []
        self.seen: set[int] = set()

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _OutStorage:
            if obj.dtype.name not in _STORAGE_OF:  # uint16/32/64: an untyped storage, in bytes
                return ("storage", _TorchGlobal("torch.storage", "UntypedStorage"), obj.key,
                        obj.location, obj.numel * obj.dtype.itemsize)
            return ("storage", _TorchGlobal("torch", _STORAGE_OF[obj.dtype.name]), obj.key,
                    obj.location, obj.numel)
        return None

    def _tensor_args(self, t: Tensor, requires_grad: bool) -> tuple:
        if self.plan is None:
            if id(t) not in self.seen:
                self.seen.add(id(t))
                self.tensors.append(t)
            st, offset, stride = None, 0, ()
        else:
            st, offset, stride = self.plan[id(t)]
        args = (st, offset, tuple(int(n) for n in t._data.shape), tuple(stride), requires_grad,
                OrderedDict())
        return args if t.dtype.name in _STORAGE_OF else (*args, t.dtype)  # v3 adds the dtype

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t is _PlainTensor:
            return (_rebuild_of(obj.t), self._tensor_args(obj.t, False))
        if isinstance(obj, Tensor) and _sparse.is_sparse(obj):
            return (_G_SPARSE, (_SavedLayout(f"torch.{obj.layout._name}"), _sparse_parts(obj)))
        if isinstance(obj, Tensor) and _tensor_wrapper.is_wrapper(obj):
            # Tensor._make_wrapper_subclass's: metadata, then the attributes (the wrapped
            # tensors among them), as torch.save writes it
            args = _tensor_wrapper.wrapper_args(obj)
            args = (*args[:5], _SavedLayout("torch.strided"), *args[6:])
            return (_G_FROM_TYPE, (_G_WRAPPER, t, args, _tensor_wrapper.wrapper_state(obj)))
        if t is _SavedLayout:
            return (_G_GET_LAYOUT, (obj.name,))
        if isinstance(obj, Tensor):
            state = _user_state(obj)
            if _is_parameter(obj):
                if type(obj).__name__ == "Parameter" and _module_of(t) == "ember.nn.parameter":
                    inner = _PlainTensor(obj)
                    if state:
                        return (_G_PARAM_STATE, (inner, obj.requires_grad, OrderedDict(), state))
                    return (_G_PARAM, (inner, obj.requires_grad, OrderedDict()))
            elif t is Tensor and not state:
                return (_rebuild_of(obj), self._tensor_args(obj, bool(obj.requires_grad)))
            args = self._tensor_args(obj, bool(obj.requires_grad))
            return (_G_FROM_TYPE, (_rebuild_of(obj), t, args, state))
        if t is _backend.device:
            return (_TorchGlobal("torch", "device"), (str(obj),))
        d = getattr(obj, "__dict__", None)
        if type(d) is dict and "_flat_weights_names" in d and "_flat_weights" not in d:
            # an RNN: PyTorch's pickled RNNs carry their weights list too (its forward uses it)
            rv = obj.__reduce_ex__(DEFAULT_PROTOCOL)
            if isinstance(rv, tuple) and len(rv) >= 3 and isinstance(rv[2], dict):
                state = dict(rv[2])
                state["_flat_weights"] = [getattr(obj, n, None) for n in d["_flat_weights_names"]]
                return (rv[0], rv[1], state, *rv[3:])
        if t is Size:
            return (_TorchGlobal("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def _write_global(self, module: str, name: str, obj: Any) -> None:
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)

    def save_global(self, obj: Any, name: str | None = None) -> None:
        if name is not None and not isinstance(obj, type) and "." not in name:
            # a singleton whose __reduce__ gives its name (ember.strided): PyTorch's name
            mod = _module_of(obj) or _module_of(type(obj))
            tg = _public_name(obj, name) if str(mod).startswith("ember") else None
        else:
            tg = _torch_global(obj)
        if tg is None:
            super().save_global(obj, name)
        else:
            self._write_global(tg[0], tg[1], obj)

    def _save_torch_global(self, obj: _TorchGlobal) -> None:
        self._write_global(obj.module, obj.name, obj)

    def _save_dtype(self, obj: _dtype_cls) -> None:
        self._write_global("torch", obj.name, obj)

    def _save_function(self, obj: Any) -> None:
        self.save_global(obj)  # the base table holds pickle's own save_global

    dispatch[_TorchGlobal] = _save_torch_global
    dispatch[_dtype_cls] = _save_dtype
    dispatch[types.FunctionType] = _save_function


class _NullSink:
    def write(self, b: Any) -> int:
        return len(b)


def _full_pickle(obj: Any) -> tuple[bytes, list[_OutStorage]]:
    """``obj`` pickled as ``torch.save`` pickles it: a first pass finds the tensors (so views
    share storages), the second writes."""
    gather = _FullPickler(_NullSink(), None)  # type: ignore[arg-type]
    gather.dump(obj)
    plan, storages = _plan_storages(gather.tensors)
    buf = io.BytesIO()
    _FullPickler(buf, plan).dump(obj)
    return buf.getvalue(), storages


class _ZipWriter:
    """A minimal zip writer: uncompressed members aligned to 64 bytes, zip64 when needed."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.pos = 0
        self.entries: list[tuple[bytes, int, int, int]] = []

    def _write(self, b: Any) -> None:
        mv = memoryview(b)
        total = mv.nbytes
        done = 0
        while done < total:
            n = self.fh.write(mv[done:])
            done += total - done if n is None else n
        self.pos += total

    def add(self, name: str, data: Any) -> int:
        mv = memoryview(data).cast("B")
        size = mv.nbytes
        crc = zlib.crc32(mv)
        off = self.pos
        name_b = name.encode("utf-8")
        z64 = size >= _ZIP64_LIMIT or off >= _ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, size, size) if z64 else b""
        pad = (-(off + 30 + len(name_b) + len(extra) + 4)) % _ALIGN
        extra += struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # "FB": alignment padding
        s32 = 0xFFFFFFFF if z64 else size
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if z64 else 20, 0, 0, 0, 33, crc,
                                s32, s32, len(name_b), len(extra)) + name_b + extra)
        self._write(mv)
        self.entries.append((name_b, crc, size, off))
        return crc

    def finish(self) -> None:
        cd_start = self.pos
        for name_b, crc, size, off in self.entries:
            z64 = size >= _ZIP64_LIMIT or off >= _ZIP64_LIMIT
            extra = struct.pack("<HHQQQ", 1, 24, size, size, off) if z64 else b""
            s32 = 0xFFFFFFFF if z64 else size
            o32 = 0xFFFFFFFF if z64 else off
            ver = 45 if z64 else 20
            self._write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, ver, ver, 0, 0, 0, 33, crc,
                                    s32, s32, len(name_b), len(extra), 0, 0, 0, 0, o32)
                        + name_b + extra)
        cd_size = self.pos - cd_start
        n = len(self.entries)
        if n >= 0xFFFF or cd_start >= _ZIP64_LIMIT or cd_size >= _ZIP64_LIMIT:
            eocd64 = self.pos
            self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, cd_size,
                                    cd_start))
            self._write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
            n16, size32, start32 = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF
        else:
            n16, size32, start32 = n, cd_size, cd_start
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n16, n16, size32, start32, 0))


def _write_archive(fh: IO[bytes], name: str, pkl: bytes, storages: list[_OutStorage]) -> None:
    w = _ZipWriter(fh)
    digest = hashlib.sha256(pkl)
    w.add(f"{name}/data.pkl", pkl)
    w.add(f"{name}/.format_version", b"1")
    w.add(f"{name}/.storage_alignment", b"64")
    w.add(f"{name}/byteorder", b"little")
    for s in storages:
        data = (np.zeros(s.numel * s.dtype.itemsize, np.uint8) if _skip_data.active
                else s.host_bytes())  # skip_data: the records keep their size, zero bytes
        digest.update(struct.pack("<I", w.add(f"{name}/data/{s.key}", data)))
    w.add(f"{name}/version", b"3\n")
    sid = str(int.from_bytes(digest.digest(), "little") % 10**40).zfill(40)
    w.add(f"{name}/.data/serialization_id", sid.encode())
    w.finish()
