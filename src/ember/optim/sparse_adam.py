"""SparseAdam: Adam for sparse gradients (``nn.Embedding(sparse=True)``): the moments and the
parameter change only at the rows a step's gradient names."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from .._tensor import Tensor
from ..ops import sparse as _sparse
from .optimizer import Optimizer, ParamsT, _check_betas, _check_lr, _check_nonneg, _xp

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""SparseAdam, PyTorch's algorithm (step t counts from 1), at the gradient's coalesced
    indices only (elsewhere the moments and the parameter keep their values)::

        g = -grad if maximize else grad
        m = m + (1 - beta1) * (g - m);    v = v + (1 - beta2) * (g^2 - v)
        p = p - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)

    State per parameter: ``'step'`` (an int, as PyTorch's), ``'exp_avg'``, ``'exp_avg_sq'``.
    The gradients must be sparse and the parameters dense.

    Example::

        emb = ember.nn.Embedding(1000, 16, sparse=True)
        opt = ember.optim.SparseAdam(emb.parameters(), lr=1e-2)
    """

    _complex_as_real = False  # (it refuses complex parameters itself, as PyTorch's)

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg("epsilon", eps)
        _check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        bad = [[i, j] for i, group in enumerate(self.param_groups)
               for j, p in enumerate(group["params"]) if _sparse.is_sparse(p)]
        if bad:
            raise ValueError(f"Sparse params at indices {bad}: SparseAdam requires dense "
                             "parameter tensors")

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        if not isinstance(g, _sparse.RECORDS):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                               "Adam instead")
        d = p._data
        xp = _xp(d)
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = Tensor._make(xp.zeros_like(d))
            state["exp_avg_sq"] = Tensor._make(xp.zeros_like(d))
        state["step"] += 1
        t = state["step"]
        c = _sparse.coalesce(_sparse.as_coo(g))
        if c.nnz == 0:
            return
        idx = tuple(c.indices)
        vals = (-c.values if o.maximize else c.values).astype(d.dtype, copy=False)
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        old_m, old_v = m[idx], v[idx]
        dm = (vals - old_m) * (1 - o.beta1)
        dv = (vals * vals - old_v) * (1 - o.beta2)
        m[idx] = old_m + dm
        v[idx] = old_v + dv
        numer = dm + old_m
        denom = xp.sqrt(dv + old_v) + o.eps
        step_size = o.lr * math.sqrt(1 - o.beta2 ** t) / (1 - o.beta1 ** t)
        d[idx] += (-step_size * (numer / denom)).astype(d.dtype, copy=False)
