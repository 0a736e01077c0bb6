"""The import hook behind ``ember run``: ``import torch`` (and ``torch.nn``, ``torch.utils.data``...)
resolves to ember's module of the same path, and ``import torchvision[.x]`` to ``ember.vision[.x]``.
Nothing is installed into, or patched in, a real torch or torchvision."""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

from . import _metadata

# each aliased top-level package and the ember package that stands in for it
_ALIASES = {"torch": "ember", "torchvision": "ember.vision"}


def _aliased(fullname: str) -> str | None:
    """The ember module that ``fullname`` (torch..., torchvision...) loads, or None."""
    top = fullname.split(".", 1)[0]
    if top not in _ALIASES:
        return None
    return _ALIASES[top] + fullname[len(top):]


class _AliasSpec(importlib.machinery.ModuleSpec):
    """The spec of ``torch.x``: while importlib initialises the module it stands on it, so its
    ``parent`` is the ember module's (a relative import inside ember, run by a module
    ``__getattr__`` that importlib probes then, compares ``__package__`` with it)."""

    @property
    def parent(self) -> str:
        own = self.loader_state
        return own.parent if own is not None else super().parent


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch[.x.y]`` (``torchvision[.x]``) and loads ``ember[.x.y]`` (``ember.vision[.x]``)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if _aliased(fullname) is not None:
            return _AliasSpec(fullname, self, is_package=True)
        if fullname in _watched:  # an ember module whose names get PyTorch's once it has run
            spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _RenamingLoader(spec.loader)
            return spec
        return None

    def create_module(self, spec: Any) -> ModuleType:
        module = self._load(spec)
        # importlib now stamps the torch spec on ember's module; keep ember's own, restored in
        # exec_module: a relative import inside ember reads __package__ ("ember.nn") against
        # __spec__.parent, and a mismatch is an ImportWarning (an error under -W error)
        spec.loader_state = getattr(module, "__spec__", None)
        return module

    def _load(self, spec: Any) -> ModuleType:
        real = _aliased(spec.name)
        assert real is not None
        if real == "ember.cuda.amp":  # ember.cuda is a module; its amp lives in ember.amp
            from .amp import cuda_amp

            return cuda_amp
        if real == "ember.cpu.amp":  # so does ember.cpu's
            from .amp import cpu_amp

            return cpu_amp
        try:
            return importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name and (e.name == real or real.startswith(e.name + ".")):
                from ._missing import record

                record(spec.name)
                raise ModuleNotFoundError(
                    f"ember does not implement {spec.name} yet (looked for {real})", name=spec.name
                ) from None
            raise

    def exec_module(self, module: ModuleType) -> None:
        # the ember module is already initialised: put its own spec back (see create_module)
        own = module.__spec__.loader_state if module.__spec__ is not None else None
        if own is not None:
            module.__spec__ = own
        if module.__spec__ is not None and module.__spec__.name == "ember":
            module.__name__ = "torch"  # as PyTorch's (a library asserts it); undone by uninstall


# --- names as PyTorch prints them ----------------------------------------------------------------
#
# Under `ember run`, ember's public classes and functions report the __module__ PyTorch's own
# object reports (torch.optim.SGD.__module__ == "torch.optim.sgd", torch.Tensor prints as
# <class 'torch.Tensor'>): libraries render names as text and key on them. The list is data
# (_torch_modules.txt, written from PyTorch by scripts/module_names.py). Each ember module's names
# are renamed once it is loaded; uninstall() puts ember's names back. Every such torch.* path
# resolves to the same ember object under the alias, so pickling by name still round-trips; ember's
# own pickler reads the original names from _missing.ember_module.

# ember module -> [(qualname, torch module)] not yet renamed (modules not loaded yet)
_pending: dict[str, list[tuple[str, str]]] = {}
# those modules and the packages above them (whose code may still set names in them)
_watched: set[str] = set()
# (object, ember's __module__) for every renamed object, for uninstall
_renamed: list[tuple[Any, str]] = []


def _settled(mod: str, just_run: str | None) -> bool:
    """Whether ``mod`` and every package above it have finished running (importlib marks a
    module as initialising until its loader returns; ``just_run``'s code has just finished)."""
    name = mod
    while name:
        m = sys.modules.get(name)
        if m is None or (name != just_run
                         and getattr(getattr(m, "__spec__", None), "_initializing", False)):
            return False
        name = name.rpartition(".")[0]
    return True


