"""``torch._dynamo.exc``: the errors ``torch.compile`` raises."""

from __future__ import annotations

__all__ = ["TorchDynamoException", "Unsupported", "RecompileError"]


class TorchDynamoException(RuntimeError):
    """Base class of compile's errors."""


class Unsupported(TorchDynamoException):
    """A region cannot be captured whole (a graph break) and ``fullgraph=True`` was asked."""


class RecompileError(TorchDynamoException):
    """A recompile happened while ``config.error_on_recompile`` is set."""
