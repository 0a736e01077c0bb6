"""Adafactor: Adam-like steps with factored second moments (Shazeer & Stern): a matrix keeps one
running mean of squared gradients per row and one per column instead of one per element."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..ops import sparse as _sparse
from .optimizer import (
    Optimizer,
    ParamsT,
    _check_lr,
    _lerp_,
    _norm,
    _state_shape,
    _step_tensor,
    _xp,
    _zeros_state,
)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor, PyTorch's algorithm (step t counts from 1)::

        g = -grad if maximize else grad
        w = t ** beta2_decay;   rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, RMS(p)) * rho
        p = p * (1 - lr * weight_decay)
        p of 2 or more dims (factored over the last two):
            R = lerp(R, mean(g^2, dim=-1), w);   C = lerp(C, mean(g^2, dim=-2), w)
            V = R * C / max(mean(R, dim=-2), eps1)
        otherwise:  V = lerp(V, g^2, w)
        U = g / sqrt(max(V, eps1^2));   p = p - alpha * U / max(1, RMS(U) / d)

    ``eps1`` defaults to the machine epsilon of the parameter's dtype. State per parameter:
    ``'step'`` (0-d float32 tensor), and ``'row_var'`` (R, shaped as the parameter with a last
    dimension of 1) and ``'col_var'`` (C, second-to-last dimension 1), or ``'variance'`` (V) for
    0-d and 1-d parameters. Complex parameters and sparse gradients are refused.

    Args:
        params: parameters or parameter groups.
        lr: the largest relative step size, and the weight decay's learning rate (float or
            0-d tensor). Default 1e-2.
        beta2_decay: the exponent of the second moments' decay schedule. Default -0.8.
        eps: (eps1, eps2): eps1 bounds the second moments from below (None: the dtype's
            epsilon), eps2 the parameter scale. Default (None, 1e-3).
        d: the update clipping threshold. Default 1.
        weight_decay: decoupled weight decay coefficient. Default 0.
        maximize: ascend the objective.
        foreach: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    _complex_as_real = False  # (it refuses complex parameters itself, as PyTorch's)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        _check_lr(lr)
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(
            lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
            foreach=foreach, maximize=maximize,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        if isinstance(g, _sparse.RECORDS):
            raise self._no_sparse()
        d = p._data
        if d.dtype.kind == "c":
            raise RuntimeError("Adafactor does not support complex parameters")
        xp = _xp(d)
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            if g.ndim > 1:
                state["row_var"] = Tensor._make(xp.zeros(_factor_shape(g.shape, -1), g.dtype))
                state["col_var"] = Tensor._make(xp.zeros(_factor_shape(g.shape, -2), g.dtype))
            else:
                state["variance"] = _zeros_state(g)
        s = state["step"]._data
        s += 1
        t = float(s)
        eps1, eps2 = o.eps
        if eps1 is None:
            eps1 = float(np.finfo(d.dtype).eps)
        lr = o._group["lr"]
        # a tensor lr stays a scalar of its dtype (PyTorch's arithmetic rounds through it)
        lr = np.dtype(lr.dtype.np).type(float(lr)) if isinstance(lr, Tensor) else o.lr
        w = t**o.beta2_decay
        rho = min(lr, 1.0 / t**0.5)
        alpha = max(eps2, _norm(d) / d.size**0.5) * rho
        if o.weight_decay != 0:
            d *= 1.0 - lr * o.weight_decay
        v = xp.empty_like(g)  # the step's one full-size temporary: V, then the update
        if g.ndim > 1:
            row, col = state["row_var"]._data, state["col_var"]._data
            _lerp_(row, _mean_square(g, -1), w)
            _lerp_(col, _mean_square(g, -2), w)
            xp.multiply(row, col, out=v)
            r = row.mean(axis=-2, keepdims=True)
            xp.maximum(r, eps1, out=r)
            v /= r
        else:
            var = state["variance"]._data
            xp.multiply(g, g, out=v)
            _lerp_(var, v, w, scratch=v)
            xp.copyto(v, var)
        xp.maximum(v, eps1 * eps1, out=v)
        xp.sqrt(v, out=v)
        xp.divide(1, v, out=v)
        v *= g  # (with maximize, -g: the sign is folded into the step below, bit for bit)
        denom = max(1.0, _norm(v) / (v.size**0.5 * o.d))
        v *= (alpha if o.maximize else -alpha) / denom
        d += v

    def _check_loaded_state(self, p: Tensor) -> None:
        """A loaded state whose factors do not fit ``p`` (the base class compares every state
        tensor with the parameter's shape; ``row_var``/``col_var`` have their own)."""
        index = self._bad_state[id(p)]
        shape = tuple(p.shape)
        want = {"variance": shape} if len(shape) <= 1 else {
            "row_var": _factor_shape(shape, -1), "col_var": _factor_shape(shape, -2)}
        for key, value in self.state.get(p, {}).items():
            got = _state_shape(value)
            if key in want and got is not None and got != want[key]:
                raise RuntimeError(
                    f"Adafactor.step(): the optimizer state loaded by load_state_dict() does not "
                    f"fit parameter {index}: state[{key!r}] has shape {list(got)} but a "
                    f"parameter of shape {list(shape)} needs {list(want[key])}. Load the "
                    "optimizer state saved with this model, or skip "
                    "optimizer.load_state_dict() to start the optimizer fresh."
                )
        del self._bad_state[id(p)]
        if not self._bad_state:
            self._bad_state = None


def _factor_shape(shape: tuple, dim: int) -> tuple:
    """``shape`` with dimension ``dim`` reduced to 1 (a row or column factor's shape)."""
    out = list(shape)
    out[dim] = 1
    return tuple(out)


def _mean_square(g: Any, dim: int) -> Any:
    """``norm(g, dim, keepdim=True)**2 / g.shape[dim]``, as PyTorch rounds it (through the norm),
    without a full-size temporary."""
    xp = _xp(g)
    spec = "...i,...i->..." if dim == -1 else "...ij,...ij->...j"
    ss = xp.expand_dims(xp.einsum(spec, g, g), dim)
    xp.sqrt(ss, out=ss)
    ss *= ss
    ss /= g.shape[dim]
    return ss
