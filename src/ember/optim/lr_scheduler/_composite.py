"""Schedulers made of schedulers: ``SequentialLR`` (one after another at milestones) and
``ChainedScheduler`` (all of them every step)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ..optimizer import Optimizer
from ._base import (
    LRScheduler,
    _copy_lr,
    _set_group_value,
)
from ._plateau import ReduceLROnPlateau


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
