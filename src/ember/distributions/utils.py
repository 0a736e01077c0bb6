"""Helpers shared by the distributions: broadcasting parameters, probs <-> logits, lazy properties."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _is_tensor(x: Any) -> bool:
    from .._tensor import Tensor

    return isinstance(x, Tensor)


def finfo_eps(t: Any) -> float:
    """Machine epsilon of a floating tensor's dtype."""
    return float(np.finfo(t._data.dtype).eps)


def finfo_tiny(t: Any) -> float:
    """Smallest normal number of a floating tensor's dtype."""
    return float(np.finfo(t._data.dtype).tiny)


def finfo_min(t: Any) -> float:
    return float(np.finfo(t._data.dtype).min)


def broadcast_all(*values: Any) -> tuple:
    """Tensors (and numbers) broadcast to one shape; numbers take the first tensor's dtype/device
    (the default dtype when all are numbers)."""
    import ember

    from .. import _dtype

    for v in values:
        if not (_is_tensor(v) or isinstance(v, (int, float, bool))):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             f"torch.Tensor or objects implementing __torch_function__; got {type(v)}")
    first = next((v for v in values if _is_tensor(v)), None)
    if first is None:
        dt = _dtype.get_default_dtype()
        return tuple(ember.tensor(float(v), dtype=dt) for v in values)
    conv = [v if _is_tensor(v) else ember.tensor(v, dtype=first.dtype, device=first.device)
            for v in values]
    if all(tuple(v.shape) == tuple(conv[0].shape) for v in conv):
        return tuple(conv)
    return tuple(ember.broadcast_tensors(*conv))


def _standard_normal(shape: Any, dtype: Any, device: Any) -> Any:
    """Standard normal samples of ``shape`` (no gradient), as the reparameterised samplers draw
    them (``torch.distributions.utils._standard_normal``)."""
    import ember

    with ember.no_grad():
        return ember.randn(tuple(shape), dtype=dtype, device=device)


def logits_to_probs(logits: Any, is_binary: bool = False) -> Any:
    """Probabilities from logits: sigmoid when binary, else softmax over the last dimension."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs: Any) -> Any:
    """Probabilities clamped to [eps, 1 - eps] of their dtype."""
    eps = finfo_eps(probs)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Any, is_binary: bool = False) -> Any:
    """Logits from probabilities (clamped away from 0 and 1 first)."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


class lazy_property:  # noqa: N801 - PyTorch's name
    """A property computed on first access, then stored on the instance (under grad mode on)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        from ..autograd.grad_mode import enable_grad

        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def tril_matrix_to_vec(mat: Any, diag: int = 0) -> Any:
    """The lower triangle (row-major) of the last two dimensions as a vector."""
    n = mat.shape[-1]
    rows, cols = np.tril_indices(n, diag)
    return mat[..., rows.tolist(), cols.tolist()]


def vec_to_tril_matrix(vec: Any, diag: int = 0) -> Any:
    """Inverse of :func:`tril_matrix_to_vec`."""
    import ember

    m = vec.shape[-1]
    n = int(round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
                   ** 0.5) / 2))
    rows, cols = np.tril_indices(n, diag)
    flat = ember.zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    idx = ember.as_tensor((rows * n + cols).astype(np.int64), device=vec.device)
    flat = flat.index_add(-1, idx, vec)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), 0 where x == 0 and y == 0, with d/dx = log(y) also at x == 0 (as PyTorch)."""
    import ember

    if not _is_tensor(x):
        x = ember.as_tensor(x, dtype=y.dtype, device=y.device)
    if not _is_tensor(y):
        y = ember.as_tensor(y, dtype=x.dtype, device=x.device)
    y_safe = ember.where((x == 0) & (y == 0), 1.0, y)
    return x * y_safe.log()


euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant


def is_tensor_like(x: Any) -> bool:
    """A Tensor, or an object that takes part in ``__torch_function__`` dispatch."""
    return _is_tensor(x) or hasattr(x, "__torch_function__")


def _sum_rightmost(value: Any, dim: int) -> Any:
    """``value`` summed over its ``dim`` right-most dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)
