"""Adam: adaptive moment estimation (Kingma & Ba), with AMSGrad and decoupled weight decay."""

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

__all__ = ["Adam"]


class Adam(Optimizer):
    r"""Adam, PyTorch's algorithm (step t counts from 1)::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)      if decoupled_weight_decay (AdamW)
        g = g + weight_decay * p             otherwise, if weight_decay
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        v_max = max(v_max, v)                if amsgrad (then v_max replaces v below)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    State per parameter: ``'step'`` (0-d float32 tensor), ``'exp_avg'`` (m), ``'exp_avg_sq'``
    (v) and ``'max_exp_avg_sq'`` with amsgrad.

    Args:
        params: parameters or parameter groups.
        lr: learning rate (float or 0-d tensor). Default 1e-3.
        betas: (beta1, beta2), the running-average coefficients. Default (0.9, 0.999).
        eps: added to the denominator for stability. Default 1e-8.
        weight_decay: L2 penalty (coupled, as in the original Adam). Default 0.
        amsgrad: use the maximum of past second moments (Reddi et al.).
        maximize: ascend the objective.
        decoupled_weight_decay: decay the weights directly (this is AdamW).
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("epsilon", eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["exp_avg"] = _zeros_state(d)
            state["exp_avg_sq"] = _zeros_state(d)
            if o.amsgrad:
                state["max_exp_avg_sq"] = _zeros_state(d)
        s = state["step"]._data
        s += 1
        t = float(s)
        m = state["exp_avg"]._data
        v = state["exp_avg_sq"]._data
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            if o.decoupled_weight_decay:
                d *= 1.0 - o.lr * o.weight_decay
            else:
                g = g + o.weight_decay * d
        m *= o.beta1
        m += (1.0 - o.beta1) * g
        gg = g * g
        gg *= 1.0 - o.beta2
        v *= o.beta2
        v += gg
        xp = _xp(d)
        if o.amsgrad:
            vmax = state["max_exp_avg_sq"]._data
            xp.maximum(vmax, v, out=vmax)
            v = vmax
        # temporaries are updated with in-place operators, never out=: for a 0-d parameter
        # NumPy hands back scalars, which out= cannot take
        denom = xp.sqrt(v)
        denom /= math.sqrt(1.0 - o.beta2**t)
        denom += o.eps
        upd = m / denom
        upd *= o.lr / (1.0 - o.beta1**t)
        d -= upd
