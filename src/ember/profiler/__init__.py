"""``ember.profiler``: time ember's ops, as ``torch.profiler`` times PyTorch's.

::

    from torch.profiler import profile, record_function, ProfilerActivity

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

Every call of an ember op is one event, named after the op: ``ember::matmul``, ``ember::add``,
``ember::scaled_dot_product_attention`` (built-in ops, from their class in ``ember/ops``), or the
class name of a user's ``autograd.Function``; each ``backward()``/``autograd.grad`` call is one
``ember::backward`` event, holding one ``autograd::engine::evaluate_function: MulBackward0``
event per graph node; ``record_function`` blocks are events with their own name. Ops called
inside another op (a user Function's forward, a composite) are its children, so "Self CPU" is the
time not spent in children, as in PyTorch.

What differs from PyTorch: times are host wall-clock times (for CUDA tensors, kernel launch
times; there are no device-side columns); ``profile_memory`` counts the new memory each op
returns and each backward rule's gradients (allocations only, no frees), on the node's row where
PyTorch shows its kernels'; ``with_flops``/``with_modules`` record nothing extra.
Ops are intercepted by wrapping ``Function.apply`` and the ops' ``backward`` rules while a
profile records (restored on exit), see ``ember/profiler/_core.py``.
"""

from __future__ import annotations

import enum
import functools
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from . import _core
from ._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg", "kineto_available"]


class ProfilerActivity(enum.Enum):
    """What to profile. ember times every op on the host, whichever is chosen."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does at a step, as a ``schedule`` returns it."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """CPU, plus CUDA when ember can run CUDA tensors."""
    acts = {ProfilerActivity.CPU}
    try:
        from .. import cuda

        if cuda.is_available():
            acts.add(ProfilerActivity.CUDA)
    except Exception:  # noqa: BLE001 - a broken CuPy install means CPU only
        pass
    return acts


def kineto_available() -> bool:
    """True, as on PyTorch's CPU and CUDA builds: ``profile(activities=...)``, ``schedule``,
    ``on_trace_ready`` and ``export_chrome_trace`` (the API PyTorch builds on its Kineto library)
    are available; ember's recorder answers them (libraries choose that API when this is True)."""
    return True


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The action for each step: skip ``skip_first`` steps, then cycles of ``wait`` idle steps,
    ``warmup`` steps, and ``active`` recorded steps (the last one saves), ``repeat`` times
    (0: forever). ``skip_first_wait`` drops the first cycle's wait."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      UserWarning, stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` handler writing ``dir_name/<worker>.<ms>.pt.trace.json[.gz]``
    (a Chrome trace, the file TensorBoard's profiler plugin lists)."""

    def handler(prof: Any) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            import shutil

            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)

    return handler


