"""``ember.save`` / ``ember.load``: PyTorch's checkpoint format, read without running code.

A checkpoint is a zip archive (the layout ``torch.save`` writes)::

    <name>/data.pkl                   the object tree, pickle protocol 2; tensors are calls to
                                      torch._utils._rebuild_tensor_v2(storage, offset, size,
                                      stride, requires_grad, OrderedDict()) whose storage is a
                                      persistent id ('storage', torch.FloatStorage, key,
                                      location, numel)
    <name>/.format_version            "1"
    <name>/.storage_alignment         "64": every member's bytes start at a multiple of 64
    <name>/byteorder                  "little"
    <name>/data/<key>                 raw little-endian bytes of one storage (uncompressed)
    <name>/version                    "3\\n"
    <name>/.data/serialization_id     40 decimal digits

``ember.save`` writes it: tensors and plain values exactly as ``torch.load``'s default
``weights_only=True`` reader expects, anything else (a whole module, a NumPy array, a user's
class) with Python's pickler as ``torch.save`` does, ember's classes named by their PyTorch paths
(``torch.nn.modules.linear.Linear``). ``ember.load`` follows PyTorch 2.13's contract: by default
(``weights_only=True``) it reads with the interpreter in ``ember._pickle_reader`` (no
``pickle.load``; only the opcodes and globals a tensor checkpoint needs, plus the classes and
functions given to ``add_safe_globals``; every size, offset and stride checked against the
archive before memory is touched; anything else raises ``UnsafeCheckpointError``).
``weights_only=False`` unpickles the file with Python's unpickler, which trusts it completely.
Writes to a path are atomic (temporary file in the same folder, fsync, ``os.replace``).
See docs/checkpoints.md.

Where each part lives (this ``__init__`` only gathers the public names of
``torch.serialization``; every name keeps ``ember.serialization`` as its ``__module__``):

- ``_save.py``: ``save``, storage planning, the tensor pickler, the general pickler, the zip writer.
- ``_atomic.py``: the atomic write to a path (temporary file, fsync, ``os.replace``).
- ``_load.py``: ``load``, the archive reader, the weights-only globals and storages, the
  ``weights_only`` rules, ``get_unsafe_globals_in_checkpoint``.
- ``_allowlist.py``: the constructors a weights-only load may call, and the user allowlist
  (``add_safe_globals``, ``safe_globals``, ``get_safe_globals``, ``clear_safe_globals``).
- ``_options.py``: the other helpers (load defaults, ``skip_data``, locations, ``StorageType``).
- ``_common.py``: what both directions share (PyTorch's names for ember's objects, storage
  type names, refusal helpers).

Module-level state (the allowlist, the load defaults, the location registry) lives in exactly
one of these modules and is only ever mutated in place.
"""

from __future__ import annotations

from collections.abc import Callable

from .._backend import device as _device
from .._pickle_reader import UnsafeCheckpointError
from .._tensor import Tensor as _Tensor
from ._allowlist import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._load import get_unsafe_globals_in_checkpoint, load
from ._options import MAP_PRIVATE as MAP_PRIVATE
from ._options import MAP_SHARED as MAP_SHARED
from ._options import (
    LoadEndianness,
    SourceChangeWarning,
    StorageType,
    check_module_version_greater_or_equal,
    default_restore_location,
    get_crc32_options,
    get_default_load_endianness,
    get_default_mmap_options,
    location_tag,
    mkdtemp,
    normalize_storage_type,
    register_package,
    set_crc32_options,
    set_default_load_endianness,
    set_default_mmap_options,
    skip_data,
    storage_to_tensor_type,
    validate_cuda_device,
)
from ._save import DEFAULT_PROTOCOL, save

# The type of load's map_location, as PyTorch spells it for annotations (a callable receives each
# storage, a tensor in ember, and its location tag, and returns it moved or None)
MAP_LOCATION = Callable[[_Tensor, str], _Tensor] | _device | str | dict[str, str] | None

__all__ = [
    "save", "load", "UnsafeCheckpointError", "DEFAULT_PROTOCOL", "add_safe_globals",
    "clear_safe_globals", "get_safe_globals", "safe_globals", "get_unsafe_globals_in_checkpoint",
    "skip_data", "SourceChangeWarning", "LoadEndianness", "get_default_load_endianness",
    "set_default_load_endianness", "get_default_mmap_options", "set_default_mmap_options",
    "get_crc32_options", "set_crc32_options", "mkdtemp", "register_package", "location_tag",
    "default_restore_location", "validate_cuda_device", "normalize_storage_type",
    "storage_to_tensor_type", "check_module_version_greater_or_equal", "StorageType",
]

# one public home, as before the split: pickles and reprs name ember.serialization.X
for _obj in (save, load, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals,
             get_unsafe_globals_in_checkpoint, LoadEndianness, SourceChangeWarning, StorageType,
             check_module_version_greater_or_equal, default_restore_location, get_crc32_options,
             get_default_load_endianness, get_default_mmap_options, location_tag, mkdtemp,
             normalize_storage_type, register_package, set_crc32_options,
             set_default_load_endianness, set_default_mmap_options, skip_data,
             storage_to_tensor_type, validate_cuda_device):
    _obj.__module__ = __name__
del _obj
