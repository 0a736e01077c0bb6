"""What happens when a PyTorch program reaches for an API that ember lacks.

Names that exist in PyTorch 2.13 (listed in ``_torch_api.txt``) raise ``NotImplementedYet``:
"ember does not implement torch.<name> yet", at the point of use. It is also an AttributeError,
so ``hasattr(torch, name)`` is simply False, as feature probes expect. Other names get Python's
usual AttributeError (a typo is a typo). ``ember run --report`` lists what a run reached for.
"""

from __future__ import annotations

import functools
from pathlib import Path

touched: dict[str, None] = {}  # ordered set of "torch.x.y" names a run asked for and ember lacks

# id -> ember's own ``__module__`` of each object that ``ember run`` gave PyTorch's ``__module__``
# (``ember._alias``); ember's pickler reads it (``serialization._common._module_of``)
ember_module: dict[int, str] = {}


class NotImplementedYet(NotImplementedError, AttributeError):
    """An API PyTorch has and ember does not implement yet."""


@functools.lru_cache(maxsize=1)
def _api() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    section = None
    for line in (Path(__file__).with_name("_torch_api.txt")).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section is not None:
            out[section] = frozenset(line.split())
    return out


def attribute_error(namespace: str, name: str, what: str = "module") -> AttributeError:
    """The error for ``namespace.name``: NotImplementedYet if PyTorch has it, else AttributeError."""
    if not name.startswith("_") and name in _api().get(namespace, ()):
        full = f"{namespace}.{name}"
        touched[full] = None
        return NotImplementedYet(f"ember does not implement {full} yet")
    if what == "module":
        return AttributeError(f"module '{namespace}' has no attribute '{name}'")
    return AttributeError(f"'{namespace.rsplit('.', 1)[-1]}' object has no attribute '{name}'")


def record(name: str) -> None:
    """Note that the run reached for ``name`` (e.g. ``"torch.fft"``), which ember lacks."""
    touched[name] = None


def report(ended_by: str | None = None) -> str:
    """The text ``ember run --report`` prints at exit.

    Args:
        ended_by: the exception that stopped the run early (``"Type: message"``), if any: the
            program's later code was never reached, so the report cannot speak for it.
    """
    if not touched:
        lines = ["ember run --report: the run used no PyTorch API that ember lacks."]
    else:
        lines = ["ember run --report: PyTorch APIs this run reached for that ember does not "
                 "implement yet:"]
        lines += [f"  {name}" for name in touched]
    if ended_by:
        lines.append(f"The run ended early ({ended_by}); code after that point was not checked.")
    return "\n".join(lines)
