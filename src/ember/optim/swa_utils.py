"""``torch.optim.swa_utils``: stochastic weight averaging (SWA) and exponential moving averages
(EMA) of a model's weights: ``AveragedModel``, the ``SWALR`` schedule, ``update_bn`` (recompute
BatchNorm statistics for averaged weights) and the averaging functions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, Literal

from .. import _dtype, _foreach
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops import creation as _creation
from ..utils._foreach_utils import _group_tensors_by_device_and_dtype
from .lr_scheduler._base import LRScheduler, _format_param, _warn_get_lr_outside_step
from .optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]

ParamList = tuple[Tensor, ...] | list[Tensor]

# devices whose averaging takes the list (foreach) path without a multi_avg_fn, as PyTorch's
_FOREACH_DEVICES = ("cuda", "xpu")


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place EMA over lists of tensors, for ``AveragedModel(multi_avg_fn=...)``:
    ``ema = decay * ema + (1 - decay) * current`` (a lerp for floating tensors).

    Args:
        decay: the weight of the running average, in [0, 1]. Default 0.999.
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list: ParamList, current_param_list: ParamList, _: Any) -> None:
        first = ema_param_list[0]
        if first.is_floating_point() or first.is_complex():
            _foreach._foreach_lerp_(ema_param_list, current_param_list, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place equal-weight average over lists of tensors, for
    ``AveragedModel(multi_avg_fn=...)``: ``avg += (current - avg) / (num_averaged + 1)``.
    Integer tensors (a BatchNorm's ``num_batches_tracked`` with ``use_buffers=True``) are refused
    as PyTorch refuses them (``addcdiv`` of integers) when ``num_averaged`` is a tensor."""

    @no_grad()
    def swa_update(averaged_param_list: ParamList, current_param_list: ParamList,
                   num_averaged: Tensor | int) -> None:
        first = averaged_param_list[0]
        if first.is_floating_point() or first.is_complex():
            _foreach._foreach_lerp_(averaged_param_list, current_param_list,
                                    1 / (num_averaged + 1))
        else:
            diffs = _foreach._foreach_sub(current_param_list, averaged_param_list)
            if isinstance(num_averaged, Tensor):
                _foreach._foreach_addcdiv_(averaged_param_list, diffs,
                                           [num_averaged + 1] * len(averaged_param_list))
            else:
                _foreach._foreach_add_(averaged_param_list, diffs,
                                       alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """An EMA of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``decay * ema + (1 - decay) * current``.

    Args:
        decay: the weight of the running average, in [0, 1]. Default 0.999.
    """
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """An equal-weight average of one tensor, for ``AveragedModel(avg_fn=...)``: returns
    ``avg + (current - avg) / (num_averaged + 1)``."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    r"""A copy of ``model`` whose weights are a running average of ``model``'s (SWA, or EMA
    with an EMA function), updated by ``update_parameters(model)``.

    The first ``update_parameters`` copies the weights; each later one averages them in with
    ``avg_fn(averaged, current, n_averaged)`` (one tensor at a time, returning the new value),
    or ``multi_avg_fn(averaged_list, current_list, n_averaged)`` (lists, in place), or by default
    the equal-weight average. Buffers (BatchNorm statistics) are copied from ``model``, or
    averaged too with ``use_buffers=True``; otherwise recompute them with :func:`update_bn`.
    ``n_averaged`` is a long buffer (saved in the state dict; the functions are not).

    Args:
        model: the model to average (deep-copied).
        device: where to keep the averaged copy (default: where ``model`` is).
        avg_fn: per-tensor averaging function (see above). Only one of avg_fn and
            multi_avg_fn may be given.
        multi_avg_fn: in-place list averaging function, e.g. ``get_ema_multi_avg_fn(0.999)``.
        use_buffers: average the buffers too (and iterate parameters and buffers of the
            wrapped module). Default False.

    Example::

        swa_model = ember.optim.swa_utils.AveragedModel(model)
        ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999),
                                  use_buffers=True)
        ...
        swa_model.update_parameters(model)       # after each epoch past swa_start
        ember.optim.swa_utils.update_bn(loader, swa_model)
    """

    n_averaged: Tensor

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable[[Tensor, Tensor, Tensor | int], Tensor] | None = None,
        multi_avg_fn: Callable[[ParamList, ParamList, Tensor | int], None] | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current weights into this model's (copy them the first time)."""
        if self.use_buffers:
            own: Iterable[Tensor] = itertools.chain(self.module.parameters(),
                                                    self.module.buffers())
            theirs: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            own, theirs = self.parameters(), model.parameters()
        averaged: list[Tensor] = []
        current: list[Tensor] = []
        first = bool(self.n_averaged == 0)
        for p_avg, p_model in zip(own, theirs):  # (the shorter one ends it, as PyTorch's)
            p_model_ = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model_)
            if first:
                p_avg.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_tensors_by_device_and_dtype([averaged, current])
                for (device, _), ([avg_list, cur_list], _) in groups.items():
                    n = self.n_averaged.to(device)
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(avg_list, cur_list, n)
                    elif device is not None and device.type in _FOREACH_DEVICES:
                        get_swa_multi_avg_fn()(avg_list, cur_list, n)
                    else:
                        swa = get_swa_avg_fn()
                        for p_avg, p_model in zip(avg_list, cur_list, strict=True):
                            p_avg.copy_(swa(p_avg, p_model, n))
            else:
                for p_avg, p_model in zip(averaged, current, strict=True):
                    n = self.n_averaged.to(p_avg.device)
                    p_avg.detach().copy_(self.avg_fn(p_avg.detach(), p_model, n))
        if not self.use_buffers:
            # the buffers follow the model (update_bn recomputes BatchNorm's for the average)
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every BatchNorm layer of ``model`` with one pass
    over ``loader`` (the statistics then average all batches equally: momentum None).

    Each batch is a tensor, or a list/tuple whose first element is the model's input. The
    model runs in training mode; its mode and the layers' momenta are restored after.

    Args:
        loader: the data (e.g. a DataLoader over the training set).
        model: the model, e.g. an :class:`AveragedModel`.
        device: where to move each input first, if given.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs, then
    hold it (used with :class:`AveragedModel` late in training), with PyTorch's chainable rule:
    ``lr = swa_lr * a(t) + lr0 * (1 - a(t))``, ``t = step / anneal_epochs`` clipped to [0, 1],
    ``a`` the cosine ``(1 - cos(pi t)) / 2`` or linear ``t`` ramp, and ``lr0`` recovered from
    the current learning rate. Each group also gets ``group['swa_lr']``.

    Args:
        optimizer: the optimizer.
        swa_lr: the final learning rate, for all groups or a list with one per group.
        anneal_epochs: epochs of the annealing (an int >= 0). Default 10.
        anneal_strategy: "cos" or "linear". Default "cos".
        last_epoch: the index of the last epoch. Default -1.

    Example::

        swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=5, anneal_strategy="linear")
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr.clone().detach() if isinstance(lr, Tensor) else lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: Any, swa_lr: Any, alpha: float) -> Any:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        """The learning rates of the next step (called by ``step()``; use ``get_last_lr()``)."""
        _warn_get_lr_outside_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy: Literal["cos", "linear"]) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's ``__dict__`` without the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (the annealing function follows ``_anneal_strategy``)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
