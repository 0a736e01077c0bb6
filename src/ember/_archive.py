"""``torch._C.PyTorchFileReader`` (also ``torch.PyTorchFileReader``): the records of a
``torch.save`` archive, read by name. A checkpoint is a zip file whose entries sit under one
top-level folder (``archive/data.pkl``, ``archive/data/0``...); the reader names records without
that folder, as PyTorch's does. Libraries read checkpoints lazily through it (Lightning's
``_lazy_load``, safetensors converters). ``PyTorchFileWriter`` is not offered (absent)."""

from __future__ import annotations

import os
import zipfile
from typing import IO, Any

import numpy as np

__all__ = ["PyTorchFileReader"]


class PyTorchFileReader:
    """Reads the records of a ``torch.save`` archive: ``get_record(name) -> bytes``,
    ``has_record``, ``get_all_records``, ``get_record_size``, ``get_record_offset`` (where the
    record's bytes start in the file), ``get_storage_from_record`` and ``serialization_id``."""

    def __init__(self, file: str | os.PathLike | IO[bytes]) -> None:
        try:
            self._zip = zipfile.ZipFile(os.fspath(file) if isinstance(file, (str, os.PathLike))
                                        else file)
        except zipfile.BadZipFile:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                               "central directory (the file is not a torch.save archive: a "
                               "legacy or truncated checkpoint?)") from None
        names = self._zip.namelist()
        if not names or "/" not in names[0]:
            raise RuntimeError("PytorchStreamReader failed: the archive has no top-level folder "
                               "(not a torch.save archive)")
        self._prefix = names[0].split("/", 1)[0] + "/"
        self._records = [n[len(self._prefix):] for n in names if n.startswith(self._prefix)]

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._zip.getinfo(self._prefix + name)
        except KeyError:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               f"found (the archive's records: {self._records})") from None

    def get_all_records(self) -> list[str]:
        return list(self._records)

    def has_record(self, name: str) -> bool:
        return name in self._records

    def get_record(self, name: str) -> bytes:
        return self._zip.read(self._info(name))

    def get_record_size(self, name: str) -> int:
        return self._info(name).file_size

    def get_record_offset(self, name: str) -> int:
        """Where the record's bytes start in the file (after its local zip header)."""
        info = self._info(name)
        fp = self._zip.fp
        assert fp is not None
        here = fp.tell()
        fp.seek(info.header_offset + 26)
        head = fp.read(4)
        fp.seek(here)
        name_len, extra_len = int.from_bytes(head[:2], "little"), int.from_bytes(head[2:], "little")
        return info.header_offset + 30 + name_len + extra_len

    def get_storage_from_record(self, name: str, numel: int, dtype: Any) -> Any:
        """The record's first ``numel`` elements of ``dtype`` as a 1-D tensor (PyTorch returns an
        empty tensor viewing that storage; read it through ``untyped_storage()`` in both)."""
        import ember

        np_dtype = np.dtype(ember.empty(0, dtype=dtype).numpy().dtype)
        data = np.frombuffer(self.get_record(name), dtype=np_dtype, count=numel).copy()
        return ember.from_numpy(data)

    def serialization_id(self) -> str:
        if self.has_record(".data/serialization_id"):
            return self.get_record(".data/serialization_id").decode()
        return ""
