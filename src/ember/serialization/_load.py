"""``load``: the archive reader (every size, offset and CRC checked before memory is touched),
the weights-only interpreter's globals and storages, the full-pickle path for
``weights_only=False``, PyTorch's rules for resolving ``weights_only``, and
``get_unsafe_globals_in_checkpoint``."""

from __future__ import annotations

import io
import os
import pickle
import re
import struct
import sys
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from .. import _backend, _dtype
from .._dtype import dtype as _dtype_cls
from .._pickle_reader import (
    Callable_,
    Marker,
    unpickle,
)
from .._size import Size
from .._tensor import Tensor
from . import _legacy
from ._allowlist import (
    _bytearray,
    _complex,
    _counter,
    _device,
    _encode,
    _get_layout,
    _ordered_dict,
    _rebuild_from_type_v2,
    _rebuild_parameter,
    _rebuild_parameter_with_state,
    _rebuild_sparse_tensor,
    _rebuild_wrapper_subclass,
    _set,
    _size,
    _unsupported_global_message,
    _user_allowlist,
)
from ._common import (
    _MISSING,
    _STORAGE_OF,
    _TORCH_DTYPE_NAMES,
    _as_strided,
    _contiguous_strides,
    _ember_object,
    _is_int,
    _refuse,
    _short,
)
from ._options import MAP_SHARED, LoadEndianness, _load_endianness, _mmap_flags, _skip_data

_LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


_KEY_RE = re.compile(r"[0-9A-Za-z_]{1,64}")

_LOCATION_RE = re.compile(r"[a-z]{1,16}(:[0-9]{1,6})?")


