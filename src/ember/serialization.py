"""``ember.save`` / ``ember.load``: PyTorch's checkpoint format, read without running code.

A checkpoint is a zip archive (the layout ``torch.save`` writes)::

    <name>/data.pkl                   the object tree, pickle protocol 2; tensors are calls to
                                      torch._utils._rebuild_tensor_v2(storage, offset, size,
                                      stride, requires_grad, OrderedDict()) whose storage is a
                                      persistent id ('storage', torch.FloatStorage, key,
                                      location, numel)
    <name>/.format_version            "1"
    <name>/.storage_alignment         "64": every member's bytes start at a multiple of 64
    <name>/byteorder                  "little"
    <name>/data/<key>                 raw little-endian bytes of one storage (uncompressed)
    <name>/version                    "3\\n"
    <name>/.data/serialization_id     40 decimal digits

``ember.save`` writes it: tensors and plain values exactly as ``torch.load``'s default
``weights_only=True`` reader expects, anything else (a whole module, a NumPy array, a user's
class) with Python's pickler as ``torch.save`` does, ember's classes named by their PyTorch paths
(``torch.nn.modules.linear.Linear``). ``ember.load`` follows PyTorch 2.13's contract: by default
(``weights_only=True``) it reads with the interpreter in ``ember._pickle_reader`` (no
``pickle.load``; only the opcodes and globals a tensor checkpoint needs, plus the classes and
functions given to ``add_safe_globals``; every size, offset and stride checked against the
archive before memory is touched; anything else raises ``UnsafeCheckpointError``).
``weights_only=False`` unpickles the file with Python's unpickler, which trusts it completely.
Writes to a path are atomic (temporary file in the same folder, fsync, ``os.replace``).
See docs/checkpoints.md.
"""

from __future__ import annotations

import hashlib
import io
import mmap as _mmap_module
import os
import pickle
import re
import secrets
import stat
import struct
import sys
import types
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import IO, Any

import numpy as np

from . import _backend, _dtype
from ._dtype import dtype as _dtype_cls
from ._pickle_reader import (
    Callable_,
    Marker,
    UnsafeCheckpointError,
    _qualname,
    check_plain,
    unpickle,
)
from ._size import Size
from ._tensor import Tensor

__all__ = [
    "save", "load", "UnsafeCheckpointError", "DEFAULT_PROTOCOL", "add_safe_globals",
    "clear_safe_globals", "get_safe_globals", "safe_globals", "get_unsafe_globals_in_checkpoint",
    "skip_data", "SourceChangeWarning", "LoadEndianness", "get_default_load_endianness",
    "set_default_load_endianness", "get_default_mmap_options", "set_default_mmap_options",
    "get_crc32_options", "set_crc32_options", "mkdtemp", "register_package", "location_tag",
    "default_restore_location", "validate_cuda_device", "normalize_storage_type",
    "storage_to_tensor_type", "check_module_version_greater_or_equal", "StorageType",
]

DEFAULT_PROTOCOL = 2
_ALIGN = 64
_ZIP64_LIMIT = 0xFFFFFFFF  # sizes/offsets at or above this need zip64 records (tests lower it)
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")

# ember dtype name <-> PyTorch's legacy typed-storage class name (what data.pkl names)
_STORAGE_OF = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF.items()}
_TORCH_DTYPE_NAMES = (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool", "float", "double", "half", "long", "int", "short",
)
_KEY_RE = re.compile(r"[0-9A-Za-z_]{1,64}")
_LOCATION_RE = re.compile(r"[a-z]{1,16}(:[0-9]{1,6})?")


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
    if isinstance(f, str | os.PathLike):
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


_TMP_SUFFIX = ".tmp"


def _host_tag() -> str:
    """8 hex digits naming this machine in temporary file names (pids are per machine)."""
    import socket

    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _temp_name(base: str) -> str:
    """``.<base>.ember-<host>-<pid>-<random>.tmp``: recognisably ours, for this path."""
    return f".{base}.ember-{_host_tag()}-{os.getpid()}-{secrets.token_hex(6)}{_TMP_SUFFIX}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or we cannot tell: keep its file
    return True


