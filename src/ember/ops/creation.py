"""Tensor creation: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``, ``arange``, ``eye``...

Signatures are PyTorch's, keyword for keyword: ``dtype``, ``layout``, ``device``, ``pin_memory``,
``requires_grad``, ``out`` and ``memory_format`` are keyword-only; a size is ints, one sequence or
``size=`` (``_args.size``); ``out=`` gives the dtype when ``dtype`` is not given.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype, _dtype_info
from .._tensor_base import TensorBase
from . import _args

__all__ = [
    "arange", "as_tensor", "asarray", "empty", "empty_like", "empty_strided", "eye", "from_numpy", "full", "full_like", "linspace", "logspace", "ones", "ones_like", "scalar_tensor", "tensor", "zeros", "zeros_like",
]


_PRESERVE = _dtype_info.preserve_format  # (the *_like default, which optimizers pass)

# arange's overloads, as PyTorch's parser binds them (_args.overload)
_ARANGE_FORMS = (("end",), ("start", "end"), ("start", "end", "step"))


_M_IS_N = _args.Shown("n")  # eye's m when not given


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
        arr = _infer(data, _dtype_arg("tensor", dtype) if dtype is not None else None)
        if arr is data:
            arr = arr.copy()
    dt = _dtype_arg("tensor", dtype) if dtype is not None else None
    return _place(arr, dt, device, requires_grad)


def as_tensor(data: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """Like ``tensor`` but shares memory with a tensor or NumPy array when it can."""
    T = TensorBase
    if isinstance(data, T):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray):
        dt = _dtype_arg("as_tensor", dtype) if dtype is not None else None
        return _place(_checked(data), dt, device, False)
    if getattr(type(data), "_ember_storage", False) is True:  # a storage: its bytes, shared
        raw = data._bytes()
        dt = _dtype_arg("asarray", dtype) if dtype is not None else _dtype.uint8
        return _place(raw.view(dt.np) if dt.np != raw.dtype else raw, None, device, False)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Any:
    """A CPU tensor sharing memory with ``arr`` (writes show up in both)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return TensorBase._make(_checked(arr))


def zeros(*size: Any, out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: bool = False, requires_grad: bool = False, **size_kw: Any) -> Any:
    """A tensor of zeros. ``size``: ints, one sequence, or ``size=``; with ``out=``, the dtype is
    ``out``'s unless given."""
    shape = _args.size("zeros", size, size_kw)
    if layout is not None:
        _args.check_layout(layout)
    if out is not None:
        return _into(out, "zeros", np.zeros, shape, dtype, device, requires_grad)
    dt = _dtype_arg("zeros", dtype) if dtype is not None else _dtype.get_default_dtype()
    if (device is not None or _backend.default_device is not None) and _backend.meta_target(device):
        return _place(_backend.MetaArray(shape, dt.np), dt, device, requires_grad)
    return _place(np.zeros(shape, dt.np), dt, device, requires_grad)


def ones(*size: Any, out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: bool = False, requires_grad: bool = False, **size_kw: Any) -> Any:
    """A tensor of ones (``size`` and ``out=`` as in ``zeros``)."""
    shape = _args.size("ones", size, size_kw)
    if layout is not None:
        _args.check_layout(layout)
    if out is not None:
        return _into(out, "ones", np.ones, shape, dtype, device, requires_grad)
    dt = _dtype_arg("ones", dtype) if dtype is not None else _dtype.get_default_dtype()
    if (device is not None or _backend.default_device is not None) and _backend.meta_target(device):
        return _place(_backend.MetaArray(shape, dt.np), dt, device, requires_grad)
    return _place(np.ones(shape, dt.np), dt, device, requires_grad)


