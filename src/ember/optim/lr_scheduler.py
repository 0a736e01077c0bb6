"""Learning-rate schedulers: change ``param_group['lr']`` as training progresses.

Each scheduler follows PyTorch's definition. Most are *chainable*: ``get_lr()`` derives the next
learning rate from the current ``group['lr']``, so several schedulers can act on one optimizer
(``ChainedScheduler``); those with a closed form also use it when ``step(epoch)`` jumps.

Call order, as in PyTorch: ``optimizer.step()`` then ``scheduler.step()``, once per epoch (or per
batch for OneCycleLR / CyclicLR). Stepping the scheduler first skips the first learning rate, and
is warned about: the scheduler wraps ``optimizer.step`` to notice whether it ran.
"""

from __future__ import annotations

import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from typing import Any, Literal

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule. "
    "See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)

_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    "`lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


def _float(x: Any) -> float:
    return x if type(x) is float else float(x)


def _set_group_value(group: dict[str, Any], key: str, value: Any) -> None:
    """group[key] = value, writing into a tensor learning rate in place."""
    cur = group.get(key)
    if isinstance(cur, Tensor):
        cur._data[...] = float(value)
    else:
        group[key] = value


def _copy_lr(lr: Any) -> Any:
    return lr.clone().detach() if isinstance(lr, Tensor) else lr


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    """One value per parameter group (a scalar is repeated)."""
    n = len(optimizer.param_groups)
    if isinstance(param, list | tuple):
        if len(param) != n:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(param)} values, param_groups has {n}."
            )
        return list(param)
    return [param] * n


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Replace ``optimizer.step`` (on this instance) by a wrapper that records each call in
    ``optimizer._opt_called``, so a scheduler can warn when it is stepped first."""
    step = optimizer.step
    if getattr(step, "_wrapped_by_lr_sched", False):
        return
    func = getattr(step, "__func__", None)
    if func is not None and getattr(step, "__self__", None) is optimizer:
        opt_ref = weakref.ref(optimizer)  # no reference cycle through the wrapper

        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            opt = opt_ref()
            opt._opt_called = True
            return func(opt, *args, **kwargs)
    else:  # a plain callable already set on the instance

        @wraps(step)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            optimizer._opt_called = True
            return step(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    optimizer.step = wrapper  # type: ignore[method-assign]


class _InsideStep:
    """Marks ``get_lr()`` calls made by ``step()`` (others are warned about)."""

    def __init__(self, sched: LRScheduler) -> None:
        self.sched = sched

    def __enter__(self) -> None:
        self.sched._get_lr_called_within_step = True

    def __exit__(self, *exc: Any) -> None:
        self.sched._get_lr_called_within_step = False


def _warn_get_lr_outside_step(sched: LRScheduler) -> None:
    if not sched._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use "
            "`get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


class LRScheduler:
    """Base class of the learning-rate schedulers.

    A subclass implements ``get_lr()`` (the next learning rate of every group); ``step()``
    advances ``last_epoch``, writes the new rates into ``optimizer.param_groups`` and keeps
    them for ``get_last_lr()``.

    Args:
        optimizer: the optimizer whose learning rates change.
        last_epoch: index of the last epoch done; -1 starts afresh (each group's ``lr`` is
            recorded as ``'initial_lr'``); another value resumes (the groups must then hold
            ``'initial_lr'``).
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy_lr(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "an optimizer (create the scheduler with last_epoch=-1, or load the "
                        "optimizer's state first)"
                    )
        self.base_lrs: list[Any] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """The step every scheduler takes when created (sets the first learning rates)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Everything in the scheduler's ``__dict__`` except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return [_copy_lr(lr) for lr in self._last_lr]

    def get_lr(self) -> list[Any]:
        """The learning rates of the next step (called by ``step()``; use ``get_last_lr()``)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and set the new learning rates."""
        self._step(epoch, warn_epoch=True)

    def _step(self, epoch: int | None, warn_epoch: bool) -> None:
        if self._step_count == 1:  # the user's first call (the 0th is made by __init__)
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(_OVERRIDDEN_WARNING, UserWarning, stacklevel=3)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=3)
        self._step_count += 1
        with _InsideStep(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                if warn_epoch:
                    warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=3)
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        self._apply(values)

    def _apply(self, values: Iterable[Any]) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = [_copy_lr(group["lr"]) for group in self.optimizer.param_groups]

    def _group_lrs(self) -> list[float]:
        return [_float(group["lr"]) for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # PyTorch's old name


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
    if not isinstance(lr_lambda, list | tuple):
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
        if not isinstance(eta_min, float | int):
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


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): lr rises from max_lr / div_factor to max_lr over
    ``pct_start`` of the steps, then anneals to initial_lr / final_div_factor (three phases with
    ``three_phase``); momentum (or Adam's beta1) cycles inversely between max_momentum and
    base_momentum. Step it after every batch.

    Example::

        sched = OneCycleLR(opt, max_lr=0.1, steps_per_epoch=len(loader), epochs=10)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                       "base_momentum"),
                _phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"),
                _phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                       "base_momentum"),
                _phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option "
                    "enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = _format_param("max_momentum", optimizer, max_momentum)
            base_ms = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_max, m_base, group in zip(max_ms, base_ms, optimizer.param_groups):
                    _set_momentum(group, m_max, self.use_beta1)
                    group["max_momentum"] = m_max
                    group["base_momentum"] = m_base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            lr = momentum = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(
                        _float(group[phase["start_lr"]]), _float(group[phase["end_lr"]]), pct
                    )
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, momentum, self.use_beta1)
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_m: str, end_m: str) -> dict:
    return {
        "end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
        "start_momentum": start_m, "end_momentum": end_m,
    }


def _set_momentum(group: dict[str, Any], momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith): lr cycles between base_lr and max_lr, rising over
    step_size_up steps and falling over step_size_down; ``mode`` scales the amplitude
    ('triangular': constant, 'triangular2': halved each cycle, 'exp_range': gamma ** step) or
    ``scale_fn`` does. Momentum cycles inversely. Step it after every batch.

    Example::

        sched = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2000)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option "
                    "enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_max, m_base, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups
                ):
                    _set_momentum(group, m_max, self.use_beta1)
                    group["max_momentum"] = m_max
                    group["base_momentum"] = m_base
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The amplitude factor at cycle (or iteration) x."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        s = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            _float(b) + (m - _float(b)) * scale_factor * s
            for b, m in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, mb, mm in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                _set_momentum(group, mm - (mm - mb) * scale_factor * s, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As the base; a custom ``scale_fn`` is kept only if it is a callable object."""
        sd = super().state_dict()
        fn = sd.pop("_scale_fn_custom", None)
        sd["_scale_fn_custom"] = (
            None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        )
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (the custom ``scale_fn`` object gets its attributes)."""
        state_dict = dict(state_dict)
        fn_state = state_dict.pop("_scale_fn_custom", None)
        super().load_state_dict(state_dict)
        if fn_state is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn_state)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric has stopped improving for
    ``patience`` epochs (then wait ``cooldown`` epochs); never below ``min_lr``.

    ``step(metric)`` takes the monitored value (e.g. the validation loss).

    Example::

        sched = ReduceLROnPlateau(opt, mode="min", patience=5)
        for epoch in range(100):
            train(...); val_loss = validate(...)
            sched.step(val_loss)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"Factor should be < 1.0 (got {factor}).")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [_copy_lr(group["lr"]) for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric; reduce the learning rates after too long a plateau."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [_copy_lr(group["lr"]) for group in self.optimizer.param_groups]

    def _reduce_lr(self, epoch: int) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                    f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due "
                    "to a new param group being added to the optimizer. Please modify the "
                    "`min_lrs` field to match the length of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _set_group_value(group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()``."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def _check_schedulers(
    cls: str, optimizer: Optimizer | None, schedulers: Sequence[Any]
) -> Optimizer:
    if len(schedulers) < 1:
        raise ValueError(f"{cls} expects at least one scheduler, but got no scheduler.")
    if optimizer is None:
        optimizer = schedulers[0].optimizer
    for idx, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{cls} at index {idx} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{cls} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                "kwargs to be specified when calling `step`, but got one at index "
                f"{idx} in the given schedulers sequence."
            )
        if s.optimizer is not optimizer:
            raise ValueError(
                f"{cls} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(s).__name__} at index {idx} has {s.optimizer}, which is "
                f"different from {type(optimizer).__name__}."
            )
    return optimizer


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at the ``milestones`` epochs (each new
    scheduler starts from its own epoch 0).

    Example::

        warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        cosine = CosineAnnealingLR(opt, T_max=95)
        sched = SequentialLR(opt, [warmup, cosine], milestones=[5])
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Creating the schedulers stepped them: start again from the initial rates, with only
        # the first scheduler's initial step applied.
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        self._undo_initial_steps(self)
        self._schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def _undo_initial_steps(self, sched: Any) -> None:
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self._undo_initial_steps(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch with the scheduler whose turn it is."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            if isinstance(sched, LRScheduler) and not hasattr(sched, "_schedulers"):
                sched._step(0, warn_epoch=False)  # a fresh start for the next scheduler
            else:
                sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Undo the initial step of (nested) schedulers."""
        self._undo_initial_steps(self if sched is None else sched)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state with each inner scheduler's ``state_dict()``."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (inner schedulers included)."""
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, inner):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Step several (chainable) schedulers together: their effects on the learning rate
    multiply.

    Example::

        sched = ChainedScheduler([ConstantLR(opt, 0.1, total_iters=2), ExponentialLR(opt, 0.9)])
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        optimizer = _check_schedulers(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [
            _copy_lr(group["lr"]) for group in self._schedulers[-1].optimizer.param_groups
        ]

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler once."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [
            _copy_lr(group["lr"]) for group in self._schedulers[-1].optimizer.param_groups
        ]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state with each inner scheduler's ``state_dict()``."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()`` (inner schedulers included)."""
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, inner):
            s.load_state_dict(sd)


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.optim.lr_scheduler", name)
