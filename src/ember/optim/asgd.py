"""ASGD: averaged stochastic gradient descent (Polyak & Juditsky)."""

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
    _check_nonneg,
    _scalar_dtype,
    _step_tensor,
    _xp,
    _zeros_state,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""ASGD, PyTorch's algorithm (step t counts from 1; eta starts at lr, mu at 1)::

        g = -grad if maximize else grad;  g = g + weight_decay * p    (if weight_decay)
        p = p * (1 - lambd * eta) - eta * g
        ax = p                       if mu == 1
        ax = ax + mu * (p - ax)      otherwise
        eta = lr / (1 + lambd * lr * t) ** alpha;    mu = 1 / max(1, t - t0)

    ``ax`` is the running average of the parameter (averaging starts after ``t0`` steps): copy it
    into the model to evaluate the averaged weights.

    State per parameter: ``'step'``, ``'eta'`` and ``'mu'`` (0-d float32 tensors) and ``'ax'``.
    Complex parameters are updated as pairs of real numbers.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (float or 0-d tensor). Default 1e-2.
        lambd: decay term. Default 1e-4.
        alpha: power of the eta update. Default 0.75.
        t0: the step at which averaging starts. Default 1e6.
        weight_decay: L2 penalty. Default 0.
        maximize: ascend the objective.
        foreach, differentiable, capturable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.ASGD(model.parameters(), lr=0.01, t0=100)
    """

    _complex_as_real = False  # (complex values handled in _update, as real pairs)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(
            lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize, differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for per_param in self.state.values():  # numbers from an older checkpoint: tensors
            if isinstance(per_param, dict):
                for key in ("eta", "mu"):
                    v = per_param.get(key)
                    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
                        per_param[key] = _step_tensor(float(v))

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        if isinstance(g, _sparse.RECORDS):
            raise self._no_sparse()
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["eta"] = Tensor._make(np.array(o.lr, dtype=_scalar_dtype()))
            state["mu"] = _step_tensor(1.0)
            state["ax"] = _zeros_state(d)
        s = state["step"]._data
        s += 1
        t = float(s)
        eta_t, mu_t = state["eta"]._data, state["mu"]._data
        ax = state["ax"]._data
        if d.dtype.kind == "c":  # complex: the real and imaginary parts as two real numbers
            d, g, ax = _real(d), _real(g), _real(ax)
        xp = _xp(d)
        if o.maximize:
            g = -g
        eta = float(eta_t)
        tmp = xp.empty_like(d)
        if o.foreach:  # PyTorch's multi-tensor form: p -= eta * (g + wd * p + lambd * p)
            xp.multiply(d, o.weight_decay if o.weight_decay != 0 else o.lambd, out=tmp)
            tmp += g
            if o.weight_decay != 0:
                tmp += o.lambd * d
            tmp *= eta
            d -= tmp
        else:  # its single-tensor form: p = p * (1 - lambd * eta) - eta * g
            if o.weight_decay != 0:
                g = g + o.weight_decay * d
            d *= 1.0 - o.lambd * eta
            xp.multiply(g, -eta, out=tmp)
            d += tmp
        if o.foreach or float(mu_t) != 1.0:
            xp.subtract(d, ax, out=tmp)
            tmp *= mu_t  # (the 0-d state tensor's own dtype, as PyTorch multiplies)
            ax += tmp
        else:
            ax[...] = d
        lr = o._group["lr"]
        if isinstance(lr, Tensor):  # a tensor lr: PyTorch computes eta in its dtype
            lr = lr._data.reshape(())
            eta_t[...] = lr / ((1.0 + lr * o.lambd * t) ** o.alpha)
        elif o.foreach:  # the multi-tensor form computes it in the step's dtype
            eta_t[...] = o.lr / ((1.0 + (o.lambd * o.lr) * s[()]) ** o.alpha)
        else:  # a Python number, rounded to the default dtype (PyTorch's as_tensor) first
            eta_t[...] = _scalar_dtype()(o.lr / ((1.0 + o.lambd * o.lr * t) ** o.alpha))
        mu_t[...] = _scalar_dtype()(1.0 / max(1.0, t - o.t0))


def _real(a: Any) -> Any:
    """A complex array as a real view with a trailing axis of (real, imaginary) pairs."""
    return a.reshape(a.shape + (1,)).view(a.real.dtype)
