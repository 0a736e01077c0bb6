"""ember's NumPy-like namespace: what ``ctx.xp`` is while a backward rule runs on tensors
(``create_graph=True``). Each name takes NumPy's argument names and calls ember ops, so a rule
written for arrays records a differentiable graph when handed tensors."""

from __future__ import annotations

from typing import Any

from .._tensor_base import TensorBase
from . import blas as _blas
from . import casting as _cast
from . import comparison as _cmp
from . import joining as _jn
from . import other_matrix as _om
from . import pointwise_complex as _pcx
from . import pointwise_math as _pm
from . import pointwise_piecewise as _pp
from . import shape as _sh
from .creation import ones_like as ol
from .creation import zeros as z
from .creation import zeros_like as zl

exp = _pm.exp


exp2 = _pm.exp2


expm1 = _pm.expm1


log = _pm.log


log1p = _pm.log1p


log2 = _pm.log2


log10 = _pm.log10


sqrt = _pm.sqrt


sin = _pm.sin


cos = _pm.cos


tan = _pm.tan


tanh = _pm.tanh


sinh = _pm.sinh


cosh = _pm.cosh


arctan = _pm.atan


abs = _pp.abs


sign = _pp.sign


floor = _pp.floor


ceil = _pp.ceil


trunc = _pp.trunc


logaddexp = _pm.logaddexp


def maximum(a: Any, b: Any) -> Any:
    """NumPy's maximum: either side may be a number."""
    if not isinstance(a, TensorBase):
        a, b = b, a
    if not isinstance(b, TensorBase):
        return _pp.clamp(a, min=b)
    return _cmp.maximum(a, b)


def minimum(a: Any, b: Any) -> Any:
    """NumPy's minimum: either side may be a number."""
    if not isinstance(a, TensorBase):
        a, b = b, a
    if not isinstance(b, TensorBase):
        return _pp.clamp(a, max=b)
    return _cmp.minimum(a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    return _pp.where(_t(cond), a, b)


def zeros_like(x: Any, dtype: Any = None) -> Any:
    return zl(x, dtype=dtype)


def ones_like(x: Any, dtype: Any = None) -> Any:
    return ol(x, dtype=dtype)


def zeros(shape: Any, dtype: Any = None) -> Any:
    return z(tuple(shape), dtype=dtype)  # one sequence: a 0-d shape () is a valid size


def broadcast_to(x: Any, shape: Any) -> Any:
    return _sh.broadcast_to(_t(x), tuple(shape))


def expand_dims(x: Any, axis: Any) -> Any:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = x.ndim + len(axes)
    for a in sorted(ax % nd for ax in axes):
        x = _sh.unsqueeze(x, a)
    return x


def transpose(x: Any, axes: Any = None) -> Any:
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return _sh.permute(x, tuple(axes))


def swapaxes(x: Any, a: int, b: int) -> Any:
    return _sh.transpose(x, a, b)


def moveaxis(x: Any, src: Any, dst: Any) -> Any:
    return _sh.movedim(x, src, dst)


def matmul(a: Any, b: Any) -> Any:
    return _blas.matmul(a, b)


def einsum(eq: str, *ops: Any) -> Any:
    return _om.einsum(eq, *ops)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return x.sum(axis=axis, keepdims=keepdims)


def reshape(x: Any, shape: Any) -> Any:
    return x.reshape(shape)


def squeeze(x: Any, axis: Any = None) -> Any:
    return x.squeeze(axis) if axis is not None else x.squeeze()


def concatenate(xs: Any, axis: int = 0) -> Any:
    return _jn.cat(list(xs), axis)


def stack(xs: Any, axis: int = 0) -> Any:
    return _jn.stack(list(xs), axis)


def asarray(x: Any, dtype: Any = None) -> Any:
    t = _t(x)
    return t if dtype is None else t.to(dtype)


def flip(x: Any, axis: Any = None) -> Any:
    if axis is None:
        axis = tuple(range(x.ndim))
    return _jn.flip(x, axis if isinstance(axis, (tuple, list)) else (axis,))


def roll(x: Any, shift: Any, axis: Any = None) -> Any:
    return _jn.roll(x, shift, axis)


def tile(x: Any, reps: Any) -> Any:
    return _jn.tile(x, tuple(reps) if isinstance(reps, (tuple, list)) else (reps,))


def repeat(x: Any, repeats: Any, axis: Any = None) -> Any:
    return _jn.repeat_interleave(x, repeats, axis)


def ascontiguousarray(x: Any) -> Any:
    return _sh.contiguous(x)


def _t(x: Any) -> Any:
    return _cast.as_tensor_arg(x)


conj = _pcx.conj
