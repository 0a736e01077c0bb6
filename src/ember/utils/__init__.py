"""``ember.utils``: data loading (``ember.utils.data``)."""

from . import data, dlpack  # noqa: F401


def __getattr__(name: str) -> object:
    # torch.utils.checkpoint, _pytree, hooks, _foreach_utils are reachable without importing them
    if name in ("checkpoint", "_pytree", "hooks", "_foreach_utils"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
