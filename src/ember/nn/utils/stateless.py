"""``nn.utils.stateless.functional_call``: the deprecated home of ``torch.func.functional_call``."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: Any, args: Any = None,
                    kwargs: Any = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced by ``parameters_and_buffers``
    (deprecated in PyTorch in favour of ``torch.func.functional_call``; it warns likewise)."""
    from ...func import functional_call as fc

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return fc(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
              strict=strict)
