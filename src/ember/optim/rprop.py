"""Rprop: resilient backpropagation (Riedmiller & Braun): per-weight step sizes driven by the
sign of the gradient only."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .._tensor import Tensor
from ..ops import sparse as _sparse
from .asgd import _real
from .optimizer import Optimizer, ParamsT, _check_lr, _step_tensor, _xp, _zeros_state

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop, PyTorch's algorithm (step sizes start at lr, ``prev`` at 0)::

        g = -grad if maximize else grad
        f = etaplus where g * prev > 0, etaminus where g * prev < 0, 1 elsewhere
        step_size = clamp(step_size * f, step_size_min, step_size_max)
        g = 0 where g * prev < 0            (a sign change: skip this step)
        p = p - sign(g) * step_size;    prev = g

    State per parameter: ``'step'`` (0-d float32 tensor), ``'prev'`` and ``'step_size'``.
    Complex parameters are updated as pairs of real numbers. Full-batch training only: the
    signs of noisy minibatch gradients make it diverge.

    Args:
        params: parameters or parameter groups.
        lr: learning rate, the initial step size (float or 0-d tensor). Default 1e-2.
        etas: (etaminus, etaplus), the factors that shrink and grow the step sizes; they need
            ``0 < etaminus < 1 < etaplus``. Default (0.5, 1.2).
        step_sizes: (minimal, maximal) step size. Default (1e-6, 50).
        maximize: ascend the objective.
        capturable, foreach, differentiable: accepted for PyTorch compatibility; ignored.

    Example::

        opt = ember.optim.Rprop(model.parameters(), lr=0.01, etas=(0.5, 1.2))
    """

    _complex_as_real = False  # (complex values handled in _update, as real pairs)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]} (Rprop needs "
                             "0 < etaminus < 1 < etaplus)")
        defaults = dict(
            lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        if isinstance(g, _sparse.RECORDS):
            raise self._no_sparse()
        d = p._data
        xp = _xp(d)
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor(0.0)
            state["prev"] = _zeros_state(d)
            lr = complex(o.lr, o.lr) if d.dtype.kind == "c" else o.lr
            state["step_size"] = Tensor._make(xp.full_like(g, lr))
        state["step"]._data += 1
        prev, size = state["prev"]._data, state["step_size"]._data
        if d.dtype.kind == "c":  # complex: the real and imaginary parts as two real numbers
            d, g, prev, size = _real(d), _real(g), _real(prev), _real(size)
        etaminus, etaplus = o.etas
        if o.maximize:
            g = -g
        f = xp.empty_like(d)
        xp.multiply(g, prev, out=f)
        flip = f < 0
        grow = f > 0
        f.fill(1)
        xp.copyto(f, f.dtype.type(etaplus), where=grow)
        xp.copyto(f, f.dtype.type(etaminus), where=flip)
        size *= f
        lo, hi = o.step_sizes
        xp.clip(size, lo, hi, out=size)
        xp.copyto(prev, g)
        xp.copyto(prev, 0, where=flip)
        xp.sign(prev, out=f)
        f *= size
        d -= f
