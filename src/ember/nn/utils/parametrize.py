"""``nn.utils.parametrize``: express a parameter as a function of other tensors.

``register_parametrization(module, "weight", P())`` moves the tensor to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``... when
``P.right_inverse`` returns several tensors) and makes ``module.weight`` a property that returns
``P(original)``, recomputed on each access (or once per ``with cached():`` block). Assigning
``module.weight = value`` stores ``P.right_inverse(value)``. The module's class becomes a
subclass named ``Parametrized<Class>``; state dict keys are PyTorch's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "ParametrizationList"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (then reuse it)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register(owner: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        owner.register_parameter(name, value)
    else:
        owner.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its ``original`` tensor(s)."""

    def __init__(self, modules: list, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        is_param = isinstance(original, Parameter)
        with no_grad():
            new = first.right_inverse(original) if hasattr(first, "right_inverse") else original
        if isinstance(new, Tensor):
            self.is_tensor = True
            self.ntensors = 1
            if new is original:
                _register(self, "original", original)
            else:
                if tuple(new.shape) == tuple(original.shape) and new.dtype == original.dtype:
                    with no_grad():
                        original.copy_(new)
                    _register(self, "original", original)
                else:
                    t = new.detach().clone()
                    _register(self, "original",
                              Parameter(t, original.requires_grad) if is_param else t)
        else:
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                t = t.detach().clone()
                _register(self, f"original{i}",
                          Parameter(t, original.requires_grad) if is_param else t)
        if not unsafe:
            with no_grad():
                z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z)}.")
            if tuple(z.shape) != tuple(original.shape) or z.dtype != original.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor (unparametrized {original.dtype}{list(original.shape)}, "
                    f"parametrized {z.dtype}{list(z.shape)}); pass unsafe=True to allow it")

    def _originals(self) -> tuple:
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def right_inverse(self, value: Tensor) -> None:
        """Store the originals that make the parametrized tensor equal ``value``."""
        with no_grad():
            for m in reversed(list(self)[1:]):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       "right_inverse.")
                value = m.right_inverse(value)
            first = self[0]
            new = first.right_inverse(value) if hasattr(first, "right_inverse") else value
            news = (new,) if self.is_tensor else tuple(new)
            for orig, n in zip(self._originals(), news):
                if tuple(orig.shape) != tuple(n.shape):
                    raise ValueError(f"right_inverse returned a tensor of shape "
                                     f"{list(n.shape)}; the original has {list(orig.shape)}")
                orig.copy_(n)

    def forward(self) -> Tensor:
        x = self[0](*self._originals())
        for m in list(self)[1:]:
            x = m(x)
        return x


def _property(name: str) -> property:
    def get(self: Module) -> Tensor:
        plist = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set_(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_)


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module: Module) -> type:
    """The module's class before ``register_parametrization`` replaced it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (see the module doc)."""
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            with no_grad():
                x = getattr(module, tensor_name)
                y = parametrization(x)
            if tuple(y.shape) != tuple(x.shape) or y.dtype != x.dtype:
                raise ValueError("Registering a parametrization may not change the shape or "
                                 "dtype of the tensor; pass unsafe=True to allow it")
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not is_parametrized(module):
        cls = type(module)
        new_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__module__": cls.__module__})
        module.__class__ = new_cls
        module.parametrizations = ModuleDict()
    delattr(module, tensor_name)
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo ``register_parametrization`` for ``tensor_name``: the tensor becomes the current
    parametrized value (``leave_parametrized``) or the original again."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
        if plist.is_tensor and tuple(plist.original.shape) == tuple(value.shape) and \
                plist.original.dtype == value.dtype:
            orig = plist.original
            with no_grad():
                orig.copy_(value)
        else:
            was_param = isinstance(plist._originals()[0], Parameter)
            orig = Parameter(value.detach().clone(), plist._originals()[0].requires_grad) \
                if was_param else value.detach().clone()
    else:
        if not plist.is_tensor:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        orig = plist.original
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, orig)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module
