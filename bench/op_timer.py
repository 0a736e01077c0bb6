"""Time per op class in an ember run: ``python -m bench.op_timer SCRIPT STEPS [ARGS...]``.

Wraps the forward and backward of every ``Op`` subclass and every optimizer's ``_update`` with a
timer, runs the workload SCRIPT (a bench workload) under the ``torch`` -> ember alias for STEPS
steps without warm-up, and prints milliseconds per step for each. A profiling tool only: the
wrapping happens in this process, nothing in ember changes.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import os
import pkgutil
import runpy
import sys
import time
from typing import Any

TIMES: collections.defaultdict = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()


def _subclasses(cls: type) -> set:
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _subclasses(sub)
    return out


def _timed(fn: Any, key: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[key] += time.perf_counter() - t0
            CALLS[key] += 1

    return wrapper


def install() -> None:
    """Wrap every op's forward/backward and every optimizer's _update (imports them all first)."""
    import ember.nn.functional  # noqa: F401 - ops defined in lazily imported modules
    import ember.ops
    import ember.optim

    for pkg in (ember.ops, ember.optim):
        for m in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{pkg.__name__}.{m.name}")
    from ember.autograd.function import Op
    from ember.optim.optimizer import Optimizer

    for cls in _subclasses(Op):
        for name in ("forward", "backward"):
            if name in cls.__dict__:
                raw = cls.__dict__[name]
                fn = raw.__func__ if isinstance(raw, staticmethod) else raw
                setattr(cls, name, staticmethod(_timed(fn, f"{cls.__name__}.{name}")))
    for cls in _subclasses(Optimizer):
        if "_update" in cls.__dict__:
            cls._update = _timed(cls.__dict__["_update"], f"{cls.__name__}._update")


def report(steps: int, top: int = 20) -> str:
    lines = [f"ms per step over {steps} steps (nested ops are counted in their caller too):"]
    for key, t in sorted(TIMES.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"{1e3 * t / steps:9.3f}  {CALLS[key] / steps:6.1f} calls  {key}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print(__doc__)
        return 2
    script, steps, rest = argv[0], int(argv[1]), argv[2:]
    from ember import _alias

    _alias.install()
    install()
    atexit.register(lambda: print("\n" + report(steps)))
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    sys.argv = [script, "--steps", str(steps), "--warmup", "0", *rest]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
