"""``ember.utils.safetensors``: read and write ``.safetensors`` files (Hugging Face's format).

A safetensors file is a JSON header plus raw bytes: nothing in it can run code, and the files
move freely between ember, PyTorch (``safetensors.torch``), JAX and NumPy. These helpers use
the ``safetensors`` package's NumPy API (an optional extra: ``pip install safetensors``);
the names and signatures follow ``safetensors.torch``. Saving to a path is atomic, like
``ember.save``.

Example::

    >>> from ember.utils.safetensors import save_file, load_file
    >>> save_file(model.state_dict(), "model.safetensors")
    >>> model.load_state_dict(load_file("model.safetensors"))
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load"]


def _st_numpy() -> Any:
    try:
        import safetensors.numpy as stn
    except ImportError as e:
        raise ImportError(
            "ember's safetensors helpers need the optional package 'safetensors': "
            "pip install safetensors (or pip install 'ember[safetensors]')"
        ) from e
    return stn


def _arrays(tensors: dict[str, Tensor]) -> dict[str, np.ndarray]:
    if not isinstance(tensors, dict):
        raise TypeError(f"expected a dict of name -> Tensor, got {type(tensors).__name__}")
    out: dict[str, np.ndarray] = {}
    for k, t in tensors.items():
        if not isinstance(k, str):
            raise TypeError(f"safetensors keys must be strings, got {type(k).__name__} {k!r}")
        if not isinstance(t, Tensor):
            raise TypeError(
                f"safetensors stores tensors only; {k!r} is a {type(t).__name__} (use "
                "ember.save for other values, or the metadata= argument for strings)"
            )
        arr = t._data if isinstance(t._data, np.ndarray) else _backend.to_device(t._data, _backend.CPU)
        out[k] = np.ascontiguousarray(np.asarray(arr))
    return out


def _tensors(arrays: dict[str, np.ndarray], device: Any) -> dict[str, Tensor]:
    dev = _backend.check_available(_backend.device(device))
    out: dict[str, Tensor] = {}
    for k, a in arrays.items():
        if (a.dtype.kind == "u" and a.dtype.itemsize > 1 or a.dtype.kind not in "biufcV"
                or a.dtype.kind == "c" and a.dtype != np.complex64):
            raise TypeError(f"safetensors tensor {k!r} is {a.dtype}, which ember has no tensors "
                            f"of; ember reads {_SUPPORTED}")
        if not a.flags.writeable:  # frombuffer over immutable bytes: own the memory
            a = a.copy()
        out[k] = Tensor._make(_backend.to_device(a, dev))
    return out


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` (contiguous copies, CPU)."""
    return _st_numpy().save(_arrays(tensors), metadata=metadata)


_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64,
}
_SUPPORTED = "BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64"


def _refuse_dtype(name: str, code: str) -> TypeError:
    what = ("complex" if code.startswith("C") else "float8" if code.startswith("F8")
            else "sub-byte float" if code[:2] in ("F4", "F6") else "unsigned" if code[:1] == "U"
            else "")
    return TypeError(
        f"safetensors tensor {name!r} has dtype {code}{f' ({what})' if what else ''}, which ember "
        f"has no tensors of; ember reads {_SUPPORTED} (bool, uint8, int8-64, float16, bfloat16, "
        "float32, float64). Convert it where it was saved (e.g. t.float())"
    )


def _np_dtype(name: str, code: Any) -> Any:
    """The NumPy dtype of a safetensors dtype code, or a ``TypeError`` naming the tensor."""
    if code == "BF16":
        np_dt = _dtype.bfloat16.np
        if np_dt is None:
            raise RuntimeError("bfloat16 tensors need the optional package ml_dtypes: "
                               "pip install ml_dtypes")
        return np_dt
    if code in _ST_DTYPES:
        return np.dtype(_ST_DTYPES[code])
    raise _refuse_dtype(name, str(code))


def _check_file_dtypes(filename: str) -> None:
    """Read ``filename``'s JSON header and refuse dtypes ember cannot hold, before loading."""
    import json
    import struct

    with open(filename, "rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            return  # not a safetensors file: the package's own error is clearer
        (n,) = struct.unpack("<Q", head)
        if n > 100_000_000:
            return
        try:
            header = json.loads(fh.read(n))
        except ValueError:
            return
    if not isinstance(header, dict):
        return
    for name, info in header.items():
        if name != "__metadata__" and isinstance(info, dict):
            _np_dtype(name, info.get("dtype"))


def load(data: bytes, device: Any = "cpu") -> dict[str, Tensor]:
    """Tensors from the bytes of a safetensors file."""
    import safetensors

    _st_numpy()
    arrays = {}
    for name, view in safetensors.deserialize(data):
        np_dt = _np_dtype(name, view["dtype"])
        arrays[name] = np.frombuffer(view["data"], dtype=np_dt).reshape(view["shape"])
    return _tensors(arrays, device)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike,
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``filename`` (atomically: a crash leaves the old file intact)."""
    from ..serialization._atomic import _atomic_write

    data = save(tensors, metadata)
    _atomic_write(os.fspath(filename), lambda fh: fh.write(data))


def load_file(filename: str | os.PathLike, device: Any = "cpu") -> dict[str, Tensor]:
    """Tensors from ``filename``: ``{name: Tensor}`` on ``device``."""
    stn = _st_numpy()
    _check_file_dtypes(os.fspath(filename))
    return _tensors(stn.load_file(os.fspath(filename)), device)
