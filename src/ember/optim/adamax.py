"""Adamax: Adam with the infinity norm in place of the second moment (Kingma & Ba, sec. 7)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    ParamsT,
    _check_betas,
    _check_lr,
    _check_nonneg,
    _step_tensor,
    _xp,
    _zeros_state,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax, PyTorch's algorithm (step t counts from 1)::

        g = -grad if maximize else grad;  g = g + weight_decay * p    (if weight_decay)
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u

    State per parameter: ``'step'``, ``'exp_avg'`` (m), ``'exp_inf'`` (u).

    Args:
        params: parameters or parameter groups.
        lr: learning rate. Default 2e-3.
        betas: (beta1, beta2). Default (0.9, 0.999).
        eps: added to |g|. Default 1e-8.
        weight_decay: L2 penalty. Default 0.
        maximize: ascend the objective.
        foreach, differentiable, capturable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Adamax(model.parameters())
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("epsilon", eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize, differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["exp_avg"] = _zeros_state(d)
            state["exp_inf"] = _zeros_state(d)
        s = state["step"]._data
        s += 1
        t = float(s)
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            g = g + o.weight_decay * d
        xp = _xp(d)
        m = state["exp_avg"]._data
        u = state["exp_inf"]._data
        m *= o.beta1
        tmp = (1.0 - o.beta1) * g
        m += tmp
        u *= o.beta2
        if d.ndim:  # one temporary, reused (a 0-d step gets NumPy scalars: no out=)
            xp.abs(g, out=tmp)
        else:
            tmp = xp.abs(g)
        tmp += o.eps
        xp.maximum(u, tmp, out=u)
        if d.ndim:
            xp.divide(m, u, out=tmp)
        else:
            tmp = m / u
        tmp *= o.lr / (1.0 - o.beta1**t)
        d -= tmp
