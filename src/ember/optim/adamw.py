"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter)."""

from __future__ import annotations

from .._tensor import Tensor
from .adam import Adam
from .optimizer import ParamsT

__all__ = ["AdamW"]


class AdamW(Adam):
    r"""Adam with decoupled weight decay: each step first shrinks the weights,
    ``p = p * (1 - lr * weight_decay)``, then takes the Adam step without any L2 term in the
    gradient (see :class:`Adam` for the rest of the update and the state).

    Args:
        params: parameters or parameter groups (e.g. a decayed and a non-decayed group).
        lr: learning rate (float or 0-d tensor). Default 1e-3.
        betas: (beta1, beta2). Default (0.9, 0.999).
        eps: denominator term. Default 1e-8.
        weight_decay: decoupled decay coefficient. Default 1e-2.
        amsgrad: use the maximum of past second moments.
        maximize: ascend the objective.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (``fused=True`` as nanoGPT passes it); ignored.

    Example::

        opt = ember.optim.AdamW([{'params': decay, 'weight_decay': 0.1},
                                 {'params': no_decay, 'weight_decay': 0.0}], lr=6e-4, fused=False)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
            foreach=foreach, maximize=maximize, capturable=capturable,
            differentiable=differentiable, fused=fused, decoupled_weight_decay=True,
        )
