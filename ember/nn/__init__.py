"""``ember.nn``: modules, parameters, functional, init, utils."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F403
from .parameter import *  # noqa: F403
