"""The import hook behind ``ember run``: ``import torch`` (and ``torch.nn``, ``torch.utils.data``...)
resolves to ember's module of the same path. Nothing is installed into, or patched in, a real torch."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

_PREFIX = "torch"


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch[.x.y]`` and loads ``ember[.x.y]`` in its place."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname == _PREFIX or fullname.startswith(_PREFIX + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> ModuleType:
        real = "ember" + spec.name[len(_PREFIX):]
        if real == "ember.cuda.amp":  # ember.cuda is a module; its amp lives in ember.amp
            from .amp import cuda_amp

            return cuda_amp
        try:
            return importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name and (e.name == real or real.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"ember does not implement {spec.name} yet (looked for {real})", name=spec.name
                ) from None
            raise

    def exec_module(self, module: ModuleType) -> None:
        pass  # the ember module is already initialised


_hook = TorchAlias()


def install() -> None:
    """Make ``import torch`` load ember for the rest of this process."""
    if _hook not in sys.meta_path:
        for name in [m for m in sys.modules if m == _PREFIX or m.startswith(_PREFIX + ".")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _hook)


def uninstall() -> None:
    if _hook in sys.meta_path:
        sys.meta_path.remove(_hook)
    for name in [m for m in sys.modules if m == _PREFIX or m.startswith(_PREFIX + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith("ember"):
            del sys.modules[name]
