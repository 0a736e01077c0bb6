"""Casts and copies: dtype and device conversion (``Tensor.to``), ``clone``, and the values
that the in-place writers ``copy_``, ``fill_`` and ``zero_`` store (``ops/inplace.py`` writes them).

The bottom of the pointwise family: ``ops/_promote.py`` casts operands with ``cast``;
arithmetic is in ``ops/pointwise.py``, math functions in ``ops/pointwise_math.py``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype, _dtype_info
from .. import _kernels_loader as _kernels
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import _args
from .creation import tensor

__all__ = [
    "clone", "result_type",
]


# torch.result_type's overloads, tried in order: (tensor, other), (scalar, tensor), (scalar1,
# scalar2); a "tensor" must be a tensor, a "scalar" a number
_RESULT_TYPE_FORMS = (("tensor", "other"), ("scalar", "tensor"), ("scalar1", "scalar2"))


def result_type(*args: Any, **kwargs: Any) -> Any:
    """The dtype an arithmetic op on the two operands computes in: ``result_type(tensor,
    other)``, ``(scalar, tensor)`` or ``(scalar1, scalar2)``, bound as PyTorch's overloads
    (``result_type(tensor=1, other=2)`` raises TypeError; ``result_type(1, 2.0)`` is float32;
    ``x2=`` is NumPy's name for ``other``)."""
    if "x2" in kwargs:
        if "other" in kwargs:
            raise TypeError("result_type() got values for argument 'other' from both 'other' "
                            "and 'x2'")
        kwargs["other"] = kwargs.pop("x2")
    for form in _RESULT_TYPE_FORMS:
        if len(args) > 2 or any(k not in form or k in form[:len(args)] for k in kwargs):
            continue
        bound = {**dict(zip(form, args)), **kwargs}
        if len(bound) == 2 and all(isinstance(v, TensorBase) == (k == "tensor")
                                   for k, v in bound.items() if k != "other"):
            return _dtype.result_type(*(bound[k] for k in form))
    names = {k for form in _RESULT_TYPE_FORMS for k in form}
    for key in kwargs:
        if key not in names:
            raise _args.unexpected_keyword("result_type", key, names)
    given = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in
                                                kwargs.items()]
    raise TypeError(f"result_type() received an invalid combination of arguments ({', '.join(given)}"
                    "); PyTorch's forms: result_type(Tensor tensor, Tensor/Number other), "
                    "result_type(Number scalar, Tensor tensor), result_type(Number scalar1, Number "
                    "scalar2)")


def cast(x: Any, dt: Any) -> Any:
    """``x`` in dtype ``dt`` (the kernel of ``Tensor.to(dtype)``); ``x`` itself if it already is."""
    dt = _dtype.to_dtype(dt)
    if x._data.dtype == dt.np:
        return x
    if x._data.dtype.kind == "c" and not dt.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)  # PyTorch's warning (NumPy's would name NumPy)
    if x._rg and not (dt.is_floating_point or dt.is_complex):
        # integer results carry no gradient
        return TensorBase._make(_real_part(x._data, dt.np).astype(dt.np))
    return Cast.apply(x, dt.np)


def to_device(x: Any, dev: Any) -> Any:
    """``x`` on device ``dev`` (the kernel of ``Tensor.to(device)``), recorded for autograd."""
    return ToDevice.apply(x, dev)


def clone(input: Any, *, memory_format: Any = _dtype_info.preserve_format) -> Any:
    """A copy of ``input`` in ``input``'s layout (``preserve_format``, the default) or in C order
    (``memory_format=torch.contiguous_format``)."""
    if memory_format is not None and getattr(memory_format, "_name", "") == "contiguous_format":
        return CloneContiguous.apply(input)
    return Clone.apply(input)


def copy_from(x: Any, src: Any) -> Any:
    """The value ``x.copy_(src)`` writes (src broadcast to x's shape, in x's dtype).

    ``src`` may live on another device, as in PyTorch: it is moved to x's device first by a
    recorded ``ToDevice`` (so a gradient flows back to src's device), and the copy itself then
    sees two tensors on one device."""
    if not isinstance(src, TensorBase):
        src = as_tensor_arg(src)
        if not isinstance(src, TensorBase):  # a number
            src = TensorBase._make(np.asarray(src, dtype=x._data.dtype))
    dev = _backend.device_of(x._data)
    if _backend.device_of(src._data) != dev:
        src = to_device(src, dev)
    return CopyFrom.apply(x, src)


