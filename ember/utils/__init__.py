"""``ember.utils``: data loading (``ember.utils.data``)."""

from . import data, dlpack  # noqa: F401
