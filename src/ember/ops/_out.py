"""``out=``: writing an op's result into a tensor the caller gave, with PyTorch's rules.

An op that takes ``out=`` computes its result as usual, then hands it here:
``return result if out is None else _out.write(out, result, "cumsum")``. The rules are PyTorch's:

- no autograd through ``out=``: if the result needs a gradient (an input requires grad while grad
  mode is on) or ``out`` itself requires grad, it is refused;
- ``out`` must be on the result's device, and the result's dtype must cast to ``out``'s without
  leaving its kind (a float result cannot go into an integer ``out``; an int into a float can);
- a shape mismatch resizes ``out`` (with PyTorch's deprecation warning when ``out`` was not empty);
- the values are copied in, so ``out`` may be a view: the write shows through its base.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd import grad_mode


def write(out: Any, result: Any, name: str) -> Any:
    """Copy ``result`` (a tensor, or a tuple of them for ``out=(a, b)``) into ``out``; return ``out``."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} tensors, "
                            f"not {type(out).__name__}")
        for o, r in zip(out, result):
            write(o, r, name)
        return type(result)(*out) if hasattr(type(result), "_fields") else tuple(out)
    if not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if grad_mode.state.enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad. Call it under torch.no_grad(), or drop out= "
            "and assign the result.")
    if out.device != result.device:
        raise RuntimeError(f"{name}(): expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead. Move out to {result.device}, or drop out=.")
    if not _dtype.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{name}(): result type {_dtype.legacy_name(result.dtype)} can't be cast "
                           f"to the desired output type {_dtype.legacy_name(out.dtype)}. Give an out "
                           f"tensor of dtype {result.dtype}, or drop out=.")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).", UserWarning, stacklevel=3)
        _resize(out, tuple(result.shape))
    with grad_mode.no_grad():
        out.copy_(result)
    return out


def _resize(out: Any, shape: tuple[int, ...]) -> None:
    """Give ``out`` contiguous memory of ``shape`` (PyTorch leaves new elements unset; ours are 0)."""
    data = out._data
    if math.prod(shape) == data.size and data.flags.c_contiguous:
        out._data = data.reshape(shape)
    else:
        out._data = _backend.xp_of(data).zeros(shape, dtype=data.dtype)
    out._bump_version()
