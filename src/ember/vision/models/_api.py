"""Weights enums and the model registry: ``Weights``, ``WeightsEnum``, ``get_model``,
``get_model_builder``, ``get_model_weights``, ``get_weight``, ``list_models``.

Each builder (``resnet18`` ...) registers itself under its name with ``register_model``; its
``weights`` parameter's annotation names its weights enum, which is how ``get_model_weights``
finds the enum (as in torchvision).
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from types import ModuleType
from typing import Any

from ... import hub

__all__ = ["WeightsEnum", "Weights", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models", "register_model"]


@dataclass
class Weights:
    """What a set of pretrained weights is: where it is (``url``), the preprocessing it expects
    (``transforms``, a constructor called on use) and its ``meta`` data (categories,
    num_params, metrics...)."""

    url: str
    transforms: Callable
    meta: dict[str, Any]

    def __eq__(self, other: Any) -> bool:
        # deepcopy/pickle of an enum member compares values with ==, and a copied
        # functools.partial never equals the original: compare what the partial holds.
        if not isinstance(other, Weights):
            return NotImplemented
        if self.url != other.url or self.meta != other.meta:
            return False
        a, b = self.transforms, other.transforms
        if isinstance(a, partial) and isinstance(b, partial):
            return a.func == b.func and a.args == b.args and a.keywords == b.keywords
        return a == b


class WeightsEnum(Enum):
    """Base of every model's weights enum; members are ``Weights`` (``.url``, ``.meta``,
    ``.transforms()``, ``.get_state_dict()``)."""

    @classmethod
    def verify(cls, obj: Any) -> Any:
        """``obj`` as a member of this enum: a member, its name (``"IMAGENET1K_V1"`` or
        ``"ResNet18_Weights.IMAGENET1K_V1"``) or None."""
        if obj is None:
            return None
        if type(obj) is str:
            name = obj.replace(cls.__name__ + ".", "")
            try:
                return cls[name]
            except KeyError:
                raise ValueError(f"{obj!r} is not a member of {cls.__name__}; choose one of "
                                 f"{', '.join(cls.__members__)}") from None
        if not isinstance(obj, cls):
            raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but "
                            f"received {obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The weights' state_dict: from the hub cache (``ember.hub.get_dir()/checkpoints``)
        when the file is there, else downloaded once into it (``ember.hub.load_state_dict_from_url``
        arguments: ``progress``, ``check_hash``...)."""
        return hub.load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> dict[str, Any]:
        return self.value.meta


BUILTIN_MODELS: dict[str, Callable[..., Any]] = {}


def register_model(name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a model builder under ``name`` (default: the function's name)."""
    def wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn
    return wrapper


def list_models(module: ModuleType | None = None, include: Iterable[str] | str | None = None,
                exclude: Iterable[str] | str | None = None) -> list[str]:
    """Sorted names of the registered models, optionally only those of ``module`` and filtered
    by ``fnmatch`` patterns (``include`` first, then ``exclude``)."""
    names = {k for k, v in BUILTIN_MODELS.items()
             if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        patterns = [include] if isinstance(include, str) else list(include)
        names = {n for p in patterns for n in fnmatch.filter(names, p)}
    if exclude:
        patterns = [exclude] if isinstance(exclude, str) else list(exclude)
        for p in patterns:
            names -= set(fnmatch.filter(names, p))
    return sorted(names)


def get_model_builder(name: str) -> Callable[..., Any]:
    """The builder registered under ``name`` (case-insensitive)."""
    try:
        return BUILTIN_MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown model {name}; list_models() names the available ones "
                         f"({', '.join(sorted(BUILTIN_MODELS))})") from None


def get_model(name: str, **config: Any) -> Any:
    """Build the model registered under ``name`` with ``config`` (e.g. ``weights=``,
    ``num_classes=``)."""
    return get_model_builder(name)(**config)


def get_model_weights(name: Callable | str) -> type[WeightsEnum]:
    """The weights enum class of a model builder (or of the model registered under ``name``)."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    return _get_enum_from_fn(fn)


def _get_enum_from_fn(fn: Callable) -> type[WeightsEnum]:
    sig = inspect.signature(fn, eval_str=True)  # builders' annotations are strings (PEP 563)
    if "weights" not in sig.parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    ann = sig.parameters["weights"].annotation
    candidates = [ann, *typing.get_args(ann)]
    for t in candidates:
        if isinstance(t, type) and issubclass(t, WeightsEnum):
            return t
    raise ValueError("The WeightsEnum class for the specific method couldn't be retrieved. "
                     "Make sure the typing info is correct.")


def get_weight(name: str) -> WeightsEnum:
    """The weights enum member named ``"EnumName.MEMBER"``, e.g. ``"ResNet50_Weights.IMAGENET1K_V1"``."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'. Write it as "
                         "'<EnumName>.<MEMBER>', e.g. 'ResNet50_Weights.IMAGENET1K_V1'.") from None
    base = importlib.import_module(__name__.rsplit(".", 1)[0])
    modules = [base] + [m for _, m in inspect.getmembers(base, inspect.ismodule)
                        if (getattr(m, "__file__", "") or "").endswith("__init__.py")]
    for m in modules:
        cls = m.__dict__.get(enum_name)
        if isinstance(cls, type) and issubclass(cls, WeightsEnum):
            try:
                return cls[value_name]
            except KeyError:
                raise ValueError(f"{enum_name} has no member {value_name!r}; choose one of "
                                 f"{', '.join(cls.__members__)}") from None
    raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")

