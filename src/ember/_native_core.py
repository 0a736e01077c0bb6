"""Which core runs: the optional C extension ``ember._native``, or the pure-Python modules.

``ember._native`` is CPython C-API code that does the bookkeeping of a few hot Python functions
(the engine's walk, ...) and calls back into the Python modules for every rare branch; the Python
modules are the reference and the fallback, as ``pickle``/``_pickle`` in CPython (docs/design.md,
"The native core"). This module decides, once at import, which one runs:

- ``EMBER_PURE_PYTHON=1`` in the environment: the Python core (it selects an implementation,
  never a behaviour);
- the extension was not built (no C compiler or Python headers when ember was installed): the
  Python core;
- the extension is stale: the build recorded a hash of the C sources and of the Python modules
  they mirror; when either changed since (an editable install after a ``git pull``), the
  extension is not used and one warning says how to rebuild. A stale binary never shadows
  changed Python;
- otherwise the native core.

``native`` is the extension module or None; ``describe()`` says which core is active and why
(``ember --version``, ``python -m ember --version``). This file imports only the standard
library: ``setup.py`` loads it to compute the same hashes at build time.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

# The C sources of ember._native, relative to the package directory (src/ember/).
C_SOURCES = (
    "_native.h",
    "_native.c",
    "_native_tensor_base.c",
    "_native_overrides.c",
    "_native_random.c",
    "autograd/_native_engine.c",
    "autograd/_native_function.c",
    "_compile/_native_guards.c",
)
# The Python modules the C code mirrors (it calls back into them and follows their rules): a
# change to one of them makes a built extension stale until it is rebuilt.
MIRRORED = (
    "_native_core.py",
    "_overrides.py",
    "ops/_mt19937.py",
    "_tensor_base.py",
    "autograd/engine.py",
    "autograd/function.py",
    "_compile/guards.py",
)
BUILD_INFO = "_native_build.txt"  # written by setup.py beside the package: why it was not built

PACKAGE_DIR = Path(__file__).resolve().parent


def source_hash(files: tuple[str, ...], root: Path = PACKAGE_DIR) -> str | None:
    """sha256 over the files' relative names and bytes, in the given order; None when one of
    them is absent (an installed copy carries no C sources)."""
    h = hashlib.sha256()
    for name in files:
        try:
            data = (root / name).read_bytes()
        except OSError:
            return None
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def _load() -> tuple[Any, str]:
    """(the extension module or None, why this core)."""
    if os.environ.get("EMBER_PURE_PYTHON", "") not in ("", "0"):
        return None, "EMBER_PURE_PYTHON is set"
    try:
        import ember._native as mod  # the C extension (absolute: a .so, not a module of the tree)
    except ImportError as e:
        info = PACKAGE_DIR / BUILD_INFO
        if info.exists():
            text = info.read_text().strip()
            if text:
                return None, text
        if getattr(e, "name", None) == f"{__package__}._native":
            return None, "ember._native was not built (install from source with a C compiler)"
        return None, f"ember._native did not import ({e})"
    if getattr(mod, "__file__", None) is None or not hasattr(mod, "PY_HASH"):
        return None, "ember._native is not the extension (a folder of that name shadows it?)"
    stale = []
    if source_hash(MIRRORED) != mod.PY_HASH:
        stale.append("Python modules it mirrors (" + ", ".join(MIRRORED) + ")")
    c_now = source_hash(C_SOURCES)
    if c_now is not None and c_now != mod.C_HASH:  # C sources present: an editable install
        stale.append("C sources")
    if stale:
        why = (f"ember._native is stale: its {' and '.join(stale)} changed since it was built; "
               "rebuild it with `pip install -e .` (or `python setup.py build_ext --inplace`)")
        warnings.warn(f"{why}. Using the pure-Python core until then.", RuntimeWarning,
                      stacklevel=2)
        return None, why
    return mod, "ember._native " + mod.BUILT_WITH


# (setup.py loads this file alone, under another name, for the lists and source_hash: no loading)
native, reason = _load() if __name__ == "ember._native_core" else (None, "not loaded")


def describe() -> str:
    """One line: which core is active, and why."""
    return f"core: {'native' if native is not None else 'pure Python'} ({reason})"
