"""Schedules of one epoch counter: lambda, multiplicative, step, constant, linear, exponential,
cosine (with warm restarts) and polynomial. Each has PyTorch's chainable ``get_lr`` and, where
one exists, the closed form used when ``step(epoch)`` jumps."""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..optimizer import Optimizer
from ._base import (
    LRScheduler,
    _float,
    _InsideStep,
    _warn_get_lr_outside_step,
)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), with one function or one per group.

    Example::

        sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base, with callable objects' ``__dict__`` in place of the lambdas."""
        return _lambdas_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (callable objects get their attributes back)."""
        _lambdas_load_state_dict(self, state_dict)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        return [_float(b) * f(self.last_epoch) for f, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LRScheduler):
    """lr = lr * lr_lambda(epoch) at every step after the first.

    Example::

        sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base, with callable objects' ``__dict__`` in place of the lambdas."""
        return _lambdas_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (callable objects get their attributes back)."""
        _lambdas_load_state_dict(self, state_dict)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, lrs)]


def _lambdas(optimizer: Optimizer, lr_lambda: Any) -> list[Callable]:
    n = len(optimizer.param_groups)
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * n
    if len(lr_lambda) != n:
        raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


def _lambdas_state_dict(sched: Any) -> dict[str, Any]:
    sd = {k: v for k, v in sched.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    sd["lr_lambdas"] = [
        None if isinstance(f, types.FunctionType) else f.__dict__.copy() for f in sched.lr_lambdas
    ]
    return sd


def _lambdas_load_state_dict(sched: Any, state_dict: dict[str, Any]) -> None:
    state_dict = dict(state_dict)
    lambdas = state_dict.pop("lr_lambdas")
    sched.__dict__.update(state_dict)
    for f, saved in zip(sched.lr_lambdas, lambdas):
        if saved is not None:
            f.__dict__.update(saved)


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size): decay by gamma every step_size epochs.

    Example::

        sched = StepLR(opt, step_size=30, gamma=0.1)  # 0.05 for 30 epochs, 0.005 for 30...
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        k = self.last_epoch // self.step_size
        return [_float(b) * self.gamma**k for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Decay by gamma at each milestone epoch (a repeated milestone decays repeatedly).

    Example::

        sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self.last_epoch not in self.milestones:
            return lrs
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        k = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [_float(b) * self.gamma**k for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until epoch total_iters, then initial_lr.

    Example::

        sched = ConstantLR(opt, factor=0.5, total_iters=4)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(
                f"Constant multiplicative factor expected to be between 0 and 1 (got {factor})."
            )
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [_float(b) * f for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor on initial_lr moves linearly from start_factor to end_factor over
    total_iters epochs (a warm-up), then stays.

    Example::

        sched = LinearLR(opt, start_factor=0.1, total_iters=5)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                f"to 1 (got {start_factor})."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(
                f"Ending multiplicative factor expected to be between 0 and 1 (got {end_factor})."
            )
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        s, e = self.start_factor, self.end_factor
        f = 1.0 + (e - s) / (self.total_iters * s + (self.last_epoch - 1) * (e - s))
        return [lr * f for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        s, e = self.start_factor, self.end_factor
        f = s + (e - s) * min(self.total_iters, self.last_epoch) / self.total_iters
        return [_float(b) * f for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch.

    Example::

        sched = ExponentialLR(opt, gamma=0.9)
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        return [lr * self.gamma for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        return [_float(b) * self.gamma**self.last_epoch for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing (SGDR without restarts)::

        lr_t = eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2

    computed recursively from the current lr (so it composes with other schedulers); past
    T_max the cosine continues (back up to initial_lr at 2 T_max).

    Example::

        sched = CosineAnnealingLR(opt, T_max=100, eta_min=1e-5)
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self._is_initial:
            return lrs
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        if (t - 1 - T) % (2 * T) == 0:
            return [
                lr + (_float(b) - eta) * (1 - math.cos(math.pi / T)) / 2
                for lr, b in zip(lrs, self.base_lrs)
            ]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - eta) + eta for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (_float(b) - self.eta_min) * c for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power.

    Example::

        sched = PolynomialLR(opt, total_iters=4, power=1.0)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        lrs = self._group_lrs()
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        t, n = self.last_epoch, self.total_iters
        f = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * f for lr in lrs]

    def _get_closed_form_lr(self) -> list[float]:
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [_float(b) * f for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Cosine annealing with warm restarts (SGDR)::

        lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    T_cur counts epochs since the last restart; a restart happens when it reaches T_i, and the
    next period is ``T_i * T_mult``. ``step(epoch)`` accepts fractional epochs (per-batch use).

    Example::

        sched = CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (_float(b) - self.eta_min) * c for b in self.base_lrs]

    def _step(self, epoch: float | None, warn_epoch: bool) -> None:
        # PyTorch's CosineAnnealingWarmRestarts neither counts steps nor warns about order.
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with _InsideStep(self):
            values = self.get_lr()
        self._apply(values)
