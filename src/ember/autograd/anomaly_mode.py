"""Anomaly detection: a NaN produced in backward raises, naming the forward op and where the
user's code created it. Recording a stack trace per op is slow, so it is off by default."""

from __future__ import annotations

import functools
from typing import Any

from . import function as _function


def _has_nan(g: Any) -> bool:
    arr = getattr(g, "_data", g)
    kind = getattr(getattr(arr, "dtype", None), "kind", "")
    return kind == "f" and bool((arr != arr).any())


def check_grads(node: Any, grads: tuple) -> None:
    """Called by the engine after each backward while anomaly mode is on."""
    for i, g in enumerate(grads):
        if g is not None and _has_nan(g):
            where = ""
            if node._trace:
                where = "\nThe forward call that created it:\n" + "".join(node._trace[-6:])
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {i}th output.{where}\n"
                "Look for log/sqrt/div of zero or negative values, or overflowing exp, in that line."
            )


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._prev = _function.anomaly_enabled
        _function.anomaly_enabled = self.check_nan

    def __exit__(self, *exc: Any) -> None:
        _function.anomaly_enabled = self._prev

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)

        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off (also usable as a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = _function.anomaly_enabled
        _function.anomaly_enabled = bool(mode) and check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _function.anomaly_enabled = self._prev


def is_anomaly_enabled() -> bool:
    return _function.anomaly_enabled