def _read_names() -> dict[str, list[tuple[str, str]]]:
    from pathlib import Path

    out: dict[str, list[tuple[str, str]]] = {}
    for line in Path(__file__).with_name("_torch_modules.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            mod, qual, torch_mod = line.split()
            out.setdefault(mod, []).append((qual, torch_mod))
    return out


def _rename_loaded(just_run: str | None = None) -> None:
    """Give PyTorch's ``__module__`` to the listed objects of every ember module now loaded
    whose package has finished running (``_settled``; until then it may still add names); with
    ``just_run``, of that module and those below it, which waited for it."""
    from ._missing import ember_module

    below = None if just_run is None else just_run + "."
    for mod in [m for m in _pending if m in sys.modules
                and (just_run is None or m == just_run or m.startswith(below))]:
        if not _settled(mod, just_run):
            continue
        module = sys.modules[mod]
        for qual, torch_mod in _pending.pop(mod):
            obj: Any = module
            for part in qual.split("."):
                obj = getattr(obj, part, None)
            if getattr(obj, "__module__", None) != mod:
                continue
            try:
                obj.__module__ = torch_mod
            except (AttributeError, TypeError):
                continue
            ember_module[id(obj)] = mod
            _renamed.append((obj, mod))
            if torch_mod not in sys.modules and torch_mod not in _SPECIAL:
                # what `import torch_mod` gives under the alias, so that tools that look the
                # name up (inspect.getmodule, typing.get_type_hints) find the module
                home = sys.modules.get(_aliased(torch_mod) or "")
                if home is not None:
                    sys.modules[torch_mod] = home


def _rename() -> None:
    if not _renamed and not _pending:
        _pending.update(_read_names())
        for mod in _pending:
            while mod and mod not in _watched:
                _watched.add(mod)
                mod = mod.rpartition(".")[0]
    _rename_loaded()


def _restore_names() -> None:
    from ._missing import ember_module

    while _renamed:
        obj, mod = _renamed.pop()
        obj.__module__ = mod
        ember_module.pop(id(obj), None)
    _pending.clear()
    _watched.clear()


class _RenamingLoader(importlib.abc.Loader):
    """Runs an ember module with its own loader, then renames its listed names (and puts its
    own loader back on the module, so nothing of this wrapper stays behind)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        _rename_loaded(module.__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_hook = TorchAlias()
_SPECIAL = frozenset({"torch", "torch.cuda.amp", "torch.cpu.amp"})  # loaded by the hook itself


def install() -> None:
    """Make ``import torch`` load ember for the rest of this process."""
    if _hook not in sys.meta_path:
        for name in [m for m in sys.modules if _aliased(m) is not None]:
            del sys.modules[name]
        sys.meta_path.insert(0, _hook)
        _rename()
    _metadata.install()  # importlib.metadata.version("torch") answers the mirrored release
    from . import storage

    storage._pickle_as_pytorch(True)  # plain tensors pickle as PyTorch's (torch.* names resolve)


def uninstall() -> None:
    """Undo :func:`install` and :func:`install_for_children`."""
    _uninstall_for_children()
    if _hook in sys.meta_path:
        sys.meta_path.remove(_hook)
    _metadata.uninstall()
    storage = sys.modules.get("ember.storage")
    if storage is not None:
        storage._pickle_as_pytorch(False)
    ember = sys.modules.get("ember")
    if ember is not None:
        ember.__name__ = "ember"
    _restore_names()
    for name in [m for m in sys.modules if _aliased(m) is not None]:
        if getattr(sys.modules[name], "__name__", "").startswith("ember"):
            del sys.modules[name]


# --- children started by multiprocessing (spawn and forkserver) --------------------------------
#
# A spawned child is a fresh interpreter: it unpickles the parent's "preparation data", then
# re-imports the parent's main script (as __mp_main__) so that classes defined there can be
# unpickled. That re-import runs the script's `import torch`, so the alias must be in place first.
# We add one entry to the preparation data whose unpickling installs the alias; unpickling
# happens before multiprocessing prepares the child, so the script, and every object sent to the
# child after it, sees ember. Forkserver children are prepared the same way. Plain subprocesses
# (`subprocess.run([sys.executable, ...])`) are left alone: they run whatever Python they name.

_PREP_KEY = "ember_run_torch_alias"


def _install_in_child() -> None:
    """Called by unpickling in a multiprocessing child: install the alias (for its children too)."""
    install()
    install_for_children()


class _AliasInChild:
    """Pickles as a call to :func:`_install_in_child`; it carries no data."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_install_in_child, ())


def install_for_children() -> None:
    """Make processes started by ``multiprocessing`` (spawn, forkserver) install the alias too.

    Forked children inherit it without help.
    """
    import multiprocessing.spawn as spawn

    if getattr(spawn.get_preparation_data, "_ember_original", None) is not None:
        return
    original = spawn.get_preparation_data

    @functools.wraps(original)
    def get_preparation_data(name: str) -> dict[str, Any]:
        data: dict[str, Any] = {_PREP_KEY: _AliasInChild()}  # first: unpickled before the rest
        data.update(original(name))
        return data

    get_preparation_data._ember_original = original  # type: ignore[attr-defined]
    spawn.get_preparation_data = get_preparation_data


def _uninstall_for_children() -> None:
    spawn = sys.modules.get("multiprocessing.spawn")
    original = getattr(getattr(spawn, "get_preparation_data", None), "_ember_original", None)
    if original is not None:
        spawn.get_preparation_data = original  # type: ignore[union-attr]
