"""SGD: stochastic gradient descent with optional momentum (heavy-ball or Nesterov)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import _kernels_loader as _kernels
from .._tensor import Tensor
from ..ops import sparse as _sparse
from .optimizer import Optimizer, ParamsT, _check_lr, _check_nonneg

__all__ = ["SGD"]


_NUMBER = (float, int)  # options the native group step takes (as C doubles)


class SGD(Optimizer):
    r"""Stochastic gradient descent, PyTorch's algorithm::

        g = -grad if maximize else grad
        g = g + weight_decay * p                         (if weight_decay)
        b = g  (first step)  |  b = momentum * b + (1 - dampening) * g
        g = g + momentum * b  (nesterov)  |  g = b        (if momentum)
        p = p - lr * g

    State per parameter: ``'momentum_buffer'`` (only when ``momentum != 0``).

    Args:
        params: parameters or parameter groups.
        lr: learning rate (a float or a 0-d tensor). Default 1e-3.
        momentum, dampening, weight_decay: as above (defaults 0).
        nesterov: Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize: ascend the objective instead of descending it.
        foreach, differentiable, fused: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float | Tensor = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check_nonneg("momentum", momentum)
        _check_nonneg("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
            nesterov=nesterov, maximize=maximize, foreach=foreach,
            differentiable=differentiable, fused=fused,
        )
        super().__init__(params, defaults)

    def _group_step(self, params: list, o: SimpleNamespace) -> bool:
        """The group's steps in one native call (``_kernels.sgd_many``: ``_update``'s
        arithmetic, the same bits) when every parameter with a gradient is a plain float array
        (with its momentum buffer, after the first step) and the options are plain numbers;
        False otherwise (``_update`` runs)."""
        if (o.maximize or o.weight_decay != 0 or type(self)._update is not SGD._update
                or type(o.lr) not in _NUMBER or type(o.momentum) not in _NUMBER
                or type(o.dampening) not in _NUMBER):
            return False
        momentum = o.momentum != 0
        state = self.state
        live, ds, gs, bs = [], [], [], []
        try:
            for p in params:
                g = p.grad
                if g is None:
                    continue
                live.append(p)
                ds.append(p._data)
                gs.append(g._data)
                if momentum:
                    bs.append(state[p]["momentum_buffer"]._data)
        except (KeyError, AttributeError):  # a first step (no buffer yet), or another kind
            return False
        damp = 1.0 - o.dampening if o.dampening != 0 else None
        if not _kernels.sgd_many(ds, gs, bs if momentum else None, o.momentum, damp, o.lr,
                                 bool(o.nesterov)):
            return False
        for p in live:
            v = p._version
            if v is not None:  # changed in place: saved copies are stale
                v[0] += 1
        return True

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        d = p._data
        if isinstance(g, _sparse.RECORDS):
            return self._sparse_update(p, g, o)
        if o.maximize:
            g = -g
        if o.weight_decay != 0:
            g = g + o.weight_decay * d
        if o.momentum != 0:
            state = self.state[p]
            buf_t = state.get("momentum_buffer")
            if buf_t is None:
                state["momentum_buffer"] = buf_t = Tensor._make(g.copy())
                buf = buf_t._data
            else:
                buf = buf_t._data
                if (type(d) is np.ndarray and g.shape == d.shape and type(o.lr) in (float, int)
                        and _kernels.sgd_momentum_step(d, g, buf, o.momentum, o.dampening, o.lr,
                                                       o.nesterov)):
                    return  # the eager kernel: the same operations in one pass
                buf *= o.momentum
                buf += g * (1.0 - o.dampening) if o.dampening != 0 else g
            g = g + o.momentum * buf if o.nesterov else buf
        if type(d) is np.ndarray and d.ndim and d.flags.c_contiguous and g.shape == d.shape \
                and g.dtype == d.dtype:
            if d.size <= _BLOCK:  # (_sub_scaled's one-block case, without its call)
                d -= g * o.lr
            else:
                _sub_scaled(d, g, o.lr)
        else:
            d -= o.lr * g

    def _sparse_update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        """A sparse gradient (``nn.Embedding(sparse=True)``), as PyTorch updates: the momentum
        buffer is a sparse tensor too, and only the rows the gradient names change."""
        if o.weight_decay != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead. (SGD's weight_decay adds the dense parameter to a "
                               "sparse gradient: use weight_decay=0 with sparse gradients)")
        grad = _sparse.make(g)
        if o.maximize:
            grad = -grad
        if o.momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                state["momentum_buffer"] = buf = grad.clone()
            elif _sparse.is_sparse(buf):
                buf.mul_(o.momentum).add_(grad, alpha=1.0 - o.dampening)
            else:
                buf._data *= o.momentum
                buf._data[...] = _sparse.add_dense(buf._data, grad._data, 1.0 - o.dampening)
            grad = grad.add(buf, alpha=o.momentum) if o.nesterov else buf
        if _sparse.is_sparse(grad):
            _sparse.add_into(p._data, grad._data, -o.lr)
        else:
            p._data -= o.lr * grad._data


def _sub_scaled(d: np.ndarray, g: np.ndarray, lr: float) -> None:
    """d -= lr * g a block at a time (the same roundings; no full-size temporary)."""
    if d.size <= _BLOCK:  # one block: the temporary is small, the loop's set-up is not
        d -= g * lr
        return
    df, gf = d.reshape(-1), g.reshape(-1)
    sc = np.empty(min(df.size, _BLOCK), d.dtype)
    for i in range(0, df.size, _BLOCK):
        j = min(i + _BLOCK, df.size)
        s = sc[:j - i]
        np.multiply(gf[i:j], lr, out=s)
        df[i:j] -= s


_BLOCK = 65536  # elements per block
