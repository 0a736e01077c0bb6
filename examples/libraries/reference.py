"""Run one of these programs on the installed PyTorch (the reference side of scripts/libraries.sh).

    python examples/libraries/reference.py PROGRAM.py [ARGS...]

The same as `python PROGRAM.py`, except that a torchvision which fails to import (a build made
for another PyTorch release) is hidden (its import and its package metadata), so libraries that use torchvision only when it imports
(torchmetrics, Lightning) take their torchvision-less path instead of dying at import.
"""

import importlib.metadata
import runpy
import sys

try:
    import torchvision  # noqa: F401
except Exception as exc:  # noqa: BLE001 - any failure: a mismatched build raises RuntimeError
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    sys.modules["torchvision"] = None  # type: ignore[assignment]  # import raises ImportError
    _from_name = importlib.metadata.Distribution.from_name.__func__  # type: ignore[attr-defined]

    def _hidden(cls: type, name: str) -> importlib.metadata.Distribution:
        if name == "torchvision":
            raise importlib.metadata.PackageNotFoundError(name)
        return _from_name(cls, name)

    importlib.metadata.Distribution.from_name = classmethod(_hidden)  # type: ignore[assignment]
    print(f"(reference: torchvision hidden, it does not import here: {exc})", file=sys.stderr)

sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
