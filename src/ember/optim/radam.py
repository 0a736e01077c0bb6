"""RAdam: Adam with a rectified variance term for the early steps (Liu et al.)."""

from __future__ import annotations

import math
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

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""RAdam, PyTorch's algorithm (step t counts from 1)::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)       if decoupled_weight_decay
        g = g + weight_decay * p              otherwise, if weight_decay
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        m_hat = m / (1 - beta1^t)
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5:  r = sqrt((rho_t-4)(rho_t-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho_t))
                    p = p - lr * m_hat * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
        otherwise:  p = p - lr * m_hat

    State per parameter: ``'step'``, ``'exp_avg'``, ``'exp_avg_sq'``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate. Default 1e-3.
        betas: (beta1, beta2). Default (0.9, 0.999).
        eps: denominator term. Default 1e-8.
        weight_decay: weight decay. Default 0.
        decoupled_weight_decay: decay the weights directly (RAdamW).
        maximize: ascend the objective.
        foreach, capturable, differentiable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.RAdam(model.parameters())
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("epsilon", eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
            foreach=foreach, capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["exp_avg"] = _zeros_state(d)
            state["exp_avg_sq"] = _zeros_state(d)
        s = state["step"]._data
        s += 1
        t = float(s)
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            if o.decoupled_weight_decay:
                d *= 1.0 - o.lr * o.weight_decay
            else:
                g = g + o.weight_decay * d
        m = state["exp_avg"]._data
        v = state["exp_avg_sq"]._data
        m *= o.beta1
        m += (1.0 - o.beta1) * g
        v *= o.beta2
        tmp = g * g
        tmp *= 1.0 - o.beta2
        v += tmp
        bc1 = 1.0 - o.beta1**t
        bc2 = 1.0 - o.beta2**t
        rho_inf = 2.0 / (1.0 - o.beta2) - 1.0
        rho_t = rho_inf - 2.0 * t * (o.beta2**t) / bc2
        if rho_t > 5.0:
            rect = math.sqrt(
                (rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)
            )
            xp = _xp(d)
            tmp = xp.sqrt(v)
            tmp += o.eps
            tmp = m / tmp
            tmp *= o.lr * rect * math.sqrt(bc2) / bc1
        else:
            tmp = m * (o.lr / bc1)
        d -= tmp
