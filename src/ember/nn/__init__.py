"""``ember.nn``: modules, parameters, functional, init, utils."""

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F403
from .parallel import DataParallel  # noqa: F401
from .parameter import *  # noqa: F403


def __getattr__(name: str) -> object:
    if name == "attention":  # torch.nn.attention, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.attention")
    from .._missing import attribute_error

    raise attribute_error("torch.nn", name)
