"""RMSprop: divide the gradient by a running root-mean-square (Hinton's lecture 6e)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import _kernels_loader as _kernels
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

__all__ = ["RMSprop"]

_NUMBER = (float, int)  # hyperparameters the eager kernel takes (as C doubles)


class RMSprop(Optimizer):
    r"""RMSprop, PyTorch's algorithm::

        g = -grad if maximize else grad;  g = g + weight_decay * p    (if weight_decay)
        v = alpha * v + (1 - alpha) * g^2
        centered:  a = alpha * a + (1 - alpha) * g;   r = sqrt(v - a^2) + eps
        otherwise: r = sqrt(v) + eps
        momentum > 0:  b = momentum * b + g / r;  p = p - lr * b
        otherwise:     p = p - lr * g / r

    State per parameter: ``'step'``, ``'square_avg'`` (v), ``'momentum_buffer'`` (b, with
    momentum), ``'grad_avg'`` (a, when centered).

    Args:
        params: parameters or parameter groups.
        lr: learning rate. Default 1e-2.
        alpha: smoothing constant. Default 0.99.
        eps: denominator term. Default 1e-8.
        weight_decay: L2 penalty. Default 0.
        momentum: momentum factor. Default 0.
        centered: normalise by the estimated variance instead of the raw second moment.
        maximize: ascend the objective.
        capturable, foreach, differentiable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("epsilon", eps)
        _check_nonneg("momentum", momentum)
        _check_nonneg("weight_decay", weight_decay)
        _check_nonneg("alpha", alpha)
        defaults = dict(
            lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
            weight_decay=weight_decay, capturable=capturable, foreach=foreach,
            maximize=maximize, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _group_step(self, params: list, o: SimpleNamespace) -> bool:
        """The group's steps in one native call (``_kernels.rmsprop_many``: ``_update``'s kernel
        path, the same bits) when every parameter with a gradient has its state and plain float
        arrays and the options are plain numbers; False otherwise (``_update`` runs)."""
        if (o.maximize or o.weight_decay != 0 or type(self)._update is not RMSprop._update
                or type(o.lr) not in _NUMBER or type(o.alpha) not in _NUMBER
                or type(o.eps) not in _NUMBER or type(o.momentum) not in _NUMBER):
            return False
        state = self.state
        momentum, centered = o.momentum > 0, bool(o.centered)
        live, ds, gs, vs, avgs, bufs, steps = [], [], [], [], [], [], []
        try:
            for p in params:
                g = p.grad
                if g is None:
                    continue
                st = state[p]
                live.append(p)
                ds.append(p._data)
                gs.append(g._data)
                vs.append(st["square_avg"]._data)
                steps.append(st["step"]._data)
                if centered:
                    avgs.append(st["grad_avg"]._data)
                if momentum:
                    bufs.append(st["momentum_buffer"]._data)
        except (KeyError, AttributeError):  # a first step (no state yet), or another kind
            return False
        if not _kernels.rmsprop_many(ds, gs, vs, avgs if centered else None,
                                     bufs if momentum else None, steps, o.alpha, o.eps,
                                     o.momentum, o.lr):
            return False
        for p in live:
            v = p._version
            if v is not None:  # changed in place: saved copies are stale
                v[0] += 1
        return True

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["square_avg"] = _zeros_state(d)
            if o.momentum > 0:
                state["momentum_buffer"] = _zeros_state(d)
            if o.centered:
                state["grad_avg"] = _zeros_state(d)
        state["step"]._data += 1
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            g = g + o.weight_decay * d
        v = state["square_avg"]._data
        if (type(d) is np.ndarray and g.shape == d.shape and type(o.lr) in _NUMBER
                and type(o.alpha) in _NUMBER and type(o.eps) in _NUMBER
                and type(o.momentum) in _NUMBER and _kernels.rmsprop_step(
                    d, g, v, state["grad_avg"]._data if o.centered else None,
                    state["momentum_buffer"]._data if o.momentum > 0 else None,
                    o.alpha, o.eps, o.momentum, o.lr)):
            return  # the eager kernel: the operations below in their order, one pass
        v *= o.alpha
        r = g * g
        r *= 1.0 - o.alpha
        v += r
        xp = _xp(d)
        reuse = type(r) is np.ndarray and r.shape == v.shape  # r's memory again (no 0-d scalar)
        if o.centered:
            a = state["grad_avg"]._data
            a *= o.alpha
            if reuse:  # the same operations, through r's memory
                xp.multiply(g, 1.0 - o.alpha, out=r)
                a += r
                xp.multiply(a, a, out=r)
                xp.subtract(v, r, out=r)
                xp.sqrt(r, out=r)
            else:
                a += (1.0 - o.alpha) * g
                r = xp.sqrt(v - a * a)
        elif reuse:
            xp.sqrt(v, out=r)
        else:
            r = xp.sqrt(v)
        r += o.eps
        if type(r) is np.ndarray and r.shape == g.shape:
            xp.divide(g, r, out=r)
        else:
            r = g / r
        if o.momentum > 0:
            b = state["momentum_buffer"]._data
            b *= o.momentum
            b += r
            if type(r) is np.ndarray and r.shape == b.shape:
                xp.multiply(b, o.lr, out=r)
                d -= r
            else:
                d -= o.lr * b
        else:
            r *= o.lr
            d -= r