def empty(*size: Any, memory_format: Any = None, out: Any = None, dtype: Any = None,
          layout: Any = None, device: Any = None, pin_memory: bool = False,
          requires_grad: bool = False, **size_kw: Any) -> Any:
    """An uninitialised tensor (``size`` and ``out=`` as in ``zeros``)."""
    shape = _args.size("empty", size, size_kw, _args.EMPTY)
    if layout is not None:
        _args.check_layout(layout)
    if memory_format is not None:
        _args.check_memory_format(memory_format, len(shape), preserve=False)
    if out is not None:
        return _into(out, "empty", np.empty, shape, dtype, device, requires_grad)
    dt = _dtype_arg("empty", dtype) if dtype is not None else _dtype.get_default_dtype()
    if (device is not None or _backend.default_device is not None) and _backend.meta_target(device):
        return _place(_backend.MetaArray(shape, dt.np), dt, device, requires_grad)
    return _place(np.empty(shape, dt.np), dt, device, requires_grad)


def full(size: Any, fill_value: Any, *, out: Any = None, dtype: Any = None, layout: Any = None,
         device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """A tensor of ``size`` (a sequence) filled with ``fill_value``; the dtype follows the value
    (bool, int64 or the default float) unless ``dtype`` or ``out`` gives one."""
    shape = _args.sequence("full", "size", size)
    fill_value = _fill_value("full", fill_value)
    if layout is not None:
        _args.check_layout(layout)
    if out is not None:
        dt = _args.out_dtype("full", dtype, out)
        fill_value = _fill_in(fill_value, dt)
        res = _place(np.full(shape, fill_value, dt.np), dt, _out_device(out, device), False)
        return _args.write_new(out, res, "full", requires_grad)
    dt = _dtype_arg("full", dtype) if dtype is not None else _dtype.scalar_dtype(fill_value)
    fill_value = _fill_in(fill_value, dt)
    if (device is not None or _backend.default_device is not None) and _backend.meta_target(device):
        return _place(_backend.MetaArray(shape, dt.np), dt, device, requires_grad)
    return _place(np.full(shape, fill_value, dt.np), dt, device, requires_grad)


def zeros_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: bool = False, requires_grad: bool = False,
               memory_format: Any = None) -> Any:
    """Zeros of ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("zeros_like", input, dtype, device, layout, memory_format)
    if (dev is not None or _backend.default_device is not None) and _backend.meta_target(dev):
        return _place(_meta_like(input, dt), dt, dev, requires_grad)
    return _place(_like_array(input._data, memory_format, np.zeros, dt.np), dt, dev, requires_grad)


def ones_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: bool = False, requires_grad: bool = False,
              memory_format: Any = None) -> Any:
    """Ones of ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("ones_like", input, dtype, device, layout, memory_format)
    if (dev is not None or _backend.default_device is not None) and _backend.meta_target(dev):
        return _place(_meta_like(input, dt), dt, dev, requires_grad)
    return _place(_like_array(input._data, memory_format, np.ones, dt.np), dt, dev, requires_grad)


def empty_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: bool = False, requires_grad: bool = False,
               memory_format: Any = None) -> Any:
    """An uninitialised tensor of ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("empty_like", input, dtype, device, layout, memory_format)
    if (dev is not None or _backend.default_device is not None) and _backend.meta_target(dev):
        return _place(_meta_like(input, dt), dt, dev, requires_grad)
    return _place(_like_array(input._data, memory_format, np.empty, dt.np), dt, dev, requires_grad)


def full_like(input: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
              memory_format: Any = None) -> Any:
    """``fill_value`` in ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("full_like", input, dtype, device, layout, memory_format)
    fill_value = _fill_in(_fill_value("full_like", fill_value), dt)
    if (dev is not None or _backend.default_device is not None) and _backend.meta_target(dev):
        return _place(_meta_like(input, dt), dt, dev, requires_grad)
    return _place(_like_array(input._data, memory_format,
                              lambda n, t: np.full(n, fill_value, t), dt.np),
                  dt, dev, requires_grad)


