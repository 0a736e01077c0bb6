"""Compare what a corpus program printed under PyTorch and under ``ember run``.

Lines must match one for one. Within a line, the text between numbers must be identical and the
numbers equal within a relative tolerance. A line the program starts with ``~`` carries values
that depend on the random stream (PyTorch's and ember's differ): its numbers are masked and only
its text is compared.
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")


def split_line(line: str) -> tuple[list[str], list[str]]:
    """The text pieces and the number tokens of ``line``."""
    return NUMBER.split(line), NUMBER.findall(line)


def close(a: str, b: str, rtol: float, atol: float) -> bool:
    """Two number tokens are equal within ``rtol``/``atol`` (nan equals nan)."""
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=rtol, abs_tol=atol)


def differences(expected: str, actual: str, rtol: float = 1e-3, atol: float = 1e-5) -> list[str]:
    """Human-readable differences between two outputs; empty when they agree."""
    exp, act = expected.splitlines(), actual.splitlines()
    out = []
    if len(exp) != len(act):
        out.append(f"{len(exp)} lines under torch, {len(act)} under ember")
    for i, (e, a) in enumerate(zip(exp, act), 1):
        (et, en), (at, an) = split_line(e), split_line(a)
        if et != at:
            out.append(f"line {i}: text differs\n  torch: {e}\n  ember: {a}")
        elif not e.startswith("~") and not all(close(x, y, rtol, atol) for x, y in zip(en, an)):
            out.append(f"line {i}: numbers differ\n  torch: {e}\n  ember: {a}")
    return out