# =============================================================================================
# load
# =============================================================================================
def load(f: str | os.PathLike | IO[bytes], map_location: Any = None, pickle_module: Any = None,
         *, weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load a checkpoint written by ``torch.save`` or ``ember.save``.

    With ``weights_only=True`` (the default, as in PyTorch 2.13) nothing from the file is
    imported or run: only tensors (dense, of ember's dtypes), numbers, strings, bytes,
    ``None``, dtypes, devices, ``Size``, dict/``OrderedDict``/list/tuple/set containers and the
    classes/functions allowlisted with ``add_safe_globals`` (or ``with safe_globals([...])``)
    are rebuilt; every storage size, offset and stride is checked against the archive first;
    anything else raises ``UnsafeCheckpointError`` naming what was refused and how to allow
    it. ``weights_only=False`` (or ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` when the call passes
    no ``weights_only``, or a ``pickle_module``) loads the file as a full pickle: it can import
    any module and call any function the file names, so use it only on files you trust.
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` makes every load weights-only. ``torch.*`` names in
    the file resolve to ember's objects at the same paths.

    Args:
        f: a path or a binary file object (seekable; positioned at the archive's start).
        map_location: where tensors go: a device or string (``'cpu'``, ``'cuda:0'``), a dict
            mapping saved locations to new ones (``{'cuda:0': 'cpu'}``), or a callable
            ``(storage, location) -> tensor | None`` (``storage`` is a 1-D CPU tensor). By
            default tensors return to the device they were saved from.
        pickle_module: the module whose ``Unpickler`` a full load uses (implies
            ``weights_only=False``; an error with ``weights_only=True``).
        weights_only: see above; ``None`` means PyTorch's default (True).
        mmap: memory-map the file's storages instead of reading them (``f`` must be a
            path); each record's CRC is checked over the mapped bytes once at load, writes
            to the tensors stay private (see ``set_default_mmap_options``).

    Example::

        >>> sd = ember.load("ckpt.pt", map_location="cpu")
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if isinstance(f, (str, os.PathLike)):
        path: str | None = os.fspath(f)
        fh: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed below
        owned = True
    elif hasattr(f, "read"):
        path, fh, owned = None, f, False
        if not getattr(f, "seekable", lambda: False)():
            fh = io.BytesIO(f.read())
    else:
        raise TypeError(f"ember.load: f must be a path or a binary file object, got {type(f).__name__}")
    if mmap and path is None:
        raise ValueError("f must be a file path in order to use the mmap argument")
    try:
        return _Loader(fh, path, map_location, bool(mmap), weights_only, pickle_module).load()
    finally:
        if owned:
            fh.close()


class _StorageType(Marker):
    """``torch.FloatStorage`` & co. as named by a persistent id."""

    __slots__ = ()


class _Storage(Marker):
    """A storage of the archive: validated size, read on first use."""

    __slots__ = ("key", "dtype", "numel", "location", "arrays")

    def __init__(self, key: str, dt: _dtype_cls | None, numel: int, location: str) -> None:
        super().__init__(f"storage {key}")
        self.key = key
        self.dtype = dt  # None: an untyped (byte) storage
        self.numel = numel
        self.location = location
        self.arrays: dict[Any, Any] = {}

    def __repr__(self) -> str:
        kind = self.dtype.name if self.dtype is not None else "untyped"
        return f"<storage {self.key} ({kind}, {self.numel} elements)>"


class _Loader:
    def __init__(self, fh: IO[bytes], path: str | None, map_location: Any, mmap: bool,
                 weights_only: bool = True, pickle_module: Any = None) -> None:
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.fh = fh
        self.path = path
        self.map_location = map_location
        self.mmap = mmap
        self._mm: Any = None
        self.storages: dict[str, _Storage] = {}
        self.big_endian = False
        self._devices: dict[str, _backend.device] = {}
        self.globals = self._allowed_globals()

    # -- archive ------------------------------------------------------------------------------
    def load(self) -> Any:
        fh = self.fh
        start = fh.tell()
        head = fh.read(16)
        fh.seek(start)
        if head[:4] != b"PK\x03\x04":
            if head.startswith(_LEGACY_MAGIC[:14]):  # a storage from a tensor's pickle
                try:
                    return _legacy.load(fh, self._device_for)
                except ValueError as e:
                    raise _refuse(str(e)) from None
            raise _refuse(_not_zip_message(head))
        fh.seek(0, 2)
        self.file_len = fh.tell()
        fh.seek(start)
        try:
            zf = zipfile.ZipFile(fh)
            infos = zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError,
                struct.error, NotImplementedError, KeyError, IndexError, OverflowError,
                UnicodeDecodeError) as e:
            raise _refuse(f"not a readable checkpoint archive (truncated or corrupted zip): {e}") from None
        self.infos = {i.filename: i for i in infos}
        if len(self.infos) != len(infos):
            dups = sorted(n for n, c in Counter(i.filename for i in infos).items() if c > 1)
            raise _refuse(
                f"refused a checkpoint archive with duplicate records {dups[:5]}: zip readers "
                "differ in which copy they use, so such a file can load different weights in "
                "different programs (torch.save never writes one; it was edited or crafted)"
            )
        pkls = [n for n in self.infos if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise _refuse(
                "not a PyTorch checkpoint archive: expected exactly one '<name>/data.pkl' record, "
                f"found {len(pkls)}" + (" (a TorchScript archive? load it with torch.jit.load)"
                                        if any(n.endswith("/constants.pkl") for n in self.infos)
                                        else "")
            )
        self.prefix = pkls[0][: -len("/data.pkl")]
        bo = self.infos.get(f"{self.prefix}/byteorder")
        if bo is not None:
            order = bytes(self._read_member(bo))
            if order not in (b"little", b"big"):
                raise _refuse(f"checkpoint byteorder record is {order[:16]!r}, not 'little' or 'big'")
            self.big_endian = order == b"big"
        else:  # old archives have no record: the fallback set_default_load_endianness gives
            self.big_endian = _load_endianness[0] is LoadEndianness.BIG or (
                _load_endianness[0] is LoadEndianness.NATIVE and sys.byteorder == "big")
        data = bytes(self._read_member(self.infos[pkls[0]]))
        if not self.weights_only:
            return self._full_unpickle(data)
        self.user = _user_allowlist()
        return unpickle(data, self._find_global, self._persistent_load,
                        lambda obj: id(obj) in self.user.ids)

    def _user_ids(self) -> frozenset[int]:
        user = getattr(self, "user", None)
        return frozenset(user.ids) if user is not None else frozenset()

    def _full_unpickle(self, data: bytes) -> Any:
        """``weights_only=False``: Python's unpickler, which imports and calls what the file
        names (trusted files only). ``torch.*`` names resolve to ember's objects."""
        mod = self.pickle_module if self.pickle_module is not None else pickle
        loader = self

        class _Unpickler(mod.Unpickler):  # type: ignore[name-defined,misc]
            def find_class(self, module: str, name: str) -> Any:
                return loader._full_global(module, name, super().find_class)

            def persistent_load(self, pid: Any) -> Any:
                return loader._persistent_load(pid)

        return _Unpickler(io.BytesIO(data), encoding="utf-8").load()

    def _full_global(self, module: str, name: str, find_class: Callable[[str, str], Any]) -> Any:
        full = f"{'builtins' if module == '__builtin__' else module}.{name}"
        if full == "torch._tensor._rebuild_from_type_v2":
            return _rebuild_from_type_v2_full
        hit = self.globals.get(full)
        if type(hit) is Callable_:
            return hit.fn
        if type(hit) is Marker:
            return _tensor_class(hit.value)
        if hit is not None:
            return hit  # a dtype, or a storage type for persistent ids
        if module in ("torch", "torchvision") or module.startswith(("torch.", "torchvision.")):
            obj = _ember_object(module, name)
            if obj is _MISSING:
                ours = ("ember.vision" + module[len("torchvision"):] if module.startswith("torchvision")
                        else "ember" + module[5:])
                raise pickle.UnpicklingError(
                    f"this checkpoint names {full}, which ember does not have (ember has no "
                    f"{ours}.{name}); the file needs PyTorch to load")
            return obj
        return find_class(module, name)

    def _member_offset(self, info: zipfile.ZipInfo) -> int:
        """Where ``info``'s bytes start in the file, after checking they lie inside it."""
        if info.compress_type != zipfile.ZIP_STORED:
            raise _refuse(
                f"checkpoint record {info.filename!r} is compressed (method {info.compress_type}); "
                "ember reads the uncompressed archives torch.save writes"
            )
        if info.flag_bits & 0x1:
            raise _refuse(f"checkpoint record {info.filename!r} is encrypted")
        if info.compress_size != info.file_size:
            raise _refuse(f"checkpoint record {info.filename!r}: stored size mismatch")
        if not 0 <= info.header_offset <= self.file_len - 30:
            raise _refuse(f"checkpoint record {info.filename!r}: header offset "
                          f"{info.header_offset} outside the file (truncated or corrupted)")
        self.fh.seek(info.header_offset)
        head = self.fh.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise _refuse(f"checkpoint record {info.filename!r}: bad local header (truncated?)")
        n_name, n_extra = struct.unpack("<HH", head[26:30])
        local = self.fh.read(n_name)
        if local not in (info.filename.encode("utf-8"), info.orig_filename.encode("cp437", "replace")):
            raise _refuse(f"checkpoint record {info.filename!r}: its local header names "
                          f"{local[:80]!r} (a crafted or corrupted archive)")
        off = info.header_offset + 30 + n_name + n_extra
        if off + info.file_size > self.file_len:
            raise _refuse(
                f"checkpoint record {info.filename!r} claims {info.file_size} bytes at offset "
                f"{off} but the file has {self.file_len} bytes (truncated)"
            )
        return off

    def _read_member(self, info: zipfile.ZipInfo) -> np.ndarray:
        """The record's bytes as a writable uint8 array (CRC checked, or memory-mapped)."""
        off = self._member_offset(info)
        n = info.file_size
        if self.mmap and n > 0 and info.filename.startswith(f"{self.prefix}/data/"):
            if self._mm is None:
                shared = _mmap_flags[0] == MAP_SHARED  # writes reach the file
                self._mm = np.memmap(self.path, dtype=np.uint8, mode="r+" if shared else "c")
            region = self._mm[off:off + n].view(np.ndarray)
            # one pass over the mapped bytes (page cache, no private copy) before any tensor
            # sees them: a corrupted record is refused as it is without mmap
            if zlib.crc32(region) != info.CRC:
                raise _refuse(f"checkpoint record {info.filename!r} is corrupted (CRC mismatch)")
            return region
        buf = np.empty(n, np.uint8)
        self.fh.seek(off)
        got = self.fh.readinto(memoryview(buf)) if n else 0
        while got is not None and 0 < got < n:  # short reads from raw streams
            more = self.fh.readinto(memoryview(buf)[got:])
            if not more:
                break
            got += more
        if got != n:
            raise _refuse(f"checkpoint record {info.filename!r} is truncated")
        if zlib.crc32(buf) != info.CRC:
            raise _refuse(f"checkpoint record {info.filename!r} is corrupted (CRC mismatch)")
        return buf

    # -- globals ------------------------------------------------------------------------------
    def _allowed_globals(self) -> dict[str, Any]:
        g: dict[str, Any] = {
            "collections.OrderedDict": Callable_("collections.OrderedDict", _ordered_dict),
            "collections.Counter": Callable_("collections.Counter", _counter),
            "torch._utils._rebuild_tensor_v2": Callable_("_rebuild_tensor_v2", self._rebuild_v2),
            "torch._utils._rebuild_tensor_v3": Callable_("_rebuild_tensor_v3", self._rebuild_v3),
            "torch._utils._rebuild_tensor": Callable_("_rebuild_tensor", self._rebuild_v1),
            "torch._utils._rebuild_parameter": Callable_("_rebuild_parameter", _rebuild_parameter),
            "torch._utils._rebuild_parameter_with_state": Callable_(
                "_rebuild_parameter_with_state", _rebuild_parameter_with_state),
            "torch._tensor._rebuild_from_type_v2": Callable_(
                "_rebuild_from_type_v2",
                lambda *a: _rebuild_from_type_v2(*a, user_ids=self._user_ids())),
            "torch.Size": Callable_("torch.Size", _size),
            "torch.device": Callable_("torch.device", _device),
            "torch._utils._rebuild_sparse_tensor": Callable_("_rebuild_sparse_tensor",
                                                             _rebuild_sparse_tensor),
            "torch._utils._rebuild_wrapper_subclass": Callable_(
                "_rebuild_wrapper_subclass",
                lambda *a: _rebuild_wrapper_subclass(
                    *a, user_ids=self._user_ids() if self.weights_only else None)),
            "torch.serialization._get_layout": Callable_("_get_layout", _get_layout),
            "_codecs.encode": Callable_("_codecs.encode", _encode),
            "builtins.set": Callable_("builtins.set", _set),
            "builtins.bytearray": Callable_("builtins.bytearray", _bytearray),
            "builtins.complex": Callable_("builtins.complex", _complex),
            "torch.Tensor": Marker("torch.Tensor", "tensor"),
            "torch.nn.parameter.Parameter": Marker("torch.nn.parameter.Parameter", "parameter"),
            "torch.storage.UntypedStorage": _StorageType("torch.storage.UntypedStorage", None),
        }
        for name in _TORCH_DTYPE_NAMES:
            g[f"torch.{name}"] = _dtype.ALIASES[name]
        for dt_name, st_name in _STORAGE_OF.items():
            g[f"torch.{st_name}"] = _StorageType(f"torch.{st_name}", _dtype.ALIASES[dt_name])
        return g

    def _find_global(self, module: str, name: str) -> Any:
        module = {"__builtin__": "builtins"}.get(module, module)
        full = f"{module}.{name}"
        hit = self.globals.get(full)
        if hit is not None:
            return hit
        user = self.user.lookup(module, name)
        if user is not _MISSING:
            return user
        if module == "torch" and name.endswith("Storage"):
            raise _refuse(f"refused global {full}: ember has no tensors of this storage type "
                          "(complex and quantized tensors are not supported)")
        if module in ("torch", "torch._utils") and _ember_object(
                module, name, import_modules=False) is _MISSING:
            raise _refuse(f"refused global {full}: ember does not support it in checkpoints "
                          "(ember loads dense tensors of bool, uint8, int8-64, float16, "
                          "bfloat16, float32 and float64)")
        raise _refuse(_unsupported_global_message(module, name))

    # -- storages -------------------------------------------------------------------------------
    def _persistent_load(self, pid: Any) -> _Storage:
        if type(pid) is not tuple or len(pid) != 5:
            raise _refuse(f"refused persistent id {_short(pid)}: expected ('storage', type, key, "
                          "location, numel)")
        tag, stype, key, location, numel = pid
        if tag not in ("storage", b"storage"):
            raise _refuse(f"refused persistent id of kind {_short(tag)}")
        if type(stype) is not _StorageType:
            raise _refuse(f"refused persistent id: {_short(stype)} is not a storage type")
        if type(key) is not str or not _KEY_RE.fullmatch(key):
            raise _refuse(f"refused storage key {_short(key)}")
        if type(location) is not str or not _LOCATION_RE.fullmatch(location):
            raise _refuse(f"refused storage location {_short(location)}")
        if not _is_int(numel) or numel < 0:
            raise _refuse(f"refused storage size {_short(numel)}")
        dt = stype.value
        old = self.storages.get(key)
        if old is not None:
            if (old.dtype, old.numel, old.location) != (dt, numel, location):
                raise _refuse(f"storage {key} is declared twice with different types or sizes")
            return old
        info = self.infos.get(f"{self.prefix}/data/{key}")
        if info is None:
            raise _refuse(f"storage {key} has no record data/{key} in the archive")
        itemsize = 1 if dt is None else dt.itemsize
        if numel * itemsize != info.file_size:
            raise _refuse(
                f"storage {key} declares {numel} elements of {dt.name if dt else 'bytes'} "
                f"({numel * itemsize} bytes) but its record holds {info.file_size} bytes"
            )
        if dt is not None and dt.np is None:
            raise RuntimeError(
                "this checkpoint has bfloat16 tensors, which need the optional package "
                "ml_dtypes: pip install ml_dtypes"
            )
        st = _Storage(key, dt, numel, location)
        self.storages[key] = st
        return st

    def _device_for(self, location: str) -> _backend.device:
        dev = self._devices.get(location)
        if dev is None:
            dev = self._devices[location] = self._resolve_device(location)
        return dev

    def _resolve_device(self, location: str) -> _backend.device:
        ml = self.map_location
        if isinstance(ml, dict):
            target = ml.get(location, location)
        elif ml is None or callable(ml):
            target = location
        else:
            target = ml
        from_file = target is location
        try:
            dev = _backend.device(str(target) if not isinstance(target, _backend.device) else target)
        except (RuntimeError, ValueError) as e:
            if from_file:
                raise _refuse(f"refused storage location {location!r}: {e}") from None
            raise
        if dev.type == "cuda" and not _backend.cuda_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() "
                "is False. If you are running on a CPU-only machine, please use ember.load with "
                "map_location=ember.device('cpu') to map your storages to the CPU."
            )
        if dev.type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"this checkpoint's tensors were saved on '{location}', a device ember does not "
                "have; load them with map_location='cpu'"
            )
        return _backend.check_available(dev)

    def _storage_array(self, st: _Storage, np_dtype: Any) -> Any:
        """The storage as a 1-D array of ``np_dtype`` on its target device (read once)."""
        hit = st.arrays.get(np_dtype)
        if hit is not None:
            return hit
        raw = st.arrays.get("raw")
        if raw is None:
            info = self.infos[f"{self.prefix}/data/{st.key}"]
            raw = (np.zeros(info.file_size, np.uint8) if _skip_data.active
                   else self._read_member(info))
            st.arrays["raw"] = raw
        if raw.size % np_dtype.itemsize:
            raise _refuse(f"storage {st.key} ({raw.size} bytes) is not a whole number of "
                          f"{np_dtype} elements")
        arr = raw.view(np_dtype)
        if self.big_endian and np_dtype.itemsize > 1:
            arr = arr.view(np_dtype.newbyteorder(">")).astype(np_dtype)
        ml = self.map_location
        dev = None
        if callable(ml):
            res = ml(Tensor._make(arr), st.location)
            if res is not None:
                if not isinstance(res, Tensor):
                    raise RuntimeError(
                        f"map_location callable returned {type(res).__name__}; it must return "
                        "the storage (a tensor, e.g. storage.cuda()) or None"
                    )
                arr = res._data
                dev = res.device
        if dev is None:
            dev = self._device_for(st.location)
            arr = _backend.to_device(arr, dev)
        st.arrays[np_dtype] = arr
        return arr

    # -- tensors ------------------------------------------------------------------------------
    def _tensor(self, st: Any, dt: _dtype_cls, offset: Any, size: Any, stride: Any,
                requires_grad: Any, hooks: Any = None, metadata: Any = None) -> Tensor:
        if type(st) is not _Storage:
            raise _refuse(f"refused tensor rebuild: its storage is {_short(st)}")
        if not _is_int(offset) or offset < 0:
            raise _refuse(f"refused tensor on storage {st.key}: storage offset {_short(offset)}")
        if type(size) not in (tuple, Size) or type(stride) not in (tuple, Size) or len(size) != len(stride):
            raise _refuse(f"refused tensor on storage {st.key}: size {_short(size)} and stride "
                          f"{_short(stride)} must be tuples of the same length")
        if len(size) > 64:
            raise _refuse(f"refused tensor on storage {st.key}: {len(size)} dimensions")
        if not all(_is_int(n) and n >= 0 for n in size) or not all(
                _is_int(s) and s >= 0 for s in stride):
            raise _refuse(f"refused tensor on storage {st.key}: size {_short(size)} / stride "
                          f"{_short(stride)} must be non-negative integers")
        if type(requires_grad) is not bool:
            raise _refuse(f"refused tensor on storage {st.key}: requires_grad "
                          f"{_short(requires_grad)}")
        if hooks is not None and (type(hooks) not in (dict, OrderedDict) or hooks):
            raise _refuse(f"refused tensor on storage {st.key}: backward hooks cannot be loaded")
        if metadata is not None and (type(metadata) not in (dict, OrderedDict) or metadata):
            raise _refuse(f"refused tensor on storage {st.key}: tensor metadata {_short(metadata)}")
        if requires_grad and not dt.is_floating_point:
            raise _refuse(f"refused tensor on storage {st.key}: {dt} tensors cannot require grad")
        itemsize = dt.itemsize
        capacity = (st.numel * (1 if st.dtype is None else st.dtype.itemsize)) // itemsize
        numel = 1
        for n in size:
            numel *= n
        if numel == 0:
            if offset > capacity:
                raise _refuse(f"refused empty tensor on storage {st.key}: offset {offset} beyond "
                              f"its {capacity} elements")
            if callable(self.map_location):
                dev = _backend.device_of(self._storage_array(st, dt.np))
            else:
                dev = self._device_for(st.location)
            return Tensor._make(_backend.to_device(np.empty(size, dt.np), dev), requires_grad)
        if numel > max(capacity, 1) * 2**20 and numel > 2**32:
            raise _refuse(
                f"refused tensor of size {tuple(size)} on storage {st.key} of {capacity} elements: "
                f"{numel} elements through zero or overlapping strides (a memory bomb)"
            )
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if last >= capacity:
            raise _refuse(
                f"refused tensor of size {tuple(size)}, stride {tuple(stride)}, offset {offset} on "
                f"storage {st.key}: it reaches element {last} of a storage of {capacity} "
                f"(out of bounds)"
            )
        base = self._storage_array(st, dt.np)
        if list(stride) == _contiguous_strides(size):  # the common case: a plain reshape
            return Tensor._make(base[offset:offset + numel].reshape(size), requires_grad)
        strides = tuple(s * itemsize if n > 1 else (s * itemsize if s < 2**40 else 0)
                        for n, s in zip(size, stride, strict=True))
        view = _as_strided(base[offset:], tuple(size), strides)
        return Tensor._make(view, requires_grad)

    def _rebuild_v2(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                    hooks: Any, metadata: Any = None) -> Tensor:
        if type(storage) is not _Storage or storage.dtype is None:
            raise _refuse(f"refused _rebuild_tensor_v2 on {_short(storage)}: needs a typed storage")
        return self._tensor(storage, storage.dtype, offset, size, stride, requires_grad, hooks,
                            metadata)

    def _rebuild_v3(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                    hooks: Any, dt: Any, metadata: Any = None) -> Tensor:
        if type(dt) is not _dtype_cls:
            raise _refuse(f"refused _rebuild_tensor_v3 with dtype {_short(dt)}")
        if type(storage) is not _Storage:
            raise _refuse(f"refused _rebuild_tensor_v3 on {_short(storage)}")
        return self._tensor(storage, dt, offset, size, stride, requires_grad, hooks, metadata)

    def _rebuild_v1(self, storage: Any, offset: Any, size: Any, stride: Any) -> Tensor:
        return self._rebuild_v2(storage, offset, size, stride, False, None)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "y", "yes", "true")