class profile:  # noqa: N801 - PyTorch's name
    """Record ember's ops in a ``with`` block (or between ``start()`` and ``stop()``).

    Args:
        activities: accepted (ember times every op on the host).
        schedule: ``step -> ProfilerAction``; with it, ``prof.step()`` moves through wait,
            warmup and active steps and ``on_trace_ready(prof)`` is called at the end of each
            active span. Without it, everything is recorded.
        on_trace_ready: called with the profiler when a recording is complete.
        record_shapes: record each op's input shapes (``key_averages(group_by_input_shape=True)``).
        profile_memory: record the bytes of the tensors each op returns.
        with_stack: record the calling source location (``group_by_stack_n``).
        with_flops, with_modules, experimental_config, execution_trace_observer, acc_events,
            use_cuda, custom_trace_id_callback, post_processing_timeout_s: accepted.
    """

    def __init__(self, *, activities: Iterable[Any] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.step_num = 0
        self._schedule = schedule or _always_record
        self._action = ProfilerAction.NONE
        self._recorder: _core._Recorder | None = None
        self._events: EventList | None = None
        self._step_events: list = []
        self._t0_ns = 0
        self._running = False

    # -- recording ----------------------------------------------------------------------------
    def _begin(self) -> None:
        self._recorder = _core._Recorder(self.record_shapes, self.profile_memory,
                                         self.with_stack)
        _core.start_recording(self._recorder)

    def _end(self) -> None:
        rec = self._recorder
        if rec is None:
            return
        self._close_step()
        _core.stop_recording(rec)
        self._recorder = None
        self._events = self._convert(rec)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _open_step(self) -> None:
        if self.record_steps and self._recorder is not None:
            self._step_events = _core.push_user(f"ProfilerStep#{self.step_num}")

    def _close_step(self) -> None:
        if self._step_events:
            _core.pop_user(self._step_events)
            self._step_events = []

    def _convert(self, rec: _core._Recorder) -> EventList:
        t0 = self._t0_ns
        made: dict[int, FunctionEvent] = {}
        out = []
        for ev in rec.events:
            if ev.end_ns < ev.start_ns:  # still open (an exception skipped its exit)
                ev.end_ns = ev.start_ns
            fe = FunctionEvent(ev.id, ev.name, ev.thread, (ev.start_ns - t0) / 1e3,
                               (ev.end_ns - t0) / 1e3, ev.input_shapes, ev.stack, ev.memory,
                               ev.kind == "user")
            made[id(ev)] = fe
            out.append(fe)
        for ev in rec.events:
            fe = made[id(ev)]
            if ev.parent is not None and id(ev.parent) in made:
                parent = made[id(ev.parent)]
                fe.cpu_parent = parent
                parent.cpu_children.append(fe)
        # memory: an event's total includes its children's (events are in start order, so
        # children come after their parent: add bottom-up)
        for fe in reversed(out):
            if fe.cpu_parent is not None:
                fe.cpu_parent.cpu_memory_usage += fe.cpu_memory_usage
        return EventList(out, self.profile_memory, self.record_shapes, self.with_stack)

    def _transition(self, new: ProfilerAction) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        old = self._action
        if old == ProfilerAction.RECORD_AND_SAVE:
            self._end()
        elif old in recording and new not in recording:
            self._end()
        if new in recording and self._recorder is None:
            self._begin()
        self._action = new
        if new in recording:
            self._open_step()

    # -- public API ---------------------------------------------------------------------------
    def start(self) -> None:
        """Begin profiling (the action of step 0 decides whether ops are recorded)."""
        self._running = True
        self._t0_ns = time.perf_counter_ns()
        self._action = ProfilerAction.NONE
        self._transition(self._schedule(self.step_num))

    def stop(self) -> None:
        """Stop profiling; a recording in progress is completed (``on_trace_ready`` runs)."""
        if not self._running:
            return
        self._running = False
        if self._recorder is not None:
            self._end()
        self._action = ProfilerAction.NONE

    def step(self) -> None:
        """Mark the end of a training step: advance the schedule."""
        self._close_step()
        self.step_num += 1
        if self._running:
            self._transition(self._schedule(self.step_num))

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def events(self) -> EventList:
        """Every event of the last completed recording."""
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running: read the results after the "
                               "`with profile(...)` block (or after stop()), or in "
                               "on_trace_ready")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events totalled per op name (and input shapes / call site if asked)."""
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) needs "
                               "profile(record_shapes=True)")
        if group_by_stack_n and not self.with_stack:
            raise RuntimeError("key_averages(group_by_stack_n=...) needs profile(with_stack=True)")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last recording as a Chrome trace JSON file."""
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write ``stack;frames value`` lines (flame-graph input); needs ``with_stack=True``."""
        if not self.with_stack:
            raise RuntimeError("export_stacks needs profile(with_stack=True)")
        with open(path, "w") as f:
            for e in self.events():
                if e.stack:
                    value = int(getattr(e, metric.replace("cuda", "cpu"), 0))
                    f.write(";".join(reversed(e.stack)) + f";{e.name} {value}\n")

    @property
    def profiler(self) -> profile:
        return self

    @property
    def function_events(self) -> EventList:
        return self.events()

    def table(self, *args: Any, **kwargs: Any) -> str:
        """``key_averages().table(...)`` (the legacy ``autograd.profiler`` API)."""
        return self.key_averages().table(*args, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total


class record_function:  # noqa: N801 - PyTorch's name
    """A named block in the profile: ``with record_function("forward"): ...`` or
    ``@record_function("forward")``. Costs nothing when no profiler is recording."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._events: list = []

    def __enter__(self) -> record_function:
        if _core._recorders:
            self._events = _core.push_user(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._events:
            _core.pop_user(self._events)
            self._events = []

    def __call__(self, fn: Callable) -> Callable:
        name = self.name

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(name):
                return fn(*args, **kwargs)

        return wrapped