def arange(*args: Any, out: Any = None, dtype: Any = None, layout: Any = None,
           device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
           **bounds: Any) -> Any:
    """``arange(end)`` or ``arange(start, end, step=1)``: values from ``start`` to ``end``
    (exclusive) by ``step``. All-int bounds give int64, else the default float; ``dtype`` or
    ``out`` can say otherwise (an integer dtype counts in integers: bounds and step truncated).

    The bounds bind as PyTorch's overloads do: ``arange(5)`` and ``arange(end=5)`` are the end,
    ``arange(start=1)`` raises TypeError (``inspect.signature`` shows the merged form)."""
    b = _args.overload("arange", args, bounds, _ARANGE_FORMS, {"step": 1}, _args.FACTORY,
                       {"start": 0, "step": 1})
    start, end, step = b["start"], b["end"], b["step"]
    vals = [v.item() if isinstance(v, TensorBase) else v for v in (start, end, step)]
    start, end, step = vals
    if out is not None:
        dt = _args.out_dtype("arange", dtype, out)
    elif dtype is not None:
        dt = _dtype_arg("arange", dtype)
    else:
        is_int = all(isinstance(v, (int, np.integer)) for v in vals)
        dt = _dtype.int64 if is_int else _dtype.get_default_dtype()
    if layout is not None:
        _args.check_layout(layout)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dt is _dtype.bool_:
        raise NotImplementedError('"arange_cpu" not implemented for \'Bool\': give an integer or '
                                  "float dtype, then compare or cast to bool")
    if not dt.is_floating_point:  # PyTorch counts integer ranges in integers
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError(f"step must be nonzero (the step {vals[2]} truncates to 0 in {dt})")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign (start="
                           f"{start}, end={end}, step={step})")
    n = max(math.ceil((end - start) / step), 0)
    if dt.is_floating_point:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    else:
        arr = np.arange(start, start + n * step, step, dtype=np.int64)
    if out is None:
        return _place(arr, dt, device, requires_grad)
    if out.numel() not in (0, n):
        warnings.warn(
            f"The number of elements in the out tensor of shape {list(out.shape)} is "
            f"{out.numel()} which does not match the computed number of elements {n}. Note that "
            "this may occur as a result of rounding error. The out tensor will be resized to a "
            f"tensor of shape ({n},).", UserWarning, stacklevel=2)
    res = _place(arr, dt, _out_device(out, device), False)
    return _args.write_new(out, res, "arange", requires_grad)


