"""Adagrad: per-coordinate learning rates from the sum of squared gradients (Duchi et al.)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..ops import sparse as _sparse
from .optimizer import Optimizer, ParamsT, _check_lr, _check_nonneg, _step_tensor, _value, _xp

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, PyTorch's algorithm (step t counts from 1)::

        g = -grad if maximize else grad;  g = g + weight_decay * p    (if weight_decay)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g^2
        p = p - clr * g / (sqrt(s) + eps)

    State per parameter (created with the optimizer, as PyTorch does): ``'step'``, ``'sum'``
    (s, starting at ``initial_accumulator_value``).

    Args:
        params: parameters or parameter groups.
        lr: learning rate. Default 1e-2.
        lr_decay: learning-rate decay. Default 0.
        weight_decay: L2 penalty. Default 0.
        initial_accumulator_value: starting value of s. Default 0.
        eps: denominator term. Default 1e-10.
        maximize: ascend the objective.
        foreach, differentiable, fused: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Adagrad(model.parameters(), lr=0.1)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("lr_decay", lr_decay)
        _check_nonneg("weight_decay", weight_decay)
        _check_nonneg("initial_accumulator_value", initial_accumulator_value)
        _check_nonneg("epsilon", eps)
        defaults = dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, foreach=foreach,
            maximize=maximize, differentiable=differentiable, fused=fused,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, _value(group["initial_accumulator_value"]))

    def _init_state(self, p: Tensor, init: float) -> dict:
        d = p._data
        state = self.state[p]
        state["step"] = _step_tensor(0.0)
        state["sum"] = Tensor._make(_xp(d).full_like(d, init))
        return state

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p] or self._init_state(p, o.initial_accumulator_value)
        s = state["step"]._data
        s += 1
        t = float(s)
        if isinstance(g, _sparse.RECORDS):
            return self._sparse_update(d, g, state, t, o)
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            g = g + o.weight_decay * d
        clr = o.lr / (1.0 + (t - 1.0) * o.lr_decay)
        acc = state["sum"]._data
        xp = _xp(d)
        tmp = g * g
        acc += tmp
        if type(tmp) is not np.ndarray or tmp.shape != acc.shape:  # (0-d: NumPy scalars)
            tmp = xp.sqrt(acc)
            tmp += o.eps
            tmp = g / tmp
        else:  # the same steps in one temporary (PyTorch's step builds one too)
            xp.sqrt(acc, out=tmp)
            tmp += o.eps
            xp.divide(g, tmp, out=tmp)
        tmp *= clr
        d -= tmp

    def _sparse_update(self, d: Any, g: Any, state: dict, t: float, o: SimpleNamespace) -> None:
        """A sparse gradient, as PyTorch updates: the sum and the parameter change only at the
        gradient's (coalesced) indices."""
        if o.weight_decay != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        c = _sparse.coalesce(_sparse.as_coo(g))
        vals = -c.values if o.maximize else c.values
        clr = o.lr / (1.0 + (t - 1.0) * o.lr_decay)
        acc = state["sum"]._data
        idx = tuple(c.indices)
        acc[idx] += (vals * vals).astype(acc.dtype, copy=False)
        std = _xp(d).sqrt(acc[idx]) + o.eps
        d[idx] -= (clr * (vals / std)).astype(d.dtype, copy=False)
