"""``nn.utils.stateless.functional_call``: the deprecated home of ``torch.func.functional_call``."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["functional_call"]


def _reparametrize_module(module: Any, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False, stack_weights: bool = False) -> Any:
    """A context in which ``module``'s named tensors are the given ones (PyTorch's private
    helper, which libraries such as zuko call); the one ``torch.func.functional_call`` uses."""
    from ...func import _reparametrize_module as reparametrize

    return reparametrize(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict,
                         stack_weights=stack_weights)


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