def range_(start: Any, end: Any, step: Any = 1, *, out: Any = None, dtype: Any = None,
           layout: Any = None, device: Any = None, pin_memory: bool = False,
           requires_grad: bool = False) -> Any:
    """Deprecated ``torch.range``: like arange but includes ``end``; the default float dtype."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior "
        "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
        "values in [start, end).", UserWarning, stacklevel=2)
    start, end, step = (v.item() if isinstance(v, TensorBase) else v for v in (start, end, step))
    if layout is not None:
        _args.check_layout(layout)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign (start="
                           f"{start}, end={end}, step={step})")
    dt = _args.out_dtype("range", dtype, out) if out is not None else _dt(dtype)
    n = int(math.floor((end - start) / step)) + 1
    arr = (start + np.arange(n) * step).astype(dt.np)
    if out is None:
        return _place(arr, dt, device, requires_grad)
    return _args.write_new(out, _place(arr, dt, _out_device(out, device), False), "range",
                           requires_grad)


def linspace(start: Any, end: Any, steps: int, *, out: Any = None, dtype: Any = None,
             layout: Any = None, device: Any = None, pin_memory: bool = False,
             requires_grad: bool = False) -> Any:
    """``steps`` values evenly spaced from ``start`` to ``end`` (both included)."""
    s, e, n = _span("linspace", start, end, steps)
    if layout is not None:
        _args.check_layout(layout)
    dt = _args.out_dtype("linspace", dtype, out) if out is not None else _dt(dtype)
    arr = _linspace_values(s, e, n, dt.np)
    if out is None:
        return _place(arr, dt, device, requires_grad)
    return _args.write_new(out, _place(arr, dt, _out_device(out, device), False), "linspace",
                           requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, out: Any = None,
             dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool = False,
             requires_grad: bool = False) -> Any:
    """``steps`` values ``base ** x`` for ``x`` evenly spaced from ``start`` to ``end``."""
    s, e, n = _span("logspace", start, end, steps)
    if layout is not None:
        _args.check_layout(layout)
    dt = _args.out_dtype("logspace", dtype, out) if out is not None else _dt(dtype)
    arr = np.logspace(s, e, n, base=base).astype(dt.np)
    if out is None:
        return _place(arr, dt, device, requires_grad)
    return _args.write_new(out, _place(arr, dt, _out_device(out, device), False), "logspace",
                           requires_grad)


def eye(n: int, m: Any = _M_IS_N, *, out: Any = None, dtype: Any = None, layout: Any = None,
        device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """The ``n`` x ``m`` identity matrix (``m`` defaults to ``n``; ``m=None`` is refused, as
    in PyTorch)."""
    n = _args.integer("eye", "n", n)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is _M_IS_N:
        m = None
    else:
        m = _args.integer("eye", "m", m)
        if m < 0:
            raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    if layout is not None:
        _args.check_layout(layout)
    dt = _args.out_dtype("eye", dtype, out) if out is not None else _dt(dtype)
    arr = np.eye(n, m, dtype=dt.np)
    if out is None:
        return _place(arr, dt, device, requires_grad)
    return _args.write_new(out, _place(arr, dt, _out_device(out, device), False), "eye",
                           requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """A 0-d tensor holding ``s`` (the default float dtype unless given)."""
    if layout is not None:
        _args.check_layout(layout)
    dt = _dt(dtype)
    return _place(np.asarray(s, dt.np), dt, device, requires_grad)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Any:
    """An uninitialised tensor of ``size``; ember arrays pick their own (contiguous) strides."""
    shape = _args.sequence("empty_strided", "size", size)
    strides = _args.sequence("empty_strided", "stride", stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(shape)} has "
                           f"{len(shape)} dims, stride {list(strides)} has {len(strides)}")
    if _backend.meta_target(device):  # a meta tensor keeps the strides asked (it has no memory)
        dt = _dt(dtype)
        item = np.dtype(dt.np).itemsize
        arr = _backend.MetaArray(shape, dt.np, tuple(s * item for s in strides))
        return _place(arr, dt, device, requires_grad)
    return empty(shape, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def complex(*_: Any, **__: Any) -> Any:
    raise NotImplementedError("ember does not implement torch.complex yet (no complex dtypes)")


def _linspace_values(s: Any, e: Any, n: int, np_dt: Any) -> np.ndarray:
    """PyTorch's linspace values: step = (end - start) / (steps - 1) in the dtype (double for
    integer dtypes, whose start and end are truncated first); the first half counted up from
    start, the second half down from end, each value one fused multiply-add (float32: exact in
    float64; float64: in extended precision, which agrees but for rare last-bit cases; integers:
    in double, then truncated). Other dtypes (half, bfloat16, complex) take NumPy's linspace."""
    np_dt = np.dtype(np_dt)
    kind = np_dt.kind
    if n < 2 or not (np_dt in (np.float32, np.float64) or kind in "iu"):
        return np.linspace(s, e, n).astype(np_dt)
    if np_dt == np.float32:
        s0, e0 = np.float32(s), np.float32(e)
        step = np.float64((e0 - s0) / np.float32(n - 1))
        wide: Any = np.float64
    elif kind in "iu":  # double arithmetic, then truncation
        s0, e0 = np.float64(np_dt.type(int(s))), np.float64(np_dt.type(int(e)))
        step = (e0 - s0) / np.float64(n - 1)
        wide = np.float64
    else:
        s0, e0 = np.float64(s), np.float64(e)
        step = np.longdouble((e0 - s0) / np.float64(n - 1))
        wide = np.longdouble
    h = n // 2  # (each half computed alone: no full-size index, where or second pass)
    res = np.empty(n, np_dt)
    up = np.arange(h, dtype=wide)
    up *= step
    up += wide(s0)
    res[:h] = up
    down = np.arange(n - 1 - h, -1, -1, dtype=wide)  # n - 1 - idx for idx in [h, n)
    down *= step
    np.subtract(wide(e0), down, out=down)
    res[h:] = down
    return res


