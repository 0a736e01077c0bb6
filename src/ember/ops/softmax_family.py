"""The softmax family's kernels: ``torch.softmax`` and ``torch.log_softmax`` (also
``Tensor.softmax``), and the fused, numerically stable ops behind them and behind
``F.softmax``/``F.log_softmax``/``F.softmin``/``F.gumbel_softmax`` (in ``nn/activation.py``, with
nn.functional's signature: ``dim=None`` warns and picks a dim, as PyTorch's).
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype
from .. import _kernels_loader as _kernels
from ..autograd.function import Op
from . import _out
from . import casting as _cast
from ._args import user_stacklevel
from ._autocast import cast as _amp_cast
from ._autocast import flag as _amp
from ._promote import opmath
from ._reduce import (
    _make,
    _need,
    _one,
    _quiet,
    _rowsum,
    _t,
    _with_dtype,
    make_outputs_contiguous,
)

__all__ = ["softmax", "log_softmax"]


def softmax_along(
    op: type[Op], input: Any, dim: Any, dtype: Any, fname: str, stacklevel: int = 2
) -> Any:
    """Run ``op`` (Softmax or LogSoftmax) along ``dim``: the one kernel behind ``torch.softmax``,
    ``Tensor.softmax`` and ``F.softmax`` (and their log twins); ``dtype`` casts the input first."""
    if _amp.active and dtype is None:
        (input,) = _amp_cast(fname, input)
    x = _t(input)
    if x._data.size == 0 and not (x.is_floating_point() and (
            dtype is None or _dtype.to_dtype(dtype).is_floating_point)):
        # PyTorch returns an empty tensor (of the integer/bool dtype) rather than raising
        _softmax_dim(x, dim, fname, stacklevel + 1)
        return _make((x._data if dtype is None else _cast.cast(x.detach(), _dtype.to_dtype(
            dtype))._data).copy())
    if dtype is not None and not _dtype.to_dtype(dtype).is_floating_point:
        raise NotImplementedError(
            f'"{fname}" not implemented for \'{_dtype.legacy_name(_dtype.to_dtype(dtype))}'
            "': pass a floating dtype=, e.g. dtype=torch.float32"
        )
    x = _with_dtype(_t(input), dtype)
    if not x.is_floating_point():
        raise NotImplementedError(
            f'"{fname}" not implemented for \'{_dtype.legacy_name(x.dtype)}\': convert first, e.g. x.float(), '
            "or pass dtype=torch.float32"
        )
    d = _softmax_dim(x, dim, fname, stacklevel + 1)
    if x._data.dtype.itemsize == 2:  # float16/bfloat16: computed in float32, rounded once
        op = opmath(op)
    if x._data.ndim == 0:
        return op.apply(x.reshape(1), 0).reshape(())
    return op.apply(x, d)


def softmax(input: Any, dim: int, dtype: Any = None, *, out: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (``dtype`` casts first)."""
    res = softmax_along(Softmax, input, dim, dtype, "softmax")
    return res if out is None else _out.write(out, res, "softmax")


def log_softmax(input: Any, dim: int, dtype: Any = None, *, out: Any = None) -> Any:
    """``x - logsumexp(x)`` along ``dim``, computed stably (``dtype`` casts first)."""
    res = softmax_along(LogSoftmax, input, dim, dtype, "log_softmax")
    return res if out is None else _out.write(out, res, "log_softmax")


class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along dim          grad_x = y * (grad - sum(grad * y))"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        if x.shape[axis] == 0:
            out = x.copy()
        elif (out := _kernels.softmax(x, axis=axis)) is not None:
            pass  # the eager kernel: one loop per row (or per column block of a middle dim)
        else:
            with _quiet(xp):  # an all -inf row gives NaN, as in PyTorch
                out = xp.exp(x - x.max(axis=axis, keepdims=True))
                out /= _rowsum(out, axis)
        if _need(ctx):
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (y,) = ctx.saved
        if (gx := _kernels.softmax_backward(y, grad, axis=ctx.axis)) is not None:
            return gx, None
        return y * (grad - _rowsum(grad * y, ctx.axis)), None


class LogSoftmax(Op):
    """y = x - max - log(sum(exp(x - max))) along dim          grad_x = grad - exp(y) * sum(grad)"""

    @staticmethod
    def forward(ctx: Any, x: Any, axis: int) -> Any:
        xp = ctx.xp
        ctx.axis = axis
        if x.shape[axis] == 0:
            out = x.copy()
        elif (out := _kernels.softmax(x, log=True, axis=axis)) is not None:
            pass
        else:
            with _quiet(xp):
                shifted = x - x.max(axis=axis, keepdims=True)
                out = shifted - xp.log(_rowsum(xp.exp(shifted), axis))
        if _need(ctx):
            ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (y,) = ctx.saved
        if (gx := _kernels.softmax_backward(y, grad, True, ctx.axis)) is not None:
            return gx, None
        return grad - ctx.xp.exp(y) * _rowsum(grad, ctx.axis), None


def _softmax_dim(x: Any, dim: Any, fname: str, stacklevel: int) -> int:
    if dim is None:  # PyTorch's deprecated implicit choice
        nd = x._data.ndim
        dim = 0 if nd in (0, 1, 3) else 1
        warnings.warn(
            f"Implicit dimension choice for {fname} has been deprecated. Change the call to "
            "include dim=X as an argument.",
            stacklevel=user_stacklevel(),  # the caller's line, in either core
        )
    return _one(dim, x, fname)


make_outputs_contiguous(globals())
