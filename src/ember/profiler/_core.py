"""The profiler's recorder: timed events for ember's ops and ``record_function`` blocks.

How ops are timed: every ember op, built-in or user-defined, runs through
``ember.autograd.Function.apply``. While a profiler is recording (and only then), ``start()``
replaces that classmethod with a wrapper that times the call and records one event, and
``stop()`` puts the original back, so code outside a profile pays nothing. The backward pass is
recorded as one event per ``backward()``/``autograd.grad`` call by wrapping
``ember.autograd.engine.run_backward`` in the same scoped way, and each graph node's backward rule
as one event by wrapping the ``backward`` staticmethod of every ``Function`` subclass that
exists when recording starts (restored on stop).

Times are host (CPU) wall-clock times from ``time.perf_counter_ns``. For CUDA tensors an op's
time is the time to launch its CuPy kernels, not the kernels' run time.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# A permanent hook would replace the scoped patch of Function.apply: with apply's current body
# moved to a classmethod ``_apply``, ``apply`` becomes
#     return cls._apply(*args) if not _profiler.active else \
#         _profiler.record_op(cls, Function._apply.__func__, args)
# (one more call on every op). The scoped patch costs nothing outside a profile, so it stays.

active = False  # True while a profiler records ops


class _Event:
    """One timed interval: an op call or a ``record_function`` block."""

    __slots__ = ("name", "start_ns", "end_ns", "thread", "parent", "children", "input_shapes",
                 "stack", "memory", "kind", "id")

    def __init__(self, name: str, start_ns: int, thread: int, parent: _Event | None,
                 kind: str) -> None:
        self.name = name
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.thread = thread
        self.parent = parent
        self.children: list[_Event] = []
        self.input_shapes: list = []
        self.stack: list[str] = []
        self.memory = 0
        self.kind = kind
        self.id = 0


class _Recorder:
    """Collects events for one profiler; one per ``profile`` object."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[_Event] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def _stack(self) -> list[_Event]:
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def push(self, name: str, kind: str, args: tuple = ()) -> _Event:
        st = self._stack()
        parent = st[-1] if st else None
        ev = _Event(name, 0, threading.get_ident(), parent, kind)
        if self.record_shapes and args:
            ev.input_shapes = [list(a.shape) if hasattr(a, "shape") and hasattr(a, "_data")
                               else [] for a in args]
        if self.with_stack:
            ev.stack = _user_stack()
        if parent is not None:
            parent.children.append(ev)
        with self._lock:
            ev.id = len(self.events)
            self.events.append(ev)
        st.append(ev)
        ev.start_ns = time.perf_counter_ns()
        return ev

    def pop(self, ev: _Event, result: Any = None, inputs: tuple = ()) -> None:
        ev.end_ns = time.perf_counter_ns()
        st = self._stack()
        if st and st[-1] is ev:
            st.pop()
        elif ev in st:  # a block exited out of order: close it anyway
            st.remove(ev)
        if self.profile_memory and result is not None:
            ev.memory = _nbytes(result, inputs)


def _nbytes(result: Any, inputs: tuple = ()) -> int:
    """Bytes of the new memory in an op's result (tensors) or a backward rule's (arrays, or
    tensors under ``create_graph``): views and the incoming gradients passed through count 0."""
    outs = result if isinstance(result, (tuple, list)) else (result,)
    seen = {id(_root(getattr(g, "_data", g))) for g in inputs}
    total = 0
    for o in outs:
        d = getattr(o, "_data", o)
        if d is None or not hasattr(d, "nbytes"):
            continue
        root = _root(d) if o is d else d  # (a tensor result's array is counted as it is)
        if id(root) not in seen:
            seen.add(id(root))
            total += int(getattr(root, "nbytes", d.nbytes))
    return total