def _into(out: Any, name: str, make: Any, shape: tuple, dtype: Any, device: Any,
          requires_grad: bool) -> Any:
    """``make(shape, np_dtype)`` written into ``out`` (a factory's ``out=``)."""
    dt = _args.out_dtype(name, dtype, out)
    res = _place(make(shape, dt.np), dt, _out_device(out, device), False)
    return _args.write_new(out, res, name, requires_grad)


def _out_device(out: Any, device: Any) -> Any:
    return out.device if device is None else device


def _fill_value(name: str, value: Any) -> Any:
    """``full``'s ``fill_value``: a number, or a 0-d tensor read as one."""
    if isinstance(value, TensorBase):
        if value._data.ndim != 0:
            raise TypeError(f"{name}(): argument 'fill_value' must be Number, not Tensor (got a "
                            f"tensor of shape {list(value.shape)}; pass a 0-d tensor or a number)")
        return value.item()
    return value


def _fill_in(value: Any, dt: Any) -> Any:
    """``value`` for a tensor of dtype ``dt`` (a complex number into a real one: _args's rule)."""
    if isinstance(value, builtins.complex) and not dt.is_complex:
        return _args.real_part_of(value, dt)
    return value


def _span(name: str, start: Any, end: Any, steps: Any) -> tuple[Any, Any, int]:
    """``linspace``/``logspace``'s bounds (numbers or 0-d tensors) and ``steps`` (an int >= 0)."""
    bounds = []
    for arg, v in (("start", start), ("end", end)):
        if isinstance(v, TensorBase):
            if v._data.ndim != 0:
                raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, "
                                   f"but got {arg} with {v._data.ndim} dimension(s).")
            v = v.item()
        bounds.append(v)
    n = _args.integer(name, "steps", steps)
    if n < 0:
        raise RuntimeError("number of steps must be non-negative")
    return bounds[0], bounds[1], n


def _place(arr: Any, dt: Any, device: Any, requires_grad: bool) -> Any:
    """Wrap a CPU array: cast to ``dt``, move to ``device``, set ``requires_grad``."""
    T = TensorBase
    if dt is not None and arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    if device is None:
        device = _backend.default_device  # (None: the CPU; ``with torch.device(...)`` sets it)
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
        arr = _backend.to_numpy(data._data)
        if arr.size != 1:  # a tensor inside a list is a number, as in PyTorch (stack them)
            if arr.dtype.kind in "biu":
                raise TypeError("only integer tensors of a single element can be converted to "
                                f"an index (a list holds a tensor of shape {tuple(arr.shape)}: "
                                "torch.stack the tensors)")
            raise ValueError("only one element tensors can be converted to Python scalars (a "
                             f"list holds a tensor of shape {tuple(arr.shape)}: torch.stack "
                             "the tensors)")
        return arr.reshape(())
    if isinstance(data, (list, tuple)):
        return [_unnest(x) for x in data]
    return data


def _nested_dtype(data: Any) -> Any:
    """PyTorch's dtype for nested lists that hold tensors: each element's type promoted with the
    others', a tensor counting with its own dtype (``[0.0, tensor(2., dtype=float64)]`` is
    float64, ``[1, tensor(2, dtype=int8)]`` int64), Python numbers as they always do."""
    result = None
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if isinstance(x, TensorBase):
            t = x.dtype
        elif isinstance(x, (bool, np.bool_)):
            t = _dtype.bool_
        elif isinstance(x, (int, np.integer)):
            t = _dtype.int64 if isinstance(x, int) else _dtype.from_numpy(np.asarray(x).dtype)
        elif isinstance(x, builtins.complex):  # (this room defines torch.complex)
            t = _dtype.get_default_dtype().to_complex()
        elif isinstance(x, (float, np.floating)):
            t = _dtype.get_default_dtype() if isinstance(x, float) else \
                _dtype.from_numpy(np.asarray(x).dtype)
        else:
            return None  # anything else: NumPy's reading, as before
        result = t if result is None else _dtype.promote_types(result, t)
    return result


