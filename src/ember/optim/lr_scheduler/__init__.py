"""Learning-rate schedulers: change ``param_group['lr']`` as training progresses.

Each scheduler follows PyTorch's definition. Most are *chainable*: ``get_lr()`` derives the next
learning rate from the current ``group['lr']``, so several schedulers can act on one optimizer
(``ChainedScheduler``); those with a closed form also use it when ``step(epoch)`` jumps.

Call order, as in PyTorch: ``optimizer.step()`` then ``scheduler.step()``, once per epoch (or per
batch for OneCycleLR / CyclicLR). Stepping the scheduler first skips the first learning rate, and
is warned about: the scheduler wraps ``optimizer.step`` to notice whether it ran.

Where each part lives: ``_base.py`` (``LRScheduler``, the call-order warning, the shared
helpers), ``_simple.py`` (the schedules of one epoch counter: lambda, step, constant, linear,
exponential, cosine, polynomial), ``_cyclic.py`` (``OneCycleLR``, ``CyclicLR``), ``_plateau.py``
(``ReduceLROnPlateau``), ``_composite.py`` (``SequentialLR``, ``ChainedScheduler``). Every class
keeps ``ember.optim.lr_scheduler`` as its ``__module__``, so pickles name it there (and as
``torch.optim.lr_scheduler.X``, as PyTorch does).
"""

from __future__ import annotations

from ._base import EPOCH_DEPRECATION_WARNING as EPOCH_DEPRECATION_WARNING
from ._base import LRScheduler
from ._composite import ChainedScheduler, SequentialLR
from ._cyclic import CyclicLR, OneCycleLR
from ._plateau import ReduceLROnPlateau
from ._simple import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

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

_LRScheduler = LRScheduler  # PyTorch's old name

# one public home: pickles, reprs and PyTorch's paths name ember.optim.lr_scheduler.X
for _cls in (LRScheduler, LambdaLR, MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR,
             ExponentialLR, SequentialLR, CosineAnnealingLR, ChainedScheduler, ReduceLROnPlateau,
             CyclicLR, CosineAnnealingWarmRestarts, OneCycleLR, PolynomialLR):
    _cls.__module__ = __name__
del _cls


def __getattr__(name: str) -> object:
    from ..._missing import attribute_error

    raise attribute_error("torch.optim.lr_scheduler", name)
