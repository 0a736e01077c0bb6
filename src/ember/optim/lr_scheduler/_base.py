"""The shared machinery of ``ember.optim.lr_scheduler``: ``LRScheduler`` (stepping, the
call-order warning, ``state_dict``) and the helpers every scheduler uses."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable
from functools import wraps
from typing import Any

from ..._tensor import Tensor
from ..optimizer import Optimizer

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
    if isinstance(param, (list, tuple)):
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