def _ragged_message(data: Any) -> tuple[type, str] | None:
    """PyTorch's error for nested lists of unequal lengths (``[[1, 2], [3]]``: ValueError) or a
    number where a list is expected (TypeError): the first such entry, and where it is."""
    sizes = []
    first = data
    while isinstance(first, (list, tuple)):
        sizes.append(len(first))
        if not first:
            break
        first = first[0]
    stack = [(data, 0, ())]
    while stack:
        seq, dim, where = stack.pop()
        if dim >= len(sizes):
            continue
        at = "".join(f"[{i}]" for i in where)
        hint = ("every row of nested lists must have the same length; pad the short ones, or "
                "keep them as separate tensors")
        if not isinstance(seq, (list, tuple)):
            return TypeError, (f"not a sequence (data{at} is {seq!r:.20} ({type(seq).__name__}) where "
                               f"data{'[0]' * dim} is a list of {sizes[dim]}: {hint})")
        if len(seq) != sizes[dim]:
            return ValueError, (
                f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(seq)}) "
                f"(data{at} differs from data{'[0]' * dim}: {hint})")
        for i in range(len(seq) - 1, -1, -1):
            stack.append((seq[i], dim + 1, (*where, i)))
    return None


def _infer(data: Any, dtype: Any = None) -> np.ndarray:
    """PyTorch's inference: Python floats -> default float, ints -> int64, bools -> bool.
    With ``dtype`` given, Python numbers go straight to it (no detour through float32)."""
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        inferred = None
        if isinstance(data, (list, tuple)) and any(isinstance(x, TensorBase) for x in _flat_first(data)):
            inferred = None if dtype is not None else _nested_dtype(data)
            data = _unnest(data)
        try:
            arr = np.array(data)
        except ValueError as e:
            ragged = _ragged_message(data)
            if ragged is not None:
                raise ragged[0](ragged[1]) from None
            raise ValueError(f"could not build a tensor from this data: {e}") from None
        if arr.dtype.kind in "US":  # (before a dtype= cast: PyTorch refuses strings either way)
            if isinstance(data, (list, tuple)):  # a string in a list reads as a sequence there
                raise ValueError("too many dimensions 'str'")
            raise TypeError(f"new(): invalid data type '{'str' if arr.dtype.kind == 'U' else 'bytes'}'")
        if dtype is not None:
            arr = arr.astype(dtype.np)
        elif inferred is not None:
            arr = arr.astype(inferred.np, copy=False)
        elif arr.dtype == np.float64:
            arr = arr.astype(_dtype.get_default_dtype().np)
        elif arr.dtype == np.complex128:  # Python complex numbers: complex64 by default
            arr = arr.astype(_dtype.get_default_dtype().to_complex().np)
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
        return _dtype_arg("factory", dtype)
    return default or _dtype.get_default_dtype()


def _dtype_arg(name: str, dtype: Any) -> Any:
    """A factory's ``dtype=`` argument: a dtype (or Python's float/int/bool, or a NumPy type),
    never a string, as PyTorch's factories refuse one (``dtype="float32"``: TypeError)."""
    if isinstance(dtype, str):
        raise TypeError(
            f"{name}(): argument 'dtype' must be torch.dtype, not str (write "
            f"dtype=torch.{dtype.removeprefix('torch.')}, not dtype={dtype!r})")
    return _dtype.to_dtype(dtype)


