"""``ember.special`` (``torch.special``): special functions, by their PyTorch names."""

from __future__ import annotations

from typing import Any

from .ops.elementwise import erf, erfc, erfinv, exp2, expm1, log1p, logit, sigmoid, sinc, xlogy
from .ops.reduction import log_softmax, logsumexp, softmax

__all__ = [
    "erf", "erfc", "erfinv", "expit", "logit", "sinc", "xlogy", "exp2", "expm1", "log1p",
    "log_softmax", "logsumexp", "softmax", "ndtr", "entr",
]

expit = sigmoid


def ndtr(x: Any) -> Any:
    """The standard normal CDF: (1 + erf(x / sqrt(2))) / 2."""
    return (erf(x * 0.7071067811865476) + 1) * 0.5


def entr(x: Any) -> Any:
    """-x log x (0 at x = 0, -inf for x < 0), elementwise."""
    from .ops.elementwise import where

    return where(x > 0, -xlogy(x, x), where(x == 0, 0.0, float("-inf")))


def __getattr__(name: str) -> object:
    from ._missing import attribute_error

    raise attribute_error("torch.special", name)
