"""``torch._dynamo._trace_wrapped_higher_order_op``: of PyTorch's module, the mode that libraries
build attention masks under (transformers' ``masking_utils``).

``TransformGetItemToIndex`` makes ``x[i]`` with tensor indices an advanced-indexing op (PyTorch's
``aten.index``) instead of turning a 0-d tensor index into a Python int, so that the call can be
traced and vmapped. ember's ``vmap`` runs the function on real tensors, where both forms give the
same values, so the mode lets every call through unchanged.
"""

from __future__ import annotations

from typing import Any

from ..overrides import TorchFunctionMode

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex(TorchFunctionMode):
    """Indexing with tensors inside mask functions: the same values as ``x[i]`` (see above)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))