def _root(a: Any) -> Any:
    """The array that owns ``a``'s memory (``a`` itself when it is not a view)."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def _user_stack() -> list[str]:
    """The caller's frames outside ember, innermost first: ``file(line): function``. Frames are
    ember's by their module's name (as autograd's anomaly mode tells them), so generated code that
    runs in an ember module's namespace (the NumPy-name twins) is skipped too."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name == "ember" or name.startswith("ember.")):
            out.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


_recorders: list[_Recorder] = []  # the recording profilers (innermost last)
_patched: dict[str, Any] = {}


def _op_name(cls: type) -> str:
    """``ember::matmul`` for built-in ops (their class name in snake case); a user
    Function's class name as is (PyTorch shows ``MyFn``)."""
    if getattr(cls, "_tensor_io", True):
        return cls.__name__
    base = cls.__name__.lstrip("_")
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower()
    return f"ember::{snake}"


def record_op(cls: type, apply: Callable, args: tuple) -> Any:
    """Run ``apply(cls, *args)`` and record it in every recording profiler."""
    events = [(r, r.push(_op_name(cls), "op", args)) for r in _recorders]
    result = None
    try:
        result = apply(cls, *args)
        return result
    finally:
        for r, ev in reversed(events):
            r.pop(ev, result)


def _install() -> None:
    """Wrap Function.apply and the backward engine (only while some profiler records)."""
    global active
    if _patched:
        return
    from ..autograd import engine
    from ..autograd.function import Function

    original_apply = Function.__dict__["apply"]
    raw_apply = original_apply.__func__

    def apply(cls: type, *args: Any) -> Any:
        return record_op(cls, raw_apply, args)

    original_backward = engine.run_backward

    def run_backward(*args: Any, **kwargs: Any) -> Any:
        events = [(r, r.push("ember::backward", "op")) for r in _recorders]
        try:
            return original_backward(*args, **kwargs)
        finally:
            for r, ev in reversed(events):
                r.pop(ev)

    _patched["apply"] = original_apply
    _patched["run_backward"] = original_backward
    _patched["backwards"] = _wrap_backwards(Function)
    Function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
    engine.run_backward = run_backward
    active = True


def _wrap_backwards(base: type) -> list[tuple[type, Any]]:
    """Time every backward rule (one event per graph node the engine runs, named as PyTorch
    names it: ``autograd::engine::evaluate_function: MulBackward0``). Returns what to restore."""
    saved = []
    stack = [base]
    seen: set[type] = set()
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
        original = cls.__dict__.get("backward")
        if not isinstance(original, staticmethod) or cls is base:
            continue
        saved.append((cls, original))
        cls.backward = staticmethod(_timed_backward(original.__func__))
    return saved


def _timed_backward(rule: Callable) -> Callable:
    def backward(ctx: Any, *grads: Any) -> Any:
        name = "autograd::engine::evaluate_function: " + type(ctx).__name__
        events = [(r, r.push(name, "op")) for r in _recorders]
        result = None
        try:
            result = rule(ctx, *grads)
            return result
        finally:  # (memory: the gradients it made, as PyTorch's rows of backward kernels)
            for r, ev in reversed(events):
                r.pop(ev, result, grads)

    backward.__wrapped__ = rule  # type: ignore[attr-defined]
    return backward


def _uninstall() -> None:
    global active
    if not _patched:
        return
    from ..autograd import engine
    from ..autograd.function import Function

    Function.apply = _patched.pop("apply")  # type: ignore[method-assign]
    engine.run_backward = _patched.pop("run_backward")
    for cls, original in reversed(_patched.pop("backwards")):
        cls.backward = original
    active = False


def start_recording(rec: _Recorder) -> None:
    _recorders.append(rec)
    _install()


def stop_recording(rec: _Recorder) -> None:
    if rec in _recorders:
        _recorders.remove(rec)
    if not _recorders:
        _uninstall()


def push_user(name: str) -> list[tuple[_Recorder, _Event]]:
    """Open a ``record_function`` block in every recording profiler."""
    return [(r, r.push(name, "user")) for r in _recorders]


def pop_user(events: list[tuple[_Recorder, _Event]]) -> None:
    for r, ev in reversed(events):
        r.pop(ev)
