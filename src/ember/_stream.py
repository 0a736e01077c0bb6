"""``torch.Stream`` and ``torch.Event``: the device-generic stream and event classes.

On a CUDA device they drive ember's CUDA streams and events (``ember.cuda.Stream``/``Event``).
On the CPU, as in PyTorch, a stream is the one in-order queue every op runs on: ``query()`` is
True, ``synchronize()`` returns at once, and recording or waiting on events raises PyTorch's
"cpu backend doesn't support events." (an unrecorded event's ``query``/``synchronize``/``wait``
are no-ops, and ``elapsed_time`` raises PyTorch's ValueError).
"""

from __future__ import annotations

from typing import Any

from . import _backend

__all__ = ["Stream", "Event"]

_DEVICE_TYPE = {"cpu": 0, "cuda": 1, "meta": 9}  # PyTorch's DeviceType numbers


def _device(device: Any) -> Any:
    if device is None:
        from . import cuda

        return _backend.device("cuda" if cuda.is_available() else "cpu")
    return device if isinstance(device, _backend.device) else _backend.device(device)


def _no_events() -> RuntimeError:
    return RuntimeError("cpu backend doesn't support events.")


class Stream:
    """``torch.Stream(device=None, *, priority=0)``: a stream of ``device`` (the accelerator's
    when one is usable, else the CPU's)."""

    def __init__(self, device: Any = None, *, priority: int = 0, **kwargs: Any) -> None:
        dev = _device(device)
        self._cuda = None
        if dev.type == "cuda":
            from . import cuda

            self._cuda = cuda.Stream(dev, priority=priority)
        self.device = dev
        self.device_index = dev.index if dev.index is not None else -1
        self.device_type = _DEVICE_TYPE.get(dev.type, 0)
        self.stream_id = 0 if self._cuda is None else self._cuda._s.ptr

    def query(self) -> bool:
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def record_event(self, event: Event | None = None) -> Event:
        if self._cuda is None:
            raise _no_events()
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        if self._cuda is None:
            raise _no_events()
        self._cuda.wait_event(event._cuda)

    def wait_stream(self, stream: Stream) -> None:
        if self._cuda is None:
            raise _no_events()
        self._cuda.wait_stream(stream._cuda)

    def __enter__(self) -> Stream:
        if self._cuda is not None:
            self._cuda.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._cuda is not None:
            self._cuda.__exit__(*exc)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Stream) and self.device == other.device
                and self.stream_id == other.stream_id)

    def __hash__(self) -> int:
        return hash((str(self.device), self.stream_id))

    def __repr__(self) -> str:
        return (f"torch.Stream device_type={self.device.type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """``torch.Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``:
    a marker recorded on a stream, for synchronisation and timing."""

    def __init__(self, device: Any = None, *, enable_timing: bool = False,
                 blocking: bool = False, interprocess: bool = False) -> None:
        dev = _device(device)
        self.device = dev
        self._cuda = None
        if dev.type == "cuda":
            from . import cuda

            self._cuda = cuda.Event(enable_timing=enable_timing, blocking=blocking,
                                    interprocess=interprocess)
        self.event_id = 0
        self._timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        if self._cuda is None:
            raise _no_events()
        self._cuda.record(None if stream is None else stream._cuda)

    def wait(self, stream: Stream | None = None) -> None:
        if self._cuda is not None:
            self._cuda.wait(None if stream is None else stream._cuda)

    def query(self) -> bool:
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is None or end_event._cuda is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._cuda.elapsed_time(end_event._cuda)

    def __repr__(self) -> str:
        index = self.device.index if self.device.index is not None else -1
        return (f"torch.Event device_type={self.device.type}, device_index={index}, "
                f"event_flag=0, event_id={self.event_id}")
