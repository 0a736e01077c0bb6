"""``ember.nn.functional`` (``F``): every layer as a function.

The functions live with their ops, one room per family in ``src/ember/ops/nn/`` (activation,
convolution, pooling, loss, ...); this module is the PyTorch-shaped place users import them from.
"""

from ..ops.nn import *  # noqa: F403


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.nn.functional", name)
