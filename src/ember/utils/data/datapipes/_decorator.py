"""``@functional_datapipe("name")``: register a DataPipe class's functional form."""

from __future__ import annotations

from .datapipe import IterDataPipe, MapDataPipe


class functional_datapipe:  # noqa: N801 - PyTorch's name
    """Class decorator: ``@functional_datapipe("my_map") class MyMap(IterDataPipe)`` makes
    ``dp.my_map(*args)`` build ``MyMap(dp, *args)`` on every ``IterDataPipe`` (or
    ``MapDataPipe``, for a subclass of it)."""

    name: str

    def __init__(self, name: str, enable_df_api_tracing: bool = False) -> None:
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls: type) -> type:
        if isinstance(cls, type) and issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls,
                                                       self.enable_df_api_tracing)
        elif isinstance(cls, type) and issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls
