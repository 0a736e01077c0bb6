"""Write ``src/ember/_torch_modules.txt``: for each public ember class and function that PyTorch
2.13 also has, the ``__module__`` PyTorch's object reports. ``ember run`` gives ember's objects
those names (``ember._alias``), as libraries that render names as text expect.

Run with the installed PyTorch: ``.venv/bin/python scripts/module_names.py``.
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import torch  # noqa: F401  (the reference)

import ember

NAMESPACES = [
    "", ".nn", ".nn.functional", ".nn.init", ".nn.utils", ".nn.utils.rnn", ".nn.parameter",
    ".nn.modules", ".optim", ".optim.lr_scheduler", ".optim.swa_utils", ".utils.data",
    ".utils.checkpoint", ".autograd", ".autograd.functional", ".linalg", ".special", ".fft",
    ".amp", ".cuda", ".random", ".func", ".testing", ".distributions", ".backends",
    ".distributions.constraints", ".distributions.transforms", ".nn.utils.parametrize",
    ".utils.data.sampler", ".autograd.function", ".autograd.grad_mode", ".serialization",
]

# private names that pickles carry, which libraries' unpicklers look for by PyTorch's name
# (skorch intercepts torch.storage._load_from_bytes; a tensor's pickle names torch._utils)
PRIVATE = [("ember.storage", "_load_from_bytes", "torch.storage")] + [
    ("ember._utils", n, "torch._utils") for n in (
        "_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter",
        "_rebuild_parameter_with_state")]

OUT = Path(__file__).resolve().parent.parent / "src" / "ember" / "_torch_modules.txt"


def _resolve(module: str, qualname: str) -> object:
    obj: object = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def main() -> None:
    seen: dict[int, tuple[str, str, str]] = {}
    for ns in NAMESPACES:
        try:
            e = importlib.import_module("ember" + ns)
            t = importlib.import_module("torch" + ns)
        except ImportError:
            continue
        for name in sorted(dir(e)):
            if name.startswith("_") or not hasattr(t, name):
                continue
            eo, to = getattr(e, name), getattr(t, name)
            if isinstance(eo, types.ModuleType) or not callable(eo):
                continue
            tmod, emod = getattr(to, "__module__", None), getattr(eo, "__module__", None)
            equal = getattr(eo, "__qualname__", None)
            if (not isinstance(tmod, str) or not (tmod == "torch" or tmod.startswith("torch."))
                    or tmod.startswith("torch._C") or getattr(to, "__name__", None) != name
                    or not isinstance(emod, str) or not emod.startswith("ember")
                    or emod.startswith("ember.vision") or not isinstance(equal, str)
                    or "<locals>" in equal or id(eo) in seen):
                continue
            if _resolve(emod, equal) is not eo:
                continue  # not found again under its own name: nothing to rename at run time
            seen[id(eo)] = (emod, equal, tmod)
    rows = sorted(set(seen.values()) | set(PRIVATE))
    lines = ["# ember module, qualname, PyTorch 2.13's __module__ for it (scripts/module_names.py)"]
    lines += [" ".join(r) for r in rows]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} names -> {OUT} (ember {ember.__version__})")


if __name__ == "__main__":
    main()
