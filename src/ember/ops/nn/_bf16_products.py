"""bfloat16 products inside a convolution of bfloat16 tensors.

A convolution of half tensors runs ember's float32 convolution on the widened values
(``opmath``: the layout kernels, the per-image and row-major paths, the direct kernel), its
result rounded once. For bfloat16 every operand of its products then holds bfloat16 values:
copies of the input, the weight and the output gradient (columns, rows, transposes, padding
zeros) and the bias's column of ones. Rounding such an operand to bfloat16 is exact, so on a CPU
with AVX512-BF16 the products can run in the bfloat16 kernel (``_kernels_loader.bf16_gemm``:
exact products, float32 sums; half the bytes and twice the products per instruction of sgemm):
the same values up to the order of the float32 sums. ``flagged(rule)`` marks a convolution's
forward or backward as such a region (a flag of the context); ``matmul`` is NumPy's matmul, and
inside the region, for float32 products of at least ``MIN_WORK`` multiply-adds, the bfloat16
kernel's."""

from __future__ import annotations

import contextvars
from typing import Any

import numpy as np

from ... import _dtype, _threads
from ... import _kernels_loader as _kl
from .._promote import _variant

__all__ = ["flagged", "matmul", "matmul_xp", "variant"]

MIN_WORK = 1 << 21  # multiply-adds: below, the two rounding passes cost what the kernel saves
_F32 = np.dtype(np.float32)
# (a context variable, not a thread's: a convolution's per-image loops that split over the
# threads (_threads.split) run each part in a copy of the caller's context)
_on: contextvars.ContextVar[bool] = contextvars.ContextVar("ember_bf16_products", default=False)
_VARIANTS: dict = {}


def flagged(rule: Any) -> Any:
    """``rule`` (an op's forward or backward) run with the bfloat16 products on."""
    def run(ctx: Any, *args: Any) -> Any:
        token = _on.set(True)
        try:
            return rule(ctx, *args)
        finally:
            _on.reset(token)

    run.__doc__ = rule.__doc__
    return run


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``np.matmul(a, b[, out])``; in a flagged region the bfloat16 kernel's product of the
    operands' exact bfloat16 roundings, for large enough float32 products; large products of
    matrices on the kernels' pool (``_threads.gemm``, the same values)."""
    if (_on.get() and type(a) is np.ndarray and type(b) is np.ndarray
            and a.dtype == _F32 and b.dtype == _F32 and a.ndim >= 2 and b.ndim >= 2
            and a.size * b.shape[-1] >= MIN_WORK):
        a16, b16 = _bf16(a), _bf16(b)
        if a16 is not None and b16 is not None and \
                (r := _kl.bf16_gemm(a16, b16, out)) is not None:
            return r
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2
            and (r := _threads.gemm(a, b, out)) is not None):
        return r
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def matmul_xp(xp: Any, a: Any, b: Any) -> Any:
    """``xp.matmul(a, b)``; bfloat16 host arrays by the kernel (float32 out, as ml_dtypes'
    matmul gives, in float32 sums of exact products); host float32 ones as ``matmul``."""
    if a.dtype.itemsize == 2 and (out := _kl.bf16_gemm(a, b)) is not None:
        return out
    return matmul(a, b) if xp is np else xp.matmul(a, b)


def variant(cls: Any) -> type:
    """``cls`` (an op over float32 copies of bfloat16 values: ``opmath(Conv)``) with its forward
    and backward ``flagged`` (made once per class, same node name)."""
    sub = _VARIANTS.get(cls)
    if sub is None:
        sub = _VARIANTS[cls] = _variant(cls, forward=flagged(cls.forward),
                                        backward=flagged(cls.backward))
    return sub


def _bf16(a: np.ndarray) -> Any:
    """``a`` rounded to bfloat16 (exact here: it holds bfloat16 values) in one pass, in its own
    layout where that is a transposed C order (a view's strides are kept: the kernel reads any)."""
    dt = _dtype.bfloat16.np  # (its NumPy dtype, from ml_dtypes, loaded on first read)
    if a.flags.c_contiguous:
        return _kl.half_cast(a, dt)
    order = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    t = a.transpose(order)
    if not t.flags.c_contiguous:
        return _kl.half_cast(np.ascontiguousarray(a), dt)
    r = _kl.half_cast(t, dt)
    return None if r is None else r.transpose(np.argsort(order))