def fill(input: Any, value: Any) -> Any:
    """The value ``input.fill_(value)`` writes."""
    x = input
    if isinstance(value, TensorBase):
        if value._data.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        return copy_from(x, value)
    if isinstance(value, complex) and x._data.dtype.kind != "c":
        value = _args.real_part_of(value, x.dtype)
    return Fill.apply(x, value)


def zero(x: Any) -> Any:
    """The value ``x.zero_()`` writes."""
    return Zero.apply(x, 0)


# ---------------------------------------------------------------------------------------------
# op classes


class Cast(Op):
    """out = x as another dtype          grad_x = grad (cast back by the engine)
    complex -> real: out = real(x), grad_x = grad (a real gradient, as complex)
    real -> complex: grad_x = real(grad) (PyTorch's rule for a real input of a complex op)"""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, np_dtype: Any) -> Any:
        if x.dtype.kind == "c" and np_dtype.kind != "c":
            x = x.real
        return _layout_copy(x, np_dtype)  # PyTorch's preserve_format

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        meta = ctx._meta[0]  # (shape, dtype) of x, None where x had no edge to record
        if meta is not None and meta[1].kind != "c" and _is_complex(grad):
            return grad.real, None
        if meta is not None and meta[1].itemsize + grad.dtype.itemsize == 6 and (
                fast := _kernels.half_cast(grad, meta[1])) is not None:
            return fast, None  # (the eager kernel casts a half gradient back to float32)
        return grad, None


class ToDevice(Op):
    """out = x on another device          grad_x = grad moved back"""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, dev: Any) -> Any:
        ctx.src = _backend.device_of(x)
        return _backend.to_device(x, dev)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(ToDevice, grad, ctx.src), None


class Clone(Op):
    """out = copy of x (in x's layout when dense, as PyTorch's preserve_format)
    grad_x = grad"""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _layout_copy(x)
        if 1 in x.shape and out.strides != x.strides and all(
                a == b or n == 1 for a, b, n in zip(out.strides, x.strides, x.shape)):
            return _backend.with_strides(out, x.strides)  # a dense x's size-1 strides too
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


class CloneContiguous(Clone):
    """clone(memory_format=torch.contiguous_format): a C-order copy (same rule as Clone)."""

    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.copy()


class CopyFrom(Op):
    """out = src broadcast to x's shape and cast to x's dtype          grad_src = grad"""

    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx: Any, x: Any, src: Any) -> Any:
        xp = ctx.xp
        if _backend.device_of(src) != _backend.device_of(x):
            src = _backend.to_device(src, _backend.device_of(x))
        return xp.broadcast_to(xp.asarray(src, dtype=x.dtype), x.shape).copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        # x's old values are overwritten: they get a zero gradient (x stays in the graph)
        return (ctx.xp.zeros_like(grad) if ctx.needs_input_grad[0] else None), grad


class Fill(Op):
    """out = value everywhere (x's shape and dtype)          grad_x = 0"""

    node_name = "FillBackward2"

    @staticmethod
    def forward(ctx: Any, x: Any, value: Any) -> Any:
        return ctx.xp.full(x.shape, value, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.xp.zeros_like(grad), None


class Zero(Fill):
    """out = 0 everywhere (x's shape and dtype)          grad_x = 0"""

    node_name = "ZeroBackward0"


# ---------------------------------------------------------------------------------------------
# helpers


# what inspect.signature shows: PyTorch's overloads merged
result_type.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
     for n in ("tensor", "other")]
    + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
       for n in ("scalar", "scalar1", "scalar2")])


def as_tensor_arg(x: Any) -> Any:
    """Numbers stay numbers; NumPy arrays and lists become tensors."""
    if isinstance(x, TensorBase):
        return x
    if isinstance(x, np.generic):  # NumPy scalars act as Python scalars, as in PyTorch
        return x.item()
    if isinstance(x, (int, float, bool, complex)):  # (a complex keeps its double precision)
        return x
    return tensor(x)


