"""``ember.cuda.streams``: where PyTorch defines ``Stream``, ``Event`` and ``ExternalStream``."""

from . import Event, ExternalStream, Stream

__all__ = ["Stream", "Event", "ExternalStream"]
