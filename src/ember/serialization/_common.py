"""What saving and loading share: PyTorch's names for ember's objects in both directions
(``_torch_global``: the ``torch.*`` name a pickle writes for an ember class or function;
``_ember_object``: the ember object a ``torch.*`` name in a checkpoint means), the legacy
storage type names, and the refusal helpers."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .. import _backend
from .._missing import ember_module
from .._pickle_reader import (
    Callable_,
    Marker,
    UnsafeCheckpointError,
)
from .._tensor import Tensor

# ember dtype name <-> PyTorch's legacy typed-storage class name (what data.pkl names)
_STORAGE_OF = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
}

_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF.items()}

_TORCH_DTYPE_NAMES = (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool", "float", "double", "half", "long", "int", "short", "uint16", "uint32", "uint64",
)


def _location(arr: Any) -> str:
    dev = _backend.device_of(arr)
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"


def _as_strided(arr: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    if isinstance(arr, np.ndarray):
        return np.lib.stride_tricks.as_strided(arr, shape, strides, subok=True)
    return _backend.xp_of(arr).lib.stride_tricks.as_strided(arr, shape, strides)


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return out[::-1]


def _is_parameter(t: Tensor) -> bool:
    from ..nn.parameter import Parameter

    return isinstance(t, Parameter)


# -- PyTorch's names for ember's objects (what ember's pickles write) -------------------------
def _module_of(obj: Any) -> Any:
    """``obj.__module__`` as ember defines it (also under ``ember run``, which gives ember's
    public objects PyTorch's ``__module__``: ``_alias``)."""
    return ember_module.get(id(obj)) or getattr(obj, "__module__", None)


# ember classes whose PyTorch home differs from ``'torch' + cls.__module__[5:]``
_TORCH_HOME = {
    "ember.nn.modules.transformer.MultiheadAttention":
        "torch.nn.modules.activation.MultiheadAttention",
    "ember.nn.modules.transformer.NonDynamicallyQuantizableLinear":
        "torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
    "ember.nn.modules.upsampling.PixelShuffle": "torch.nn.modules.pixelshuffle.PixelShuffle",
    "ember.nn.modules.upsampling.PixelUnshuffle": "torch.nn.modules.pixelshuffle.PixelUnshuffle",
    "ember.nn.utils.rnn_packing.PackedSequence": "torch.nn.utils.rnn.PackedSequence",
    "ember.utils.data.sampler.DistributedSampler":
        "torch.utils.data.distributed.DistributedSampler",
    # a class in a private module that PyTorch's pickles name by that same module path
    "ember.utils.data.datapipes._decorator.functional_datapipe":
        "torch.utils.data.datapipes._decorator.functional_datapipe",
}

# ember classes pickled under their own names: PyTorch's class of that name is implemented in C
# with an incompatible state (a torch.Generator given ember's state crashes the interpreter),
# so real torch.load must fail cleanly on them instead
_EMBER_ONLY = frozenset({"ember.ops.random.Generator"})

# public namespaces, in the order an object's PyTorch name is looked for
_HOMES = ("ember.nn.functional", "ember", "ember.nn", "ember.nn.init", "ember.nn.utils.rnn",
          "ember.nn.utils", "ember.optim.lr_scheduler", "ember.optim", "ember.utils.data",
          "ember.autograd", "ember.linalg", "ember.special", "ember.fft")

_alias_index: dict[int, tuple[str, str]] = {}


def _homes() -> list[tuple[str, Any]]:
    import importlib

    out = []
    for ns in _HOMES:
        try:
            out.append((ns, importlib.import_module(ns)))
        except ImportError:
            continue
    return out


def _public_name(obj: Any, name: str) -> tuple[str, str] | None:
    """``('torch.<ns>', name)`` for the first public namespace holding ``obj`` as ``name``,
    else under any name (an alias such as ``absolute`` for ``abs``)."""
    homes = _homes()
    if isinstance(obj, type):  # classes: the top-level namespaces first (torch.finfo)
        homes = homes[1:3] + homes[:1] + homes[3:]
    for ns, home in homes:
        exported = getattr(home, "__all__", None)
        if getattr(home, name, None) is obj and (exported is None or name in exported):
            return "torch" + ns[5:], name
    if not _alias_index:
        for ns, home in reversed(_homes()):
            exported = getattr(home, "__all__", None)
            for k, v in vars(home).items():
                if (not k.startswith("_") and callable(v)
                        and (exported is None or k in exported)):
                    _alias_index[id(v)] = ("torch" + ns[5:], k)
    hit = _alias_index.get(id(obj))
    if hit is None and not isinstance(obj, type):
        # an internal function with a public twin (ember.ops.nn.activation.relu, which a
        # TransformerEncoderLayer stores): PyTorch's public function of that name
        for ns, home in homes:
            if callable(getattr(home, name, None)):
                return "torch" + ns[5:], name
    return hit


def _torch_global(obj: Any) -> tuple[str, str] | None:
    """PyTorch's ``(module, name)`` for an ember class or function, or None if not ember's.

    Classes are named by PyTorch's module path (``torch.nn.modules.linear.Linear``), so real
    ``torch.load`` finds them; functions by the public namespace that has them
    (``torch.nn.functional.relu``).
    """
    mod = _module_of(obj)
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        return None
    if mod != "ember" and not mod.startswith("ember.") or f"{mod}.{qual}" in _EMBER_ONLY:
        return None
    if mod == "ember.vision" or mod.startswith("ember.vision."):  # torchvision's, not torch's
        return "torchvision" + mod[len("ember.vision"):], qual
    full = _TORCH_HOME.get(f"{mod}.{qual}")
    if full is not None:
        m, _, n = full.rpartition(".")
        return m, n
    private = any(p.startswith("_") for p in mod.split(".")) or "<locals>" in qual
    if private or not isinstance(obj, type):
        hit = _public_name(obj, getattr(obj, "__name__", qual))
        if hit is not None:
            return hit
    return "torch" + mod[5:], qual


def _refuse(msg: str) -> UnsafeCheckpointError:
    return UnsafeCheckpointError(msg)


def _is_int(x: Any) -> bool:
    return type(x) is int


# -- the ember object a torch.* name in a checkpoint means ------------------------------------
_MISSING = object()


def _ember_object(module: str, name: str, import_modules: bool = True) -> Any:
    """The ember object at PyTorch's path ``module.name`` (``torch.nn.modules.linear``,
    ``Linear``), or ``_MISSING``. Without ``import_modules`` only modules already imported
    are consulted (a weights-only load imports nothing a file names)."""
    import importlib

    full = f"{module}.{name}"
    for emb, tor in _TORCH_HOME.items():
        if tor == full:
            module, name = emb.rsplit(".", 1)
            module = "torch" + module[5:]
            break
    if module == "torchvision" or module.startswith("torchvision."):
        real = "ember.vision" + module[len("torchvision"):]
    else:
        real = "ember" + module[5:]
    m = sys.modules.get(real)
    if m is None and import_modules:
        try:
            m = importlib.import_module(real)
        except ImportError:
            return _MISSING
    if m is None:
        return _MISSING
    obj: Any = m
    for part in name.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _short(x: Any) -> str:
    r = repr(x) if type(x) in (str, int, bytes, bool, type(None)) else f"<{type(x).__name__}>"
    if isinstance(x, (Marker, Callable_)):
        r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."
