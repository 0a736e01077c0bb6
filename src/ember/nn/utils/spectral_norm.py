"""``nn.utils.spectral_norm`` / ``remove_spectral_norm``: the hook-based spectral normalization.

``weight = weight_orig / sigma`` where ``sigma`` estimates the largest singular value of the
weight viewed as a matrix (``dim`` first, the rest flattened) by power iteration: in training
each forward runs ``n_power_iterations`` steps ``v = normalize(W^T u)``, ``u = normalize(W v)``
(no gradient through them, updating the buffers ``<name>_u`` and ``<name>_v`` in place), then
``sigma = u . W v``. In eval mode the stored ``u`` and ``v`` are used as they are. Parameter
``<name>_orig`` and buffers ``<name>_u``, ``<name>_v`` are PyTorch's state dict keys.
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import creation as _creation
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / (x * x).sum().sqrt().clamp(min=eps)


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` as ``<name>_orig / sigma``."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as an (size(dim), rest) matrix."""
        if self.dim != 0:
            rest = [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(self.dim, *rest)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Any, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(m.t() @ u, self.eps))
                    u.copy_(_normalize(m @ v, self.eps))
            u = u.clone()
            v = v.clone()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def remove(self, module: Any) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Any, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _normalize(_creation.empty(h, dtype=weight.dtype, device=weight.device)
                           .normal_(0, 1), fn.eps)
            v = _normalize(_creation.empty(w, dtype=weight.dtype, device=weight.device)
                           .normal_(0, 1), fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Any, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Any:
    """Divide ``module.<name>`` by its spectral norm before every forward. Returns ``module``.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        n_power_iterations: power-iteration steps per training forward.
        eps: floor of the norms when normalizing u and v.
        dim: the output dim; default 0, or 1 for ConvTranspose layers.
    """
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d
        transposed = [ConvTranspose1d, ConvTranspose2d]
        try:
            from ..modules.conv import ConvTranspose3d
            transposed.append(ConvTranspose3d)
        except ImportError:
            pass
        dim = 1 if isinstance(module, tuple(transposed)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Any, name: str = "weight") -> Any:
    """Make ``module.<name>`` a plain parameter again (the current normalized value)."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