_PICKLE_MODULE_MSG = "Can not safely load weights when explicit pickle_module is specified"


def _resolve_weights_only(weights_only: bool | None, pickle_module: Any) -> bool:
    """PyTorch 2.13's rules: True by default; ``pickle_module`` or
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` make an unspecified ``weights_only`` False;
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` makes it True whatever the call says."""
    if _env_true("TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
        if pickle_module is not None:
            raise RuntimeError(_PICKLE_MODULE_MSG)
        return True
    if weights_only is None:
        if pickle_module is not None:
            return False
        if _env_true("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
            import warnings

            warnings.warn(
                "Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the "
                "`weights_only` argument was not explicitly passed to `torch.load`, forcing "
                "weights_only=False.", UserWarning, stacklevel=3)
            return False
        return True
    if weights_only and pickle_module is not None:
        raise RuntimeError(_PICKLE_MODULE_MSG)
    return bool(weights_only)


def _tensor_class(kind: str) -> type:
    if kind == "parameter":
        from ..nn.parameter import Parameter

        return Parameter
    return Tensor


def _rebuild_from_type_v2_full(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    """``weights_only=False``: a tensor subclass with its Python attributes."""
    t = func(*args)
    if isinstance(new_type, type) and issubclass(new_type, Tensor) and type(t) is not new_type:
        from ..nn.parameter import Parameter

        if issubclass(new_type, Parameter) and not isinstance(t, Parameter):
            t = Parameter(t, t.requires_grad)
        if type(t) is not new_type:
            t.__class__ = new_type
    if state:
        slots = None
        if type(state) is tuple and len(state) == 2:
            state, slots = state
        for k, v in (state or {}).items():
            setattr(t, k, v)
        for k, v in (slots or {}).items():
            setattr(t, k, v)
    return t


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike | IO[bytes]) -> list[str]:
    """The globals a checkpoint names that a ``weights_only`` load would refuse (not built in,
    not allowlisted with ``add_safe_globals``), read without loading anything."""
    import pickletools

    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        raw = f.read()
    zf = zipfile.ZipFile(io.BytesIO(raw))
    pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise _refuse("not a PyTorch checkpoint archive: expected one '<name>/data.pkl' record")
    data = zf.read(pkls[0])
    builtin = _Loader(io.BytesIO(), None, None, False).globals
    user = _user_allowlist()
    found: list[str] = []
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("GLOBAL", "INST"):
            module, name = arg.split(" ", 1)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
        else:
            if isinstance(arg, str):
                strings.append(arg)
            continue
        module = "builtins" if module == "__builtin__" else module
        full = f"{module}.{name}"
        if full in builtin or user.lookup(module, name) is not _MISSING or full in found:
            continue
        found.append(full)
    return found


def _not_zip_message(head: bytes) -> str:
    if not head:
        return "the checkpoint file is empty"
    if head.startswith(_LEGACY_MAGIC[:14]):
        return (
            "refused PyTorch's legacy checkpoint format (torch < 1.6 or "
            "_use_new_zipfile_serialization=False): it is a raw pickle stream that ember does "
            "not read. Re-save it with a current PyTorch: torch.save(torch.load(f), f)"
        )
    if head[:1] == b"\x80":
        return ("refused a bare pickle: not a PyTorch checkpoint archive (ember reads the zip "
                "archives torch.save writes)")
    return f"not a PyTorch checkpoint: a zip archive starts with b'PK\\x03\\x04', this file with {head[:8]!r}"
