"""Tensor creation: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``, ``arange``, ``eye``...

Every function takes ``dtype``, ``device`` and ``requires_grad`` like PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._size import Size
from .._tensor_base import TensorBase

__all__ = [
    "arange", "as_tensor", "asarray", "empty", "empty_like", "empty_strided", "eye", "from_numpy", "full", "full_like", "linspace", "logspace", "ones", "ones_like", "scalar_tensor", "tensor", "zeros", "zeros_like",
]


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Any:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, NumPy arrays, tensors)."""
    T = TensorBase
    if isinstance(data, T):
        arr = data._data.copy()
        if device is None:
            device = data.device
        on_cpu = _backend.is_cpu_array(arr)
        if device is not None and _backend.device(device).type != "cpu" and not on_cpu:
            t = T._make(arr)
            t = t.to(device=device, dtype=dtype)
            if requires_grad:
                t.requires_grad = True
            return t
        if not on_cpu:
            arr = _backend.to_numpy(arr)
    elif _backend.is_array(data) and not _backend.is_cpu_array(data):
        arr = _backend.to_numpy(data)
        device = device or _backend.device_of(data)
    else:
        arr = _infer(data, _dtype.to_dtype(dtype) if dtype is not None else None)
        if arr is data:
            arr = arr.copy()
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    return _place(arr, dt, device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Any:
    """Like ``tensor`` but shares memory with a tensor or NumPy array when it can."""
    T = TensorBase
    if isinstance(data, T):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray):
        dt = _dtype.to_dtype(dtype) if dtype is not None else None
        return _place(_checked(data), dt, device, False)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Any:
    """A CPU tensor sharing memory with ``arr`` (writes show up in both)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return TensorBase._make(_checked(arr))


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          out: Any = None, **_: Any) -> Any:
    dt = _dt(dtype)
    return _place(np.zeros(_size(size), dt.np), dt, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         out: Any = None, **_: Any) -> Any:
    dt = _dt(dtype)
    return _place(np.ones(_size(size), dt.np), dt, device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          **_: Any) -> Any:
    dt = _dt(dtype)
    return _place(np.empty(_size(size), dt.np), dt, device, requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, **_: Any) -> Any:
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.scalar_dtype(fill_value)
    return _place(np.full(_size((size,)), fill_value, dt.np), dt, device, requires_grad)


def zeros_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               **_: Any) -> Any:
    dt, dev = _like(x, dtype, device)
    return zeros(*x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              **_: Any) -> Any:
    dt, dev = _like(x, dtype, device)
    return ones(*x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               **_: Any) -> Any:
    dt, dev = _like(x, dtype, device)
    return empty(*x.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(x: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, **_: Any) -> Any:
    dt, dev = _like(x, dtype, device)
    return full(tuple(x.shape), fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False, **_: Any) -> Any:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; integer args give int64."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, TensorBase) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(
            f"upper bound and larger bound inconsistent with step sign (start={start}, end={end}, step={step})"
        )
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in vals)
        dt = _dtype.int64 if is_int else _dtype.get_default_dtype()
    else:
        dt = _dtype.to_dtype(dtype)
    n = max(math.ceil((end - start) / step), 0)
    if dt.is_floating_point:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    else:
        arr = np.arange(start, start + n * step, step)[:n].astype(dt.np)
    return _place(arr, dt, device, requires_grad)


def range_(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, device: Any = None, **_: Any) -> Any:
    """Deprecated ``torch.range``: like arange but includes ``end``; floats by default."""
    dt = _dt(dtype)
    n = int(math.floor((end - start) / step)) + 1
    return _place((start + np.arange(n) * step).astype(dt.np), dt, device, False)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **_: Any) -> Any:
    dt = _dt(dtype)
    s = start.item() if isinstance(start, TensorBase) else start
    e = end.item() if isinstance(end, TensorBase) else end
    return _place(np.linspace(s, e, int(steps)).astype(dt.np), dt, device, requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, **_: Any) -> Any:
    dt = _dt(dtype)
    return _place(np.logspace(start, end, int(steps), base=base).astype(dt.np), dt, device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False, **_: Any) -> Any:
    dt = _dt(dtype)
    return _place(np.eye(int(n), None if m is None else int(m), dtype=dt.np), dt, device, requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    dt = _dt(dtype)
    return _place(np.asarray(s, dt.np), dt, device, requires_grad)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None, **_: Any) -> Any:
    return empty(*size, dtype=dtype, device=device)


def complex(*_: Any, **__: Any) -> Any:
    raise NotImplementedError("ember does not implement torch.complex yet (no complex dtypes)")


def _size(size: tuple) -> tuple[int, ...]:
    """Sizes given as ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(torch.Size(...))``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, TensorBase):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)):
            raise TypeError(
                f"size must be a sequence of ints, got {type(s).__name__} {s!r} in {tuple(size)!r}"
            )
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _place(arr: Any, dt: Any, device: Any, requires_grad: bool) -> Any:
    """Wrap a CPU array: cast to ``dt``, move to ``device``, set ``requires_grad``."""
    T = TensorBase
    if dt is not None and arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    if device is not None:
        dev = _backend.check_available(_backend.device(device))
        if dev.type != "cpu":
            arr = _backend.to_device(arr, dev)
    t = T._make(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _unnest(data: Any) -> Any:
    """Lists that contain tensors become plain nested arrays/lists NumPy can read."""
    T = TensorBase
    if isinstance(data, T):
        return _backend.to_numpy(data._data)
    if isinstance(data, (list, tuple)):
        return [_unnest(x) for x in data]
    return data


def _infer(data: Any, dtype: Any = None) -> np.ndarray:
    """PyTorch's inference: Python floats -> default float, ints -> int64, bools -> bool.
    With ``dtype`` given, Python numbers go straight to it (no detour through float32)."""
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(x, TensorBase) for x in _flat_first(data)):
            data = _unnest(data)
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"could not build a tensor from this data: {e}") from None
        if dtype is not None:
            arr = arr.astype(dtype.np)
        elif arr.dtype == np.float64:
            arr = arr.astype(_dtype.get_default_dtype().np)
        elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
            arr = arr.astype(np.int64)
    if arr.dtype.kind == "O":
        raise TypeError(
            "could not infer a dtype for this data (ragged nesting or non-numbers?); tensors need "
            "rectangular nested lists of numbers"
        )
    if arr.dtype.kind in "US":
        raise TypeError(f"new(): invalid data type '{arr.dtype.kind == 'U' and 'str' or 'bytes'}'")
    _dtype.from_numpy(arr.dtype)  # unsupported NumPy types get PyTorch's error
    return arr


def _flat_first(data: Any) -> list:
    out = []
    while isinstance(data, (list, tuple)) and data:
        out.extend(data if not isinstance(data[0], (list, tuple)) else [])
        data = data[0]
    return out or ([data] if not isinstance(data, (list, tuple)) else [])


def _checked(arr: np.ndarray) -> np.ndarray:
    _dtype.from_numpy(arr.dtype)
    return arr


def _dt(dtype: Any, default: Any = None) -> Any:
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return default or _dtype.get_default_dtype()


def _like(x: Any, dtype: Any, device: Any) -> tuple[Any, Any]:
    return (_dtype.to_dtype(dtype) if dtype is not None else x.dtype,
            device if device is not None else x.device)


asarray = as_tensor
