"""Adadelta: an adaptive learning rate from running averages of squared steps (Zeiler)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .._tensor import Tensor
from .optimizer import (
    Optimizer,
    ParamsT,
    _check_lr,
    _check_nonneg,
    _step_tensor,
    _xp,
    _zeros_state,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta, PyTorch's algorithm::

        g = -grad if maximize else grad;  g = g + weight_decay * p    (if weight_decay)
        v = rho * v + (1 - rho) * g^2
        dx = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * dx^2
        p = p - lr * dx

    State per parameter: ``'step'``, ``'square_avg'`` (v), ``'acc_delta'`` (u).

    Args:
        params: parameters or parameter groups.
        lr: scale applied to the step. Default 1.0.
        rho: running-average coefficient, in [0, 1]. Default 0.9.
        eps: added inside the square roots. Default 1e-6.
        weight_decay: L2 penalty. Default 0.
        maximize: ascend the objective.
        foreach, capturable, differentiable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Adadelta(model.parameters())
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonneg("epsilon", eps)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(
            lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
            capturable=capturable, foreach=foreach, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["square_avg"] = _zeros_state(d)
            state["acc_delta"] = _zeros_state(d)
        state["step"]._data += 1
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            g = g + o.weight_decay * d
        v = state["square_avg"]._data
        u = state["acc_delta"]._data
        xp = _xp(d)
        v *= o.rho
        tmp = g * g
        tmp *= 1.0 - o.rho
        v += tmp
        std = v + o.eps
        if d.ndim:  # two temporaries, reused (a 0-d step gets NumPy scalars: no out=)
            xp.sqrt(std, out=std)
            xp.add(u, o.eps, out=tmp)
            xp.sqrt(tmp, out=tmp)
        else:
            std = xp.sqrt(std)
            tmp = xp.sqrt(u + o.eps)
        tmp /= std
        tmp *= g  # tmp is now the step dx
        u *= o.rho
        std = xp.multiply(tmp, tmp, out=std) if d.ndim else tmp * tmp
        std *= 1.0 - o.rho
        u += std
        tmp *= o.lr
        d -= tmp
