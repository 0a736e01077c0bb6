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
        if a.dtype.kind == "u" and a.dtype.itemsize > 1:
            raise TypeError(f"safetensors tensor {k!r} is {a.dtype}, which ember has no tensors of")
        if not a.flags.writeable:  # frombuffer over immutable bytes: own the memory
            a = a.copy()
        out[k] = Tensor._make(_backend.to_device(a, dev))
    return out


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` (contiguous copies, CPU)."""
    return _st_numpy().save(_arrays(tensors), metadata=metadata)


_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}


def load(data: bytes, device: Any = "cpu") -> dict[str, Tensor]:
    """Tensors from the bytes of a safetensors file."""
    import safetensors

    _st_numpy()
    arrays = {}
    for name, view in safetensors.deserialize(data):
        code = view["dtype"]
        if code == "BF16":
            np_dt = _dtype.bfloat16.np
            if np_dt is None:
                raise RuntimeError("bfloat16 tensors need the optional package ml_dtypes: "
                                   "pip install ml_dtypes")
        elif code in _ST_DTYPES:
            np_dt = np.dtype(_ST_DTYPES[code])
        else:
            raise TypeError(f"safetensors tensor {name!r} has dtype {code}, which ember has no "
                            "tensors of")
        arrays[name] = np.frombuffer(view["data"], dtype=np_dt).reshape(view["shape"])
    return _tensors(arrays, device)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike,
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``filename`` (atomically: a crash leaves the old file intact)."""
    from ..serialization import _atomic_write

    data = save(tensors, metadata)
    _atomic_write(os.fspath(filename), lambda fh: fh.write(data))


def load_file(filename: str | os.PathLike, device: Any = "cpu") -> dict[str, Tensor]:
    """Tensors from ``filename``: ``{name: Tensor}`` on ``device``."""
    stn = _st_numpy()
    return _tensors(stn.load_file(os.fspath(filename)), device)
