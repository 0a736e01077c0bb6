"""The autocast hook the ops call: ``if flag.active: args = cast(op_name, *args)``.

The hook lives here, in the ops layer, and ``ember.amp`` (a library above) fills it in when it
loads: it sets ``flag.active`` while autocast is on in some thread, and replaces ``cast`` with
its policy (``ember.amp.autocast_mode.cast``). Until then nothing is cast, and an op outside
autocast pays one attribute read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cast", "flag"]


def cast(op: str, *args: Any) -> tuple:
    """``args`` as autocast wants them for ``op`` (unchanged until ember.amp installs its policy)."""
    return _policy(op, *args)


def install(policy: Any) -> None:
    """Called by ember.amp when it loads: ``policy(op, *args) -> args``."""
    global _policy
    _policy = policy


class _Flag:
    """``flag.active``: True while autocast is on in any thread (a plain attribute: cheaper to
    read than a thread-local one); ``threads`` counts those threads."""

    __slots__ = ("active", "threads")

    def __init__(self) -> None:
        self.active = False
        self.threads = 0


def _no_policy(op: str, *args: Any) -> tuple:
    return args


flag = _Flag()


_policy = _no_policy
