"""``ember.nn.functional`` (``F``): every layer as a function.

The functions live with their ops (``ember/ops/activation.py``, ``ember/ops/nn.py``,
``ember/ops/conv.py``); this module is the PyTorch-shaped place users import them from.
"""

from ..ops.activation import *  # noqa: F403
from ..ops.conv import *  # noqa: F403
from ..ops.nn import *  # noqa: F403


def __getattr__(name: str) -> object:
    if name == "multi_head_attention_forward":  # lives with MultiheadAttention (import cycle)
        from .modules.transformer import multi_head_attention_forward

        return multi_head_attention_forward
    from .._missing import attribute_error

    raise attribute_error("torch.nn.functional", name)