def _remove_stale_temps(folder: str, base: str) -> None:
    """Delete temporary files that an interrupted ``save`` to ``base`` left behind.

    Only names made by ``_temp_name`` for this exact file name, written on this machine by
    a process that no longer exists, and only regular files (never links) are removed.
    """
    pat = re.compile(re.escape(f".{base}.ember-") + r"([0-9a-f]{8})-([0-9]{1,10})-[0-9a-f]{12}"
                     + re.escape(_TMP_SUFFIX))
    host = _host_tag()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = pat.fullmatch(e.name)
        if m is None or m.group(1) != host or int(m.group(2)) == os.getpid():
            continue
        try:
            if not e.is_file(follow_symlinks=False) or _pid_alive(int(m.group(2))):
                continue
            os.unlink(e.path)
        except OSError:
            pass


def _atomic_write(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Write through a temporary file in ``path``'s folder: flush, fsync, rename, fsync folder.

    The temporary file is created with its final permission bits (an existing file's mode, or
    the umask-derived default for a new file), so it is never more readable than the result.
    Temporary files left by an interrupted save to the same path are removed first.
    """
    if os.path.islink(path):
        path = os.path.realpath(path)  # replace the file the link points to, not the link
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"ember.save: {path!r} is a directory; give a file name")
    base = os.path.basename(path)
    _remove_stale_temps(folder, base)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)  # keep an existing file's mode
    except OSError:
        mode = None  # a new file: 0o666 less the umask, as open() gives it
    tmp = os.path.join(folder, _temp_name(base))
    # the kernel applies the umask to the creation mode, so the file starts at most as open
    # as the final mode; fchmod then sets an existing file's exact bits (never wider)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o666 if mode is None else mode)
    try:
        if mode is not None and hasattr(os, "fchmod"):
            try:
                os.fchmod(fd, mode)
            except OSError:
                pass
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


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


def _location(arr: Any) -> str:
    dev = _backend.device_of(arr)
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"


def _as_strided(arr: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    if isinstance(arr, np.ndarray):
        return np.lib.stride_tricks.as_strided(arr, shape, strides, subok=True)
    return _backend.xp_of(arr).lib.stride_tricks.as_strided(arr, shape, strides)


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return out[::-1]


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
        elif state:
            self._global("torch._tensor", "_rebuild_from_type_v2")
            out += b"("
            self._global("torch._utils", "_rebuild_tensor_v2")
            self._global("torch", "Tensor")
        if not state or is_param:
            self._global("torch._utils", "_rebuild_tensor_v2")
        st, offset, stride = self.plan[id(t)]
        out += b"("
        if not self._get(("storage", id(st))):
            out += b"("
            self.save("storage")
            self._global("torch", _STORAGE_OF[st.dtype.name])
            self.save(st.key)
            self.save(st.location)
            self.save(st.numel)
            out += b"t"
            self._put(("storage", id(st)))
        out += b"Q"
        self.save(offset)
        self.save(tuple(int(n) for n in t._data.shape))
        self.save(tuple(stride))
        self.save(False if is_param else bool(t.requires_grad))
        self._global("collections", "OrderedDict")
        out += b")R"
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


def _is_parameter(t: Tensor) -> bool:
    from .nn.parameter import Parameter

    return isinstance(t, Parameter)


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

# ember classes whose PyTorch home differs from ``'torch' + cls.__module__[5:]``
_TORCH_HOME = {
    "ember.nn.modules.transformer.MultiheadAttention":
        "torch.nn.modules.activation.MultiheadAttention",
    "ember.nn.modules.transformer.NonDynamicallyQuantizableLinear":
        "torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
    "ember.nn.modules.upsampling.PixelShuffle": "torch.nn.modules.pixelshuffle.PixelShuffle",
    "ember.nn.modules.upsampling.PixelUnshuffle": "torch.nn.modules.pixelshuffle.PixelUnshuffle",
    "ember.nn.utils.rnn_packing.PackedSequence": "torch.nn.utils.rnn.PackedSequence",
    "ember.utils.data.sampler.DistributedSampler":
        "torch.utils.data.distributed.DistributedSampler",
}
# ember classes pickled under their own names: PyTorch's class of that name is implemented in C
# with an incompatible state (a torch.Generator given ember's state crashes the interpreter),
# so real torch.load must fail cleanly on them instead
_EMBER_ONLY = frozenset({"ember.ops.random.Generator"})

# public namespaces, in the order an object's PyTorch name is looked for
_HOMES = ("ember.nn.functional", "ember", "ember.nn", "ember.nn.init", "ember.nn.utils.rnn",
          "ember.nn.utils", "ember.optim.lr_scheduler", "ember.optim", "ember.utils.data",
          "ember.autograd", "ember.linalg", "ember.special", "ember.fft")
_alias_index: dict[int, tuple[str, str]] = {}


def _homes() -> list[tuple[str, Any]]:
    import importlib

    out = []
    for ns in _HOMES:
        try:
            out.append((ns, importlib.import_module(ns)))
        except ImportError:
            continue
    return out


def _public_name(obj: Any, name: str) -> tuple[str, str] | None:
    """``('torch.<ns>', name)`` for the first public namespace holding ``obj`` as ``name``,
    else under any name (an alias such as ``absolute`` for ``abs``)."""
    homes = _homes()
    if isinstance(obj, type):  # classes: the top-level namespaces first (torch.finfo)
        homes = homes[1:3] + homes[:1] + homes[3:]
    for ns, home in homes:
        exported = getattr(home, "__all__", None)
        if getattr(home, name, None) is obj and (exported is None or name in exported):
            return "torch" + ns[5:], name
    if not _alias_index:
        for ns, home in reversed(_homes()):
            exported = getattr(home, "__all__", None)
            for k, v in vars(home).items():
                if (not k.startswith("_") and callable(v)
                        and (exported is None or k in exported)):
                    _alias_index[id(v)] = ("torch" + ns[5:], k)
    hit = _alias_index.get(id(obj))
    if hit is None and not isinstance(obj, type):
        # an internal function with a public twin (ember.ops.activation.relu, which a
        # TransformerEncoderLayer stores): PyTorch's public function of that name
        for ns, home in homes:
            if callable(getattr(home, name, None)):
                return "torch" + ns[5:], name
    return hit


def _torch_global(obj: Any) -> tuple[str, str] | None:
    """PyTorch's ``(module, name)`` for an ember class or function, or None if not ember's.

    Classes are named by PyTorch's module path (``torch.nn.modules.linear.Linear``), so real
    ``torch.load`` finds them; functions by the public namespace that has them
    (``torch.nn.functional.relu``).
    """
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        return None
    if mod != "ember" and not mod.startswith("ember.") or f"{mod}.{qual}" in _EMBER_ONLY:
        return None
    full = _TORCH_HOME.get(f"{mod}.{qual}")
    if full is not None:
        m, _, n = full.rpartition(".")
        return m, n
    private = any(p.startswith("_") for p in mod.split(".")) or "<locals>" in qual
    if private or not isinstance(obj, type):
        hit = _public_name(obj, getattr(obj, "__name__", qual))
        if hit is not None:
            return hit
    return "torch" + mod[5:], qual


class _TorchGlobal:
    """A name written as a pickle GLOBAL (``torch._utils._rebuild_tensor_v2``)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce wants a callable
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


_G_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_G_PARAM = _TorchGlobal("torch._utils", "_rebuild_parameter")
_G_PARAM_STATE = _TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
_G_FROM_TYPE = _TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
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
        return (st, offset, tuple(int(n) for n in t._data.shape), tuple(stride), requires_grad,
                OrderedDict())

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t is _PlainTensor:
            return (_G_TENSOR, self._tensor_args(obj.t, False))
        if isinstance(obj, Tensor):
            state = _user_state(obj)
            if _is_parameter(obj):
                if type(obj).__name__ == "Parameter" and t.__module__ == "ember.nn.parameter":
                    inner = _PlainTensor(obj)
                    if state:
                        return (_G_PARAM_STATE, (inner, obj.requires_grad, OrderedDict(), state))
                    return (_G_PARAM, (inner, obj.requires_grad, OrderedDict()))
            elif t is Tensor and not state:
                return (_G_TENSOR, self._tensor_args(obj, bool(obj.requires_grad)))
            args = self._tensor_args(obj, bool(obj.requires_grad))
            return (_G_FROM_TYPE, (_G_TENSOR, t, args, state))
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
            mod = getattr(obj, "__module__", None) or type(obj).__module__
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
    if isinstance(f, str | os.PathLike):
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


def _refuse(msg: str) -> UnsafeCheckpointError:
    return UnsafeCheckpointError(msg)


def _is_int(x: Any) -> bool:
    return type(x) is int


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
        if module == "torch" or module.startswith("torch."):
            obj = _ember_object(module, name)
            if obj is _MISSING:
                raise pickle.UnpicklingError(
                    f"this checkpoint names {full}, which ember does not have (ember has no "
                    f"{'ember' + module[5:]}.{name}); the file needs PyTorch to load")
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


# -- weights_only, and PyTorch's allowlist API ------------------------------------------------

_MISSING = object()


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


def _ember_object(module: str, name: str, import_modules: bool = True) -> Any:
    """The ember object at PyTorch's path ``module.name`` (``torch.nn.modules.linear``,
    ``Linear``), or ``_MISSING``. Without ``import_modules`` only modules already imported
    are consulted (a weights-only load imports nothing a file names)."""
    import importlib

    full = f"{module}.{name}"
    for emb, tor in _TORCH_HOME.items():
        if tor == full:
            module, name = emb.rsplit(".", 1)
            module = "torch" + module[5:]
            break
    real = "ember" + module[5:]
    m = sys.modules.get(real)
    if m is None and import_modules:
        try:
            m = importlib.import_module(real)
        except ImportError:
            return _MISSING
    if m is None:
        return _MISSING
    obj: Any = m
    for part in name.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _tensor_class(kind: str) -> type:
    if kind == "parameter":
        from .nn.parameter import Parameter

        return Parameter
    return Tensor


def _rebuild_from_type_v2_full(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    """``weights_only=False``: a tensor subclass with its Python attributes."""
    t = func(*args)
    if isinstance(new_type, type) and issubclass(new_type, Tensor) and type(t) is not new_type:
        from .nn.parameter import Parameter

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


_user_safe_globals: list[Any] = []


def _names_of(obj: Any) -> list[str]:
    """The dotted names a checkpoint may use for an allowlisted object."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        return [obj[1]]
    names = []
    mod = getattr(obj, "__module__", None)
    for attr in ("__qualname__", "__name__"):
        q = getattr(obj, attr, None)
        if isinstance(mod, str) and isinstance(q, str):
            names.append(f"{mod}.{q}")
    tg = _torch_global(obj)
    if tg is not None:
        names.append(f"{tg[0]}.{tg[1]}")
    return names


class _UserAllowlist:
    """A snapshot of the allowlisted globals for one load."""

    def __init__(self, entries: list[Any]) -> None:
        self.by_name: dict[str, Any] = {}
        self.ids: set[int] = set()
        for e in entries:
            obj = e[0] if isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], str) else e
            self.ids.add(id(obj))
            for n in _names_of(e):
                self.by_name.setdefault(n, obj)
        self.keep = entries

    def lookup(self, module: str, name: str) -> Any:
        hit = self.by_name.get(f"{module}.{name}", _MISSING)
        if hit is not _MISSING or not self.ids:
            return hit
        if module == "torch" or module.startswith("torch."):  # another path to the same object
            obj = _ember_object(module, name, import_modules=False)
            if obj is not _MISSING and id(obj) in self.ids:
                return obj
        return _MISSING


def _user_allowlist() -> _UserAllowlist:
    return _UserAllowlist(list(_user_safe_globals))


def _unsupported_global_message(module: str, name: str) -> str:
    full = f"{module}.{name}"
    lacks = ""
    if module == "torch" or module.startswith("torch."):
        if ("ember" + module[5:] in sys.modules
                and _ember_object(module, name, import_modules=False) is _MISSING):
            lacks = f" (ember may not have {'ember' + module[5:]}.{name} at all)"
    return (
        f"refused global {full}{lacks}: ember.load with weights_only=True (the default) "
        "rebuilds only tensors, plain containers and the classes or functions you allowlist, "
        "and never imports or calls anything else a checkpoint names (that could run code). "
        "Nothing from the file was run. If you trust this class or function, allowlist it: "
        f"torch.serialization.add_safe_globals([{full}]), or load inside `with "
        f"torch.serialization.safe_globals([{full}]):`. If you trust the whole file, "
        "torch.load(f, weights_only=False) loads it as a full pickle, which can execute "
        "arbitrary code."
    )


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allowlist classes and functions for ``weights_only=True`` loading.

    A checkpoint may then name them: classes are instantiated (``NEWOBJ``/``REDUCE``) and
    given their pickled state (``__setstate__`` or ``__dict__``), functions are called with
    rebuilt values. An entry may be ``(obj, "dotted.name")`` to match another name.

    Args:
        safe_globals: classes/functions, or ``(obj, name)`` pairs.
    """
    for g in safe_globals:
        if not any(g is e or (isinstance(g, tuple) and g == e) for e in _user_safe_globals):
            _user_safe_globals.append(g)


def clear_safe_globals() -> None:
    """Forget every global given to ``add_safe_globals``."""
    _user_safe_globals.clear()


def get_safe_globals() -> list[Any]:
    """The globals given to ``add_safe_globals`` (and active ``safe_globals`` blocks)."""
    return list(_user_safe_globals)


class safe_globals:  # noqa: N801 - PyTorch's name
    """Context manager: allowlist ``safe_globals`` for ``weights_only`` loads in the block."""

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        self._saved = list(_user_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        _user_safe_globals[:] = self._saved


# -- the other helpers of torch.serialization ---------------------------------------------------


class SourceChangeWarning(Warning):
    """PyTorch warns with this when a pickled module's source changed (ember never does)."""


class LoadEndianness(Enum):
    """Byte order assumed for checkpoints without a ``byteorder`` record (pre-1.10 files)."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_load_endianness: list[LoadEndianness | None] = [None]
MAP_PRIVATE = getattr(_mmap_module, "MAP_PRIVATE", 2)
MAP_SHARED = getattr(_mmap_module, "MAP_SHARED", 1)
_mmap_flags = [MAP_PRIVATE]
_crc32 = [True]


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order assumed for archives without a ``byteorder`` record (None: little)."""
    return _load_endianness[0]


def set_default_load_endianness(endianness: LoadEndianness | None) -> None:
    """Set the byte order assumed for archives without a ``byteorder`` record."""
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _load_endianness[0] = endianness


def get_default_mmap_options() -> int | None:
    """The ``mmap`` flags ``load(mmap=True)`` uses: ``MAP_PRIVATE`` (default) or ``MAP_SHARED``."""
    return _mmap_flags[0]


class set_default_mmap_options:  # noqa: N801 - PyTorch's name
    """Set the ``mmap`` flags of ``load(mmap=True)``; also a context manager that restores them.

    ``MAP_PRIVATE`` (default): writes to loaded tensors stay in memory. ``MAP_SHARED``: they
    are written to the file.
    """

    def __init__(self, flags: int) -> None:
        if flags not in (MAP_PRIVATE, MAP_SHARED):
            raise ValueError(
                "Invalid argument in function set_default_mmap_options, expected "
                f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _mmap_flags[0]
        _mmap_flags[0] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _mmap_flags[0] = self.prev


def get_crc32_options() -> bool:
    """Whether ``save`` computes each record's CRC-32 (ember always does)."""
    return _crc32[0]


def set_crc32_options(compute_crc32: bool) -> None:
    """Accepted for compatibility: ember always writes CRC-32s (``load`` checks them)."""
    _crc32[0] = bool(compute_crc32)


class skip_data:  # noqa: N801 - PyTorch's name
    """Context manager: ``save`` writes every storage record at full size but with zero bytes,
    and ``load`` gives tensors of the right shapes filled with zeros, reading no storage bytes.

    Args:
        materialize_fake_tensors: accepted for compatibility (ember has no fake tensors).
    """

    active = False

    def __init__(self, materialize_fake_tensors: bool = False) -> None:
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self) -> skip_data:
        self.prev = skip_data.active
        skip_data.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        skip_data.active = self.prev


_skip_data = skip_data


@contextmanager
def mkdtemp() -> Iterator[str]:
    """A temporary directory for the block, removed afterwards."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


_packages: list[tuple[int, Callable, Callable]] = []


def register_package(priority: int, tagger: Callable[[Any], str | None],
                     deserializer: Callable[[Any, str], Any]) -> None:
    """Register a ``tagger(storage) -> location`` and ``deserializer(storage, location)``
    pair, consulted (lowest priority first) by ``location_tag`` and ``default_restore_location``."""
    _packages.append((priority, tagger, deserializer))
    _packages.sort(key=lambda p: p[0])


def location_tag(storage: Any) -> str:
    """Where a tensor (ember's storages are tensors) lives, as a checkpoint names it."""
    for _, tagger, _ in _packages:
        tag = tagger(storage)
        if tag:
            return tag
    if isinstance(storage, Tensor):
        return _location(storage._data)
    raise RuntimeError(f"don't know how to determine data location of {type(storage).__name__}")


def validate_cuda_device(location: Any) -> int:
    """The CUDA device index of ``location`` (``'cuda:1'``), checking that it exists."""
    dev = _backend.device(location)
    if not _backend.cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    from . import cuda

    index = dev.index or 0
    count = cuda.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {index} but "
            f"torch.cuda.device_count() is {count}. Please use torch.load with map_location to "
            "map your storages to an existing device.")
    return index


def default_restore_location(storage: Any, location: str) -> Any:
    """``storage`` (a tensor) moved to ``location`` (``'cpu'``, ``'cuda:0'``)."""
    for _, _, deserializer in _packages:
        out = deserializer(storage, location)
        if out is not None:
            return out
    if location.startswith("cuda"):
        validate_cuda_device(location)
    try:
        return storage.to(_backend.device(location))
    except (RuntimeError, ValueError):
        raise RuntimeError(
            f"don't know how to restore data location of {type(storage).__name__} (tagged "
            f"with {location})") from None


def normalize_storage_type(storage_type: Any) -> Any:
    """The storage type itself (ember has no separate typed-storage classes)."""
    return storage_type


def storage_to_tensor_type(storage: Any) -> Any:
    """The legacy tensor type of a storage type name (``FloatStorage`` -> ``FloatTensor``)."""
    import ember

    name = storage if isinstance(storage, str) else getattr(
        storage, "__name__", type(storage).__name__)
    return getattr(ember, name.replace("Storage", "Tensor"))


def check_module_version_greater_or_equal(module: Any, req_version_tuple: tuple,
                                          error_if_malformed: bool = True) -> bool:
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (e.g. ``(1, 2)``)."""
    version = getattr(module, "__version__", "")
    try:
        parts = version.split(".")
        have = tuple(type(req_version_tuple[i])(parts[i]) for i in range(len(req_version_tuple)))
    except (ValueError, IndexError, TypeError) as e:
        message = (f"'{module.__name__}' module version string is malformed '{version}' and "
                   f"cannot be compared with tuple {req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        import warnings

        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True
    return have >= tuple(req_version_tuple)


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike | IO[bytes]) -> list[str]:
    """The globals a checkpoint names that a ``weights_only`` load would refuse (not built in,
    not allowlisted with ``add_safe_globals``), read without loading anything."""
    import pickletools

    if isinstance(f, str | os.PathLike):
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


class StorageType:
    """A storage type named in a checkpoint (``torch.FloatStorage`` -> its dtype)."""

    def __init__(self, name: str) -> None:
        dt = _DTYPE_OF_STORAGE.get(name)
        if dt is None:
            raise RuntimeError(f"unknown storage type {name}")
        self._dtype = _dtype.ALIASES[dt]

    @property
    def dtype(self) -> _dtype_cls:
        return self._dtype

    def __str__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


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


def _short(x: Any) -> str:
    r = repr(x) if type(x) in (str, int, bytes, bool, type(None)) else f"<{type(x).__name__}>"
    if isinstance(x, Marker | Callable_):
        r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


# -- the allowlisted constructors (each checks its arguments) ---------------------------------


def _ordered_dict(*args: Any) -> OrderedDict:
    if args:
        raise _refuse(f"refused collections.OrderedDict{_short(args)}: only OrderedDict() is allowed")
    return OrderedDict()


def _counter(*args: Any) -> Counter:
    if args == ():
        return Counter()
    if len(args) == 1 and type(args[0]) is dict:
        return Counter(args[0])
    raise _refuse("refused collections.Counter arguments: only Counter() or Counter(dict)")


def _size(*args: Any) -> Size:
    if len(args) != 1 or type(args[0]) is not tuple or not all(_is_int(n) for n in args[0]):
        raise _refuse("refused torch.Size arguments: expected one tuple of ints")
    return Size(args[0])


def _device(*args: Any) -> _backend.device:
    if not (1 <= len(args) <= 2 and type(args[0]) is str
            and (len(args) == 1 or args[1] is None or _is_int(args[1]))):
        raise _refuse(f"refused torch.device arguments {_short(args)}")
    try:
        return _backend.device(*args)
    except (RuntimeError, ValueError) as e:
        raise _refuse(f"refused torch.device{_short(args)}: {e}") from None


def _encode(*args: Any) -> bytes:
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        raise _refuse("refused _codecs.encode arguments: only encode(str, 'latin1') (bytes)")
    return args[0].encode("latin-1")


def _set(*args: Any) -> set:
    if args == ():
        return set()
    if len(args) != 1 or type(args[0]) is not list:
        raise _refuse("refused builtins.set arguments: only set(list)")
    return set(args[0])


def _bytearray(*args: Any) -> bytearray:
    if args == ():
        return bytearray()
    if len(args) == 1 and type(args[0]) is bytes:
        return bytearray(args[0])
    if len(args) == 2 and type(args[0]) is str and args[1] in ("latin1", "latin-1"):
        return bytearray(args[0], "latin-1")
    raise _refuse("refused builtins.bytearray arguments")


def _complex(*args: Any) -> complex:
    if len(args) in (1, 2) and all(type(a) in (int, float) for a in args):
        return complex(*args)
    raise _refuse("refused builtins.complex arguments: only numbers")


def _rebuild_parameter(data: Any, requires_grad: Any, hooks: Any) -> Any:
    from .nn.parameter import Parameter

    if type(data) is not Tensor or type(requires_grad) is not bool:
        raise _refuse("refused _rebuild_parameter: expected (tensor, bool, OrderedDict())")
    if hooks is not None and (type(hooks) not in (dict, OrderedDict) or hooks):
        raise _refuse("refused _rebuild_parameter: backward hooks cannot be loaded")
    if requires_grad and not data.is_floating_point():
        raise _refuse(f"refused _rebuild_parameter: a {data.dtype} parameter cannot require grad")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, hooks: Any, state: Any) -> Any:
    p = _rebuild_parameter(data, requires_grad, hooks)
    _set_attributes(p, state)
    return p


_TENSOR_REBUILDS = ("_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_tensor",
                    "_rebuild_parameter", "_rebuild_parameter_with_state")


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any,
                          user_ids: frozenset[int] = frozenset()) -> Any:
    if type(func) is not Callable_ or func.name not in _TENSOR_REBUILDS:
        raise _refuse(f"refused _rebuild_from_type_v2 with function {_short(func)}")
    subclass = (isinstance(new_type, type) and issubclass(new_type, Tensor)
                and id(new_type) in user_ids)  # an allowlisted tensor subclass
    if not subclass and (type(new_type) is not Marker
                         or new_type.value not in ("tensor", "parameter")):
        raise _refuse(f"refused _rebuild_from_type_v2 to type {_short(new_type)}: ember rebuilds "
                      "torch.Tensor, torch.nn.Parameter and tensor subclasses given to "
                      "add_safe_globals")
    if type(args) is not tuple:
        raise _refuse("refused _rebuild_from_type_v2: arguments are not a tuple")
    t = func.fn(*args)
    if not isinstance(t, Tensor):
        raise _refuse("refused _rebuild_from_type_v2: it does not rebuild a tensor")
    if subclass:
        from .nn.parameter import Parameter

        if issubclass(new_type, Parameter) and not _is_parameter(t):
            t = Parameter(t, t.requires_grad)
        try:
            t.__class__ = new_type
        except TypeError as e:
            raise _refuse(f"refused _rebuild_from_type_v2 to {_qualname(new_type)}: {e}") from None
    elif new_type.value == "parameter" and not _is_parameter(t):
        from .nn.parameter import Parameter

        t = Parameter(t, t.requires_grad)
    _set_attributes(t, state)
    return t


def _set_attributes(t: Tensor, state: Any) -> None:
    """Plain Python attributes of a saved tensor (``t.note = 'x'``), names checked."""
    if state is None:
        return
    if type(state) is tuple and len(state) == 2 and state[1] in (None, {}):
        state = state[0]
    if type(state) not in (dict, OrderedDict):
        raise _refuse(f"refused tensor state {_short(state)}")
    check_plain(state, "a tensor's attributes")
    for k in state:
        if (type(k) is not str or not k.isidentifier() or k.startswith("__")
                or hasattr(type(t), k) or k in Tensor._INTERNAL):
            raise _refuse(f"refused tensor attribute {_short(k)}")
    t.__dict__.update(state)
