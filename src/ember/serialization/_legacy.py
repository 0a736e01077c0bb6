"""PyTorch's legacy ``torch.save`` format, for storages only: what a plain tensor's pickle holds.

``pickle.dumps(t)`` in PyTorch writes ``torch._utils._rebuild_tensor_v2(storage, ...)`` whose
storage pickles as ``torch.storage._load_from_bytes(b)``, ``b`` being the storage saved in the
pre-1.6 format (``_use_new_zipfile_serialization=False``): five pickles in a row (a magic number,
the protocol version 1001, the system info, the object with storages as persistent ids
``('storage', torch.FloatStorage, key, location, numel, None)``, the list of storage keys), then
each storage as an int64 element count and its raw little-endian bytes.

``storage_bytes`` writes that for one storage (so PyTorch unpickles ember's tensors), ``load``
reads it back (so ember unpickles PyTorch's). Only storages are read: the object pickle may name
nothing but the ``torch.<Type>Storage`` classes, so nothing from the file is imported or run.
Anything else in that format is refused, as ember refuses every legacy checkpoint.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from .. import _backend
from .. import _dtype as _dtype_mod
from .._dtype import dtype as _dtype_cls
from .._tensor_methods import TypedStorage
from ._common import _DTYPE_OF_STORAGE, _STORAGE_OF

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}


def _op(value: Any) -> bytes:
    """The opcodes that push ``value`` (a str, an int or None), protocol 2."""
    return pickle.dumps(value, protocol=2)[2:-1]


def storage_bytes(arr: np.ndarray, dt: _dtype_cls) -> bytes:
    """``arr`` (1-D, C-contiguous, on the host) as PyTorch's legacy save of a ``TypedStorage``
    of ``dt`` on the CPU: what PyTorch's ``TypedStorage.__reduce__`` hands ``_load_from_bytes``."""
    out = io.BytesIO()
    for head in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(head, out, protocol=2)
    key = "0"
    out.write(b"\x80\x02(" + _op("storage") + f"ctorch\n{_STORAGE_OF[dt.name]}\n".encode()
              + _op(key) + _op("cpu") + _op(int(arr.size)) + b"NtQ.")
    pickle.dump([key], out, protocol=2)
    out.write(struct.pack("<q", int(arr.size)))
    out.write(np.ascontiguousarray(arr).view(np.uint8).tobytes())  # (little-endian hosts)
    return out.getvalue()


class _Refused(Exception):
    """The legacy file holds more than storages."""


class _Plain(pickle.Unpickler):
    """Numbers, strings, lists and dicts only: the format's header and key list."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"{module}.{name}")


class _StorageClass:
    def __init__(self, dt: _dtype_cls) -> None:
        self.dtype = dt


class _Pending:
    """A storage named by the object pickle, filled once the raw data has been read."""

    def __init__(self, key: str, dt: _dtype_cls, numel: int, location: str) -> None:
        self.key, self.dtype, self.numel, self.location = key, dt, numel, location


def load(fh: IO[bytes], device_for: Callable[[str], Any]) -> Any:
    """Read a legacy-format file whose object is one storage (a ``TypedStorage`` comes back, on
    ``device_for(location)``). Raises ``ValueError`` (with ``refused`` in its message) otherwise."""
    def refuse(why: str) -> ValueError:
        return ValueError(
            f"refused PyTorch's legacy checkpoint format (torch < 1.6 or "
            f"_use_new_zipfile_serialization=False): {why}. ember reads it only for a storage "
            "(what a tensor's pickle holds). Re-save it with a current PyTorch: "
            "torch.save(torch.load(f), f)")

    try:
        if _Plain(fh).load() != MAGIC_NUMBER or _Plain(fh).load() != PROTOCOL_VERSION:
            raise refuse("not a magic number / protocol 1001 header")
        info = _Plain(fh).load()
        if not isinstance(info, dict) or not info.get("little_endian", False):
            raise refuse("a big-endian file")
        pending: dict[str, _Pending] = {}

        class _Reader(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                dt_name = _DTYPE_OF_STORAGE.get(name) if module == "torch" else None
                if dt_name is None:
                    raise _Refused(f"{module}.{name}")
                return _StorageClass(_dtype_mod.ALIASES[dt_name])

            def persistent_load(self, pid: Any) -> Any:
                if (not isinstance(pid, tuple) or len(pid) != 6 or pid[0] != "storage"
                        or type(pid[1]) is not _StorageClass or pid[5] is not None
                        or not isinstance(pid[2], str) or not isinstance(pid[3], str)
                        or type(pid[4]) is not int or pid[4] < 0):
                    raise _Refused(f"persistent id {str(pid)[:80]}")
                st = pending.get(pid[2])
                if st is None:
                    st = pending[pid[2]] = _Pending(pid[2], pid[1].dtype, pid[4], pid[3])
                return st

        obj = _Reader(fh).load()
        keys = _Plain(fh).load()
        if type(obj) is not _Pending or keys != [obj.key] or len(pending) != 1:
            raise refuse("it holds more than one storage")
        (count,) = struct.unpack("<q", fh.read(8))
        np_dtype = obj.dtype.np
        raw = fh.read(count * np_dtype.itemsize)
        if count != obj.numel or len(raw) != count * np_dtype.itemsize:
            raise refuse(f"storage {obj.key}: {count} elements recorded for {obj.numel}, "
                         f"{len(raw)} bytes present (truncated)")
    except _Refused as e:
        raise refuse(f"it names {e}") from None
    except (pickle.UnpicklingError, EOFError, struct.error, TypeError, AttributeError) as e:
        raise refuse(f"unreadable ({type(e).__name__}: {e})") from None
    arr = np.frombuffer(raw, dtype=np_dtype).copy()  # writable (little-endian hosts)
    dev = device_for(obj.location)
    if dev.type != "cpu":
        arr = _backend.to_device(arr, dev)
    return TypedStorage(arr, dev, obj.dtype)
