"""Dropout functions: ``dropout``, its 1-d/2-d/3-d feature variants and alpha dropout.

A mask multiplies the input; backward multiplies by the same mask. The mask is PyTorch's: a
``bernoulli_(1 - p)`` noise (one float64 uniform per element, in the memory order of
``empty_like(input)``; of shape (N, C, 1, ...) for the feature variants) divided by ``1 - p``, so
after ``manual_seed`` the same units drop as in PyTorch. ``p == 1`` and empty inputs draw nothing.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ... import _backend
from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd.function import Op
from .. import _mt19937
from .. import random as _random
from ..inplace import inplace as _inplace
from .activation import _SELU_ALPHA, _SELU_SCALE, _float_input, _MulMask

__all__ = [
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
]


# ---------------------------------------------------------------------------------------------
# dropout


def dropout(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (only in training)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "dropout")
    return _apply_mask(input, _keep_mask(input, p, tuple(input.shape)), inplace)


def dropout1d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, input.ndim >= 3)


def dropout3d(input: TensorBase, p: float = 0.5, training: bool = True, inplace: bool = False) -> TensorBase:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, input.ndim == 5)


def alpha_dropout(input: TensorBase, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> TensorBase:
    """Dropout that keeps SELU's mean and variance (dropped units take SELU's negative limit)."""
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: TensorBase, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> TensorBase:
    """``alpha_dropout`` of whole channels (dim 1)."""
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, shape)


class _AffineMask(Op):
    """out = x * a + c (a, c fixed arrays)          grad_x = grad * a"""
    node_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, a: Any, c: Any) -> Any:
        ctx.save_for_backward(a)
        return x * a + c

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (a,) = ctx.saved
        return grad * a, None, None


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


_M53 = np.uint64((1 << 53) - 1)


def _noise(x: TensorBase, q: float, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    """PyTorch's dropout noise ``bernoulli_(q)`` in x's dtype (on the host), times ``scale``: a
    float64 uniform per element, in the memory order ``empty_like(x)`` keeps for a full-shape
    noise."""
    axes = _random._dense_axes(x._data) if shape == x._data.shape else None
    n = 1
    for d in shape:
        n *= d
    # u < q for u = (a 64-bit draw's low 53 bits) / 2**53, compared as integers (exact); drawn a
    # block at a time (the same stream), so the raw words take 4 MB, not 16 bytes per element
    bg = _random._gen(None)._bg
    limit = math.ceil(q * 2.0**53)
    dt = x._data.dtype
    if (out := _kernels.bernoulli53(bg, limit, n, dt, scale)) is not None:
        return _random._arrange(out, shape, axes)  # the eager kernel: the same draws, one pass
    limit = np.uint64(limit)
    keep = np.empty(n, np.bool_)
    for i in range(0, n, _NOISE_BLOCK):
        bits = _mt19937.words64(bg, min(_NOISE_BLOCK, n - i))
        bits &= _M53
        np.less(bits, limit, out=keep[i:i + bits.size])
    arr = _random._arrange(keep, shape, axes).astype(dt)
    if scale != 1.0:
        arr *= np.asarray(scale, dt)  # (1 or 0 times the scale: exact)
    return arr


_NOISE_BLOCK = 1 << 18  # draws per block of dropout's noise


def _keep_mask(x: TensorBase, p: float, shape: tuple[int, ...]) -> Any:
    """A mask in x's dtype: 0 with probability p, else 1/(1-p) (PyTorch's ``noise.div_(1-p)``:
    the scalar rounded to float32 first, except for float64)."""
    if p >= 1.0 or x.numel() == 0:  # PyTorch multiplies by zero without a draw
        arr = np.zeros(shape, x._data.dtype)
    else:
        dt = x._data.dtype
        scale = 1.0 / (1.0 - p) if dt == np.float64 else \
            float((np.float32(1) / np.float32(1.0 - p)).astype(dt))
        arr = _noise(x, 1.0 - p, shape, scale)
    if type(x._data) is not type(arr):
        arr = _backend.to_device(arr, x.device)
    return arr


def _apply_mask(input: TensorBase, mask: Any, inplace: bool) -> TensorBase:
    if inplace:
        return _inplace(input, lambda t: _MulMask.apply(t, mask))
    return _MulMask.apply(input, mask)


def _feature_dropout(input: TensorBase, p: float, training: bool, inplace: bool, batched: bool) -> TensorBase:
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "dropout")
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    return _apply_mask(input, _keep_mask(input, p, shape), inplace)


def _alpha_dropout(input: TensorBase, p: float, training: bool, inplace: bool,
                   shape: tuple[int, ...]) -> TensorBase:
    _check_p(p)
    if not training or p == 0.0:
        return input
    _float_input(input, "alpha_dropout")
    if p == 1.0:
        return input * 0.0

    if input.numel() == 0:
        return input
    # PyTorch's arithmetic: noise = bernoulli_(1 - p); b = (noise - 1) * (alpha * a) +
    # alpha * a * p; out = input * (noise * a) + b, each step rounded to the input's dtype
    # (scalars to float32 below float64)
    dt = input._data.dtype
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    keep = _noise(input, 1.0 - p, shape)
    op = np.float64 if dt == np.float64 else np.float32
    mult = (keep.astype(op) * op(a)).astype(dt)
    add = ((keep.astype(op) - 1).astype(dt).astype(op) * op(alpha * a)).astype(dt)
    add = (add.astype(op) + op(alpha * a * p)).astype(dt)
    if type(input._data) is not type(mult):
        mult = _backend.to_device(mult, input.device)
        add = _backend.to_device(add, input.device)
    if inplace:
        return _inplace(input, lambda t: _AffineMask.apply(t, mult, add))
    return _AffineMask.apply(input, mult, add)