def view_dtype(x: Any, dt: Any) -> Any:
    """``x.view(dtype)``: the same bytes read as another dtype (a view sharing x's version
    counter). Between sizes, as PyTorch: the last dim is dense and scales by the size ratio
    (float32 (2, 3) -> uint8 (2, 12)); growing needs it divisible by the ratio; a 0-d tensor
    cannot change size. The result never requires grad, even for x's own dtype (PyTorch's)."""
    d = _dtype.to_dtype(dt)
    a = x._data
    if d.np.itemsize != a.itemsize:
        names = (f"to view {_dtype.legacy_name(x.dtype)} as {_dtype.legacy_name(d)} "
                 "(different element sizes)")
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {names}")
        if a.strides[-1] != a.itemsize and a.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {names}, but got "
                               f"{a.strides[-1] // a.itemsize}")
        ratio = d.np.itemsize // a.itemsize
        if ratio and a.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {names}, but got "
                               f"{a.shape[-1]}")
    # no history and no autograd base (PyTorch's result never requires grad and is no autograd
    # view); the version counter is shared, so saved tensors still see writes through it
    out = TensorBase._make(a.view(d.np))
    out._version = x._version_counter()
    return out


def _dense(a: Any) -> bool:
    """True when ``a``'s elements fill its memory span without gaps or overlaps (a permuted,
    flipped or contiguous array; not a strided slice or an expanded one)."""
    expect = a.itemsize
    for st, n in sorted((-st if st < 0 else st, n) for st, n in zip(a.strides, a.shape) if n != 1):
        if st != expect:
            return False
        expect *= n
    return True


def _layout_copy(a: Any, dtype: Any = None) -> Any:
    """A copy of ``a`` (in ``dtype``) with PyTorch's ``preserve_format`` layout: ``a``'s
    strides when ``a`` is dense (a transposed tensor's clone is transposed too), else dense
    strides in the order of ``a``'s (``_dense_like``)."""
    dtype = a.dtype if dtype is None else dtype
    if a.flags.c_contiguous or _dense(a):
        if (a.dtype.itemsize == 2 or dtype.itemsize == 2) and (
                fast := _kernels.half_cast(a, dtype)) is not None:
            return fast  # the eager kernel: float32 <-> bfloat16/float16 in one pass
        return a.astype(dtype)  # (order "K": a dense array keeps its strides)
    out = _dense_like(a, dtype)
    out[...] = a
    return out


def _dense_like(a: Any, dtype: Any) -> Any:
    """An empty array shaped like ``a`` whose dims are laid out in the order of ``a``'s strides
    (PyTorch's infer_dense_strides: a stable sort, innermost dim first, in which a stride of 0
    compares with nothing and keeps its place; equal strides put the smaller size inside)."""
    shape, strides = a.shape, a.strides
    perm = list(range(a.ndim - 1, -1, -1))  # innermost first
    for i in range(1, len(perm)):
        j = i
        for k in range(i - 1, -1, -1):
            s0, s1 = abs(strides[perm[k]]), abs(strides[perm[j]])
            if s0 < s1 and s0 != 0:
                break
            if s0 > s1 != 0 or (s0 == s1 != 0 and shape[perm[k]] > shape[perm[j]]):
                perm[k], perm[j] = perm[j], perm[k]
                j = k
    outer_first = perm[::-1]
    xp = _backend.xp_of(a)
    buf = xp.empty(tuple(shape[d] for d in outer_first), dtype)
    return buf.transpose(tuple(outer_first.index(d) for d in range(a.ndim)))


def _is_complex(a: Any) -> bool:
    """Whether an array (or, under create_graph, a tensor) holds complex values."""
    dt = a.dtype
    return dt.is_complex if isinstance(dt, _dtype.dtype) else dt.kind == "c"


def _real_part(a: Any, np_dtype: Any) -> Any:
    """``a``'s real part when ``a`` is complex and ``np_dtype`` is not (no NumPy warning)."""
    return a.real if a.dtype.kind == "c" and np_dtype.kind != "c" else a
