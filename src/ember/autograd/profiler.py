"""``ember.autograd.profiler``: the older profiler API (``torch.autograd.profiler``).

``profile(enabled=True, ...)`` is ``ember.profiler.profile`` without a schedule (the results
also answer ``prof.table(...)`` and ``prof.function_events``); ``record_function`` is the same
class as ``ember.profiler.record_function``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, ProfilerActivity, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg",
           "emit_nvtx", "emit_itt", "kineto_available"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    """``torch.autograd.profiler.profile``: records ember's ops in a ``with`` block.

    Args:
        enabled: False makes the block record nothing (and ``events()`` empty).
        use_cuda, use_device, use_kineto, use_cpu: accepted (ember times ops on the host).
        record_shapes, profile_memory, with_stack: as in ``ember.profiler.profile``.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Any = None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None,
                 activity_filters: Any = None) -> None:
        super().__init__(activities=[ProfilerActivity.CPU], record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled

    def start(self) -> None:
        if self.enabled:
            super().start()
        else:
            self._events = EventList()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return super().key_averages(group_by_input_shape, group_by_stack_n)


@contextlib.contextmanager
def emit_nvtx(enabled: bool = True, record_shapes: bool = False) -> Iterator[None]:
    """Accepted and ignored (ember emits no NVTX ranges)."""
    yield


@contextlib.contextmanager
def emit_itt(enabled: bool = True, record_shapes: bool = False) -> Iterator[None]:
    """Accepted and ignored (ember emits no ITT ranges)."""
    yield


def kineto_available() -> bool:
    """False: ember's profiler is its own, not Kineto."""
    return False
