"""NAdam: Adam with Nesterov momentum (Dozat), with a momentum-decay schedule."""

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

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""NAdam, PyTorch's algorithm (step t counts from 1, psi = momentum_decay)::

        g = -grad if maximize else grad
        p = p * (1 - lr * weight_decay)       if decoupled_weight_decay
        g = g + weight_decay * p              otherwise, if weight_decay
        mu_t = beta1 * (1 - 0.5 * 0.96^(t psi));  mu_{t+1} likewise;  P_t = prod_{i<=t} mu_i
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        r = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - P_t) * g / r - lr mu_{t+1} / (1 - P_t mu_{t+1}) * m / r

    State per parameter: ``'step'``, ``'mu_product'`` (P_t, a 0-d tensor), ``'exp_avg'``,
    ``'exp_avg_sq'``.

    Args:
        params: parameters or parameter groups.
        lr: learning rate. Default 2e-3.
        betas: (beta1, beta2). Default (0.9, 0.999).
        eps: denominator term. Default 1e-8.
        weight_decay: weight decay. Default 0.
        momentum_decay: psi. Default 4e-3.
        decoupled_weight_decay: decay the weights directly (NAdamW).
        maximize: ascend the objective.
        foreach, capturable, differentiable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.NAdam(model.parameters())
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
        _check_nonneg("momentum_decay", momentum_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["mu_product"] = _step_tensor(1.0)
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
        mu = o.beta1 * (1.0 - 0.5 * 0.96 ** (t * o.momentum_decay))
        mu_next = o.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * o.momentum_decay))
        mp = state["mu_product"]._data
        mp *= mu
        mu_product = float(mp)
        xp = _xp(d)
        m = state["exp_avg"]._data
        v = state["exp_avg_sq"]._data
        m *= o.beta1
        r = (1.0 - o.beta1) * g
        m += r
        v *= o.beta2
        inplace = bool(d.ndim)  # (a 0-d step gets NumPy scalars: no out=)
        r = xp.multiply(g, g, out=r) if inplace else g * g
        r *= 1.0 - o.beta2
        v += r
        if inplace:  # the same operations through r's and upd's memory: two temporaries
            xp.divide(v, 1.0 - o.beta2**t, out=r)
            xp.sqrt(r, out=r)
        else:
            r = xp.sqrt(v / (1.0 - o.beta2**t))
        r += o.eps
        # two terms: the current gradient's and the momentum's
        upd = g / r
        upd *= o.lr * (1.0 - mu) / (1.0 - mu_product)
        d -= upd
        upd = xp.divide(m, r, out=upd) if inplace else m / r
        upd *= o.lr * mu_next / (1.0 - mu_product * mu_next)
        d -= upd