def _like(name: str, input: Any, dtype: Any, device: Any, layout: Any,
          memory_format: Any) -> tuple[Any, Any]:
    """A ``*_like`` function's dtype and device: ``input``'s unless given."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if layout is not None:
        _args.check_layout(layout)
    if memory_format is not None:
        _args.check_memory_format(memory_format, input._data.ndim)
    if device is None and (not _backend.is_cpu_array(input._data)
                           or _backend.default_device is not None):
        device = input.device  # (a *_like follows its input, not the default device)
    return (_dtype_arg(name, dtype) if dtype is not None else input.dtype), device


def _like_strides(d: Any, memory_format: Any) -> tuple | None:
    """The strides (in elements) of a ``*_like`` result for the input array ``d``, PyTorch's:
    None for C order (``contiguous_format``, or a C-ordered input: the common case, which NumPy's
    own factories make). ``preserve_format`` (the default): ``d``'s strides when ``d`` is dense
    (size-1 dims' too), else dense strides in the order of ``d``'s (a stable sort, innermost
    first, in which a stride of 0 compares with nothing and equal strides put the smaller size
    inside); ``channels_last``/``channels_last_3d``: the channels innermost."""
    shape = d.shape
    if memory_format is not None:
        name = memory_format._name
        if name == "channels_last" or name == "channels_last_3d":
            inner_first = (1, 3, 2, 0) if len(shape) == 4 else (1, 4, 3, 2, 0)
            return _dense_strides(shape, inner_first, 0)  # (a size-0 dim zeroes the outer ones)
        if name != "preserve_format":  # contiguous_format: C order (explicit when empty, as
            return _dense_strides(shape, range(len(shape) - 1, -1, -1)) if 0 in shape else None
    if d.flags.c_contiguous and 1 not in shape and 0 not in shape:  # (NumPy's are 0 there)
        return None
    item = d.itemsize
    strides = [(-s if s < 0 else s) // item for s in d.strides]
    n = len(shape)
    big = sorted((strides[i], shape[i]) for i in range(n) if shape[i] > 1)
    expect = 1
    for st, size in big:  # dense (PyTorch's non-overlapping and dense, as every empty tensor
        if st != expect and 0 not in shape:  # is): its own strides
            break
        expect *= size
    else:
        out = tuple(strides)
        return None if 0 not in shape and out == _dense_strides(shape, range(n - 1, -1, -1)) \
            else out
    perm = list(range(n - 1, -1, -1))  # innermost first
    for i in range(1, n):
        j = i
        for k in range(i - 1, -1, -1):
            s0, s1 = strides[perm[k]], strides[perm[j]]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                break
            if s0 > s1 or shape[perm[k]] > shape[perm[j]]:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
    out = _dense_strides(shape, perm)
    return None if 0 not in shape and perm == list(range(n - 1, -1, -1)) else out


def _dense_strides(shape: tuple, inner_first: Any, empty: int = 1) -> tuple:
    """Dense strides (in elements) with the dims laid out in ``inner_first`` order (innermost
    first; a size-0 dim counts as ``empty``: 1 in PyTorch's contiguous and inferred strides, 0
    in its channels_last ones)."""
    out = [0] * len(shape)
    step = 1
    for d in inner_first:
        out[d] = step
        step *= shape[d] or empty
    return tuple(out)


def _like_array(d: Any, memory_format: Any, make: Any, np_dtype: Any) -> Any:
    """A ``*_like`` result's array for the input array ``d`` in PyTorch's layout
    (``_like_strides``), its memory made by ``make(count, np_dtype)`` (``np.zeros``...)."""
    shape = d.shape
    if (memory_format is None or memory_format is _PRESERVE) and d.flags.c_contiguous \
            and 1 not in shape and 0 not in shape:
        return make(shape, np_dtype)  # C order, the common case
    st = _like_strides(d, memory_format)
    if st is None:
        return make(shape, np_dtype)
    n = 1
    for k in shape:
        n *= k
    return _strided(make(n, np_dtype), shape, st)


def _strided(flat: Any, shape: tuple, strides: tuple) -> Any:
    """An array of ``shape`` with the element ``strides`` (dense) over the memory of ``flat``,
    an array of that many elements in memory order."""
    item = flat.itemsize
    return np.ndarray(shape, flat.dtype, flat, 0, tuple([s * item for s in strides]))


def _contiguous_strides(shape: tuple, strides: tuple | None) -> bool:
    """Whether ``strides`` (None: C order) are C-contiguous, size-1 dims aside (``is_contiguous``)."""
    if strides is None:
        return True
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _meta_like(input: Any, dt: Any) -> Any:
    """A meta array of ``input``'s shape, laid out as ``input`` (PyTorch's preserve_format)."""
    d = input._data
    like = _backend.to_device(d, _backend.META) if not _backend.is_meta(d) else d
    return like.astype(dt.np) if like.dtype != dt.np else like.copy("K")


asarray = as_tensor


arange.__signature__ = _args.shown_signature(  # type: ignore[attr-defined]
    arange, {"start": 0, "end": None, "step": 1})
