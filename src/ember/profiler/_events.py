"""Profiler results: ``FunctionEvent``, ``EventList`` (with ``key_averages``/``table``/
``export_chrome_trace``) and ``FunctionEventAvg``, shaped like PyTorch's."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]


def _format_time(us: float) -> str:
    """PyTorch's time format: 1.234s, 1.234ms or 1.234us."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:  # PyTorch's units: 1.50 GB, 3.04 MB, 20.00 KB, 4 B
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


class FunctionEvent:
    """One recorded call. Times are in microseconds."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,  # noqa: A002
                 input_shapes: list | None = None, stack: list[str] | None = None,
                 cpu_memory_usage: int = 0, is_user_annotation: bool = False) -> None:
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes or []
        self.stack = stack or []
        self.cpu_memory_usage = cpu_memory_usage
        self.is_user_annotation = is_user_annotation
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.count = 1
        self.device_type = "CPU"
        self.device_time_total = 0.0
        self.cuda_time_total = 0.0
        self.self_device_time_total = 0.0
        self.device_memory_usage = 0
        self.flops = 0

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    cpu_time = cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Totals over the events that share a key (name, and input shapes or stack if grouped)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes: Any = None
        self.stack: list[str] | None = None
        self.is_user_annotation = False
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cuda_time_total = 0.0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.flops = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.device_type = "CPU"
        self.overload_name = ""
        self.scope = 0
        self.cpu_parent = None
        self.cpu_children: list = []

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


_SORT_KEYS = {
    "cpu_time", "cuda_time", "xpu_time", "device_time", "cpu_time_total", "cuda_time_total",
    "xpu_time_total", "device_time_total", "self_cpu_time_total", "self_cuda_time_total",
    "self_device_time_total", "cpu_memory_usage", "cuda_memory_usage", "device_memory_usage",
    "self_cpu_memory_usage", "self_cuda_memory_usage", "self_device_memory_usage", "count",
}


def _sort_value(evt: Any, key: str) -> float:
    if key not in _SORT_KEYS:
        raise AttributeError(f"sort_by: '{key}' is not a profiler metric; use one of "
                             f"{sorted(_SORT_KEYS)}")
    return float(getattr(evt, key, 0.0) or 0.0)


class EventList(list):
    """A list of events with PyTorch's reporting methods."""

    def __init__(self, events: Iterable = (), profile_memory: bool = False,
                 record_shapes: bool = False, with_stack: bool = False) -> None:
        super().__init__(events)
        self._profile_memory = profile_memory
        self._record_shapes = record_shapes
        self._with_stack = with_stack

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / top stack frames if asked)."""
        groups: dict[tuple, FunctionEventAvg] = {}
        for e in self:
            key: tuple = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n:
                key += tuple(e.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
            avg.add(e)
            if group_by_stack_n:
                avg.stack = e.stack[:group_by_stack_n]
        out = EventList(groups.values(), self._profile_memory, self._record_shapes,
                        self._with_stack)
        out._grouped_shapes = group_by_input_shapes  # type: ignore[attr-defined]
        out._stack_n = group_by_stack_n  # type: ignore[attr-defined]
        out._self_total = self.self_cpu_time_total  # type: ignore[attr-defined]
        return out

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """A text table like PyTorch's (Name, Self CPU %, Self CPU, CPU total %, CPU total,
        CPU time avg, [CPU Mem, Self CPU Mem,] # of Calls[, Input Shapes][, Source Location])."""
        events = list(self)
        if top_level_events_only:
            events = [e for e in events if getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            events.sort(key=lambda e: _sort_value(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            events = events[:row_limit]
        self_total = getattr(self, "_self_total", None)
        if self_total is None:
            self_total = self.self_cpu_time_total
        show_shapes = getattr(self, "_grouped_shapes", False) and any(
            e.input_shapes for e in events)
        stack_n = getattr(self, "_stack_n", 0)
        name_width = min(max([len(str(e.key)) for e in events] + [4]) + 4,
                         max_name_column_width)
        cols: list[tuple[str, int]] = [("Name", name_width), ("Self CPU %", 12),
                                       ("Self CPU", 12), ("CPU total %", 12),
                                       ("CPU total", 12), ("CPU time avg", 12)]
        if self._profile_memory:
            cols += [("CPU Mem", 12), ("Self CPU Mem", 12)]
        cols += [("# of Calls", 12)]
        if show_shapes:
            shape_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                              max_shapes_column_width)
            cols.append(("Input Shapes", shape_width))
        if stack_n:
            cols.append(("Source Location", max_src_column_width))
        line = "".join("-" * w + "  " for _, w in cols)
        head = "".join(f"{n:>{w}}  " for n, w in cols)

        def trunc(s: str, w: int) -> str:
            return s if len(s) <= w else s[:w - 3] + "..."

        def pct(x: float) -> str:
            return f"{(100.0 * x / self_total) if self_total else 0.0:.2f}%"

        rows = []
        for e in events:
            cells = [trunc(str(e.key), name_width), pct(e.self_cpu_time_total),
                     _format_time(e.self_cpu_time_total), pct(e.cpu_time_total),
                     _format_time(e.cpu_time_total),
                     _format_time(e.cpu_time_total / e.count if e.count else 0.0)]
            if self._profile_memory:
                cells += [_format_memory(e.cpu_memory_usage),
                          _format_memory(e.self_cpu_memory_usage)]
            cells.append(str(e.count))
            if show_shapes:
                cells.append(trunc(str(e.input_shapes), cols[len(cells)][1]))
            if stack_n:
                cells.append(trunc(e.stack[0] if e.stack else "", max_src_column_width))
            rows.append("".join(f"{c:>{w}}  " for c, (_, w) in zip(cells, cols)))
        parts = []
        if header:
            parts += ["=" * len(line), header]
        parts += [line, head, line, *rows, line,
                  f"Self CPU time total: {_format_time(self_total)}", ""]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON; open in chrome://tracing or Perfetto)."""
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise RuntimeError("export_chrome_trace needs the raw events (prof.events()), not "
                                   "key_averages()")
            ev: dict[str, Any] = {
                "ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                "name": e.name, "pid": pid, "tid": e.thread, "ts": e.start_us,
                "dur": e.cpu_time_total, "args": {"External id": e.id},
            }
            if e.input_shapes:
                ev["args"]["Input Dims"] = e.input_shapes
            if e.stack:
                ev["args"]["Call stack"] = ";".join(e.stack)
            trace.append(ev)
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "record_shapes": int(self._record_shapes),
            "displayTimeUnit": "ms",
            "traceEvents": [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                             "args": {"name": "ember"}},
                            {"ph": "M", "name": "thread_name", "pid": pid,
                             "tid": threading.get_ident(), "args": {"name": "main thread"}},
                            *trace],
            "traceName": str(path),
        }
        with open(path, "w") as f:
            json.dump(doc, f)
