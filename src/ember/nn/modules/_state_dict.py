"""``Module``'s state-dict half: ``state_dict`` and ``load_state_dict`` with their hooks and
per-module steps (``_save_to_state_dict``, ``_load_from_state_dict``), as a base class of
``Module``; and ``_IncompatibleKeys``, what ``load_state_dict`` returns."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..._tensor import Tensor
from ...autograd import grad_mode
from ..parameter import Parameter, is_lazy
from ._hooks import RemovableHandle

if TYPE_CHECKING:
    from .module import Module


class _IncompatibleKeys(namedtuple("_IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# -- helpers ------------------------------------------------------------------------------------
def _as_tensor(value: Any) -> Tensor | None:
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor from a checkpoint
        import numpy as np

        return Tensor._make(np.array(value.detach().cpu().numpy()))
    if hasattr(value, "__array__") and hasattr(value, "shape"):
        import numpy as np

        return Tensor._make(np.asarray(value))
    return None


class _WithoutModule:
    """A load_state_dict pre-hook registered without the module argument, called as one that
    takes it (a class, not a closure, so a module holding it pickles, as PyTorch's)."""

    __slots__ = ("hook",)

    def __init__(self, hook: Callable) -> None:
        self.hook = hook

    def __call__(self, module: Any, *args: Any) -> Any:
        return self.hook(*args)

    def __getstate__(self) -> Callable:
        return self.hook

    def __setstate__(self, hook: Callable) -> None:
        self.hook = hook


class _ModuleStateDict:
    """The state-dict methods of ``Module`` (its only other base class is ``object``)."""

    # -- state dict --------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        extra = prefix + "_extra_state"
        if type(self).get_extra_state is not _ModuleStateDict.get_extra_state:
            destination[extra] = self.get_extra_state()

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """An ordered dict ``name -> tensor`` of parameters and persistent buffers (detached)."""
        if args:  # deprecated positional form: (destination, prefix, keep_vars)
            if destination is None and len(args) >= 1:
                destination = args[0]
            if len(args) >= 2 and prefix == "":
                prefix = args[1]
            if len(args) >= 3 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def get_extra_state(self) -> Any:
        """Extra picklable state saved under ``_extra_state`` (override with set_extra_state)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called."
        )

    def _load_from_state_dict(
        self, state_dict: Mapping, prefix: str, local_metadata: dict, strict: bool,
        missing_keys: list, unexpected_keys: list, error_msgs: list,
    ) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = _as_tensor(state_dict[key])
            if value is None:
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(state_dict[key])}"
                )
                continue
            if is_lazy(param):  # a lazy placeholder the checkpoint does not shape: stays lazy
                continue
            if param.ndim == 0 and value.ndim == 1 and value.numel() == 1:
                value = value.reshape(())
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {param.shape}."
                )
                continue
            try:
                with grad_mode.no_grad():
                    if assign:
                        self._assign_loaded(name, param, value)
                    else:
                        if param.is_meta and not value.is_meta:
                            warnings.warn(
                                f"for {key}: copying from a non-meta parameter in the checkpoint "
                                "to a meta parameter in the current model, which is a no-op. "
                                "(Did you mean to pass `assign=True` to assign items in the state "
                                "dictionary to their corresponding key in the module instead of "
                                "copying them in place?)", UserWarning, stacklevel=2)
                        param.copy_(value)
            except Exception as ex:  # noqa: BLE001 - reported like PyTorch does
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{param.shape} and whose dimensions in the checkpoint are {value.shape}, an "
                    f"exception occurred : {ex.args}."
                )
        extra = prefix + "_extra_state"
        if type(self).set_extra_state is not _ModuleStateDict.set_extra_state:
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict.keys():
                if not key.startswith(prefix) or key == extra:
                    continue
                input_name = key[len(prefix):].split(".", 1)
                if input_name[0] not in self._modules and input_name[0] not in local:
                    unexpected_keys.append(key)
                elif input_name[0] in local and len(input_name) > 1:
                    unexpected_keys.append(key)

    def _assign_loaded(self, name: str, param: Tensor, value: Tensor) -> None:
        # the checkpoint's tensor as it is (its device and dtype: a model built on the meta
        # device gets real weights), keeping the parameter's requires_grad, as PyTorch does
        if name in self._parameters:
            new = Parameter(value.detach(), requires_grad=param.requires_grad)
            self._parameters[name] = new
        else:
            self._buffers[name] = value.detach()

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False) -> Any:
        """Copy tensors from ``state_dict`` into this module's parameters and buffers (in place).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict=True`` any mismatch raises
        PyTorch's ``RuntimeError`` listing them.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Module, local_state: Mapping, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata = dict(local_metadata, assign_to_params_buffers=True)
            module._load_from_state_dict(
                local_state, prefix, local_metadata, True, missing, unexpected, errors
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            result = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, result)
                if out is not None:
                    raise RuntimeError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be modified, "
                        "it should be done inplace."
                    )

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    type(self).__name__, "\n\t".join(errors))
            )
        return _IncompatibleKeys(missing, unexpected)

    # -- state-dict hooks --------------------------------------------------------------------
    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    register_state_dict_post_hook = _register_state_dict_hook

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` collects this module."""
        h = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        if with_module:
            self._load_state_dict_pre_hooks[h.id] = hook
        else:
            self._load_state_dict_pre_hooks[h.id] = _WithoutModule(hook)
        return h

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected,
        errors)`` runs before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict`` (may edit the keys)."""
        h = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h
