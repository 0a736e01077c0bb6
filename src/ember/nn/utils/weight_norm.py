"""``nn.utils.weight_norm`` / ``remove_weight_norm``: the hook-based weight normalization.

``weight = g * v / ||v||``, the norm taken over every dim except ``dim`` (over all of them when
``dim`` is None or -1). The module gets parameters ``<name>_g`` and ``<name>_v`` in place of
``<name>``, which a forward pre-hook recomputes before every call; state dict keys and shapes
are PyTorch's (``weight_g`` is (out, 1, ...) for dim=0).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..._tensor import Tensor
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim`` (keepdim); a 0-dim norm for dim=-1."""
    if dim == -1:
        return (v * v).sum().sqrt()
    axes = tuple(d for d in range(v.dim()) if d != dim)
    if not axes:
        return v.abs()
    return (v * v).sum(dim=axes, keepdim=True).sqrt()


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Any) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Any, name: str, dim: int | None) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                                   f"{name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if not isinstance(weight, Parameter):
            raise ValueError(f"weight_norm: {type(module).__name__}.{name} is not a Parameter "
                             f"(got {type(weight).__name__})")
        if dim < -1:
            fn.dim = dim % weight.dim()
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(_norm_except_dim(weight, fn.dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Any) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (deprecated in PyTorch in favour of
    ``nn.utils.parametrizations.weight_norm``; it warns likewise). Returns ``module``.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        dim: the dim whose slices keep their own norm; None (or -1): one norm for all.
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Any, name: str = "weight") -> Any:
    """Fold ``<name>_g`` and ``<name>_v`` back into a single parameter ``<name>``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
