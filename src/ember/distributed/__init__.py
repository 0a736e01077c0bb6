"""``ember.distributed``: PyTorch's ``torch.distributed`` import surface, without collectives yet.

A single-process program imports this package and asks ``is_available()`` /
``is_initialized()`` (or reads ``RANK`` from the environment) before deciding not to use it: that
works. ember has no process-group backend yet, so:

- ``is_available()`` is False (no backend is built in) and ``is_initialized()`` is False;
- ``init_process_group`` raises ``NotImplementedError``: multi-process training is coming (MPI);
- everything that needs the default process group (``get_rank``, ``get_world_size``,
  ``all_reduce``, ``barrier``, ...) raises PyTorch's error for "no process group":
  ``ValueError: Default process group has not been initialized...``. The exception is also a
  ``NotImplementedError``, so ``except ValueError`` (PyTorch's type) and
  ``except NotImplementedError`` both catch it.

See docs/parallel.md.
"""

from __future__ import annotations

import datetime
import enum
import os
from typing import Any

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "FileStore",
    "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store",
    "TCPStore", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "is_ucc_available", "is_xccl_available",
    "isend", "monitored_barrier", "new_group", "new_subgroups", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]

_NO_GROUP = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")
_COMING = ("ember has no process-group backend yet (multi-process training over MPI is coming), "
           "so no process group can exist: run the program as a single process (without "
           "torchrun or RANK/WORLD_SIZE in the environment).")


class DistributedNotInitializedError(ValueError, NotImplementedError):
    """Raised where PyTorch raises ``ValueError`` for a missing default process group; also a
    ``NotImplementedError`` because ember cannot create one yet."""


def _no_group(what: str) -> DistributedNotInitializedError:
    return DistributedNotInitializedError(f"{_NO_GROUP} ({what}: {_COMING})")


class DistError(RuntimeError):
    """Base class of the errors the distributed package raises (PyTorch's names)."""


class DistBackendError(DistError):
    """A backend (NCCL, Gloo, MPI) failed."""


class DistNetworkError(DistError):
    """A network operation failed."""


class DistStoreError(DistError):
    """A key-value store operation failed."""


# -- availability ---------------------------------------------------------------------------
def is_available() -> bool:
    """False: ember's distributed package has no backend built in yet (see docs/parallel.md)."""
    return False


def is_initialized() -> bool:
    """False: no default process group can exist in ember yet."""
    return False


def is_nccl_available() -> bool:
    """False: ember has no NCCL backend."""
    return False


def is_gloo_available() -> bool:
    """False: ember has no Gloo backend."""
    return False


def is_mpi_available() -> bool:
    """False: the MPI backend is coming."""
    return False


def is_ucc_available() -> bool:
    """False: ember has no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """False: ember has no XCCL backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """False for every backend name."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic/torchrun (``TORCHELASTIC_RUN_ID`` set)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


# -- names ----------------------------------------------------------------------------------
class ReduceOp:
    """Reduction operations for collectives: ``ReduceOp.SUM``, ``AVG``, ``MAX``..."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


reduce_op = ReduceOp  # PyTorch's deprecated alias


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``; constants ``Backend.GLOO``, ``NCCL``..."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI, XCCL]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL}

    def __new__(cls, name: str) -> str:  # type: ignore[misc]
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return value


class group:  # noqa: N801 - PyTorch's name
    """``group.WORLD``: the default group (None until ``init_process_group``)."""

    WORLD: Any = None


class GroupMember:
    """``GroupMember.WORLD`` and the marker for ranks outside a group."""

    WORLD: Any = None
    NON_GROUP_MEMBER = -100


default_pg_timeout = datetime.timedelta(minutes=30)


class _NeedsBackend:
    """Base for PyTorch's process-group and store classes: constructing one needs a backend."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"ember does not implement torch.distributed.{type(self).__name__} yet: {_COMING}"
        )


class ProcessGroup(_NeedsBackend):
    """A group of processes (needs a backend: not available in ember yet)."""


class Work(_NeedsBackend):
    """The handle of an asynchronous collective (needs a backend)."""


class Store(_NeedsBackend):
    """A key-value store for rendezvous (needs a backend)."""


class TCPStore(Store):
    """A TCP key-value store (not available in ember yet)."""


class FileStore(Store):
    """A file-backed key-value store (not available in ember yet)."""


class HashStore(Store):
    """An in-memory key-value store (not available in ember yet)."""


class PrefixStore(Store):
    """A store that prefixes keys (not available in ember yet)."""


class P2POp:
    """A point-to-point operation for ``batch_isend_irecv`` (op, tensor, peer, group, tag)."""

    def __init__(self, op: Any, tensor: Any, peer: int | None = None, group: Any = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


# -- the process group ----------------------------------------------------------------------
def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Not implemented yet: raises ``NotImplementedError`` (multi-process training is coming)."""
    raise NotImplementedError(
        "ember does not implement torch.distributed.init_process_group yet: multi-process "
        "training (collectives over MPI) is coming. For now run the program as a single process: "
        "start it with `ember run script.py`, not torchrun, and without RANK/WORLD_SIZE in the "
        "environment, so scripts that check `int(os.environ.get('RANK', -1)) != -1` take their "
        "single-process path."
    )


def destroy_process_group(group: Any = None) -> None:
    """Raises: there is no process group to destroy (PyTorch raises ``AssertionError`` too)."""
    raise AssertionError(
        "Process group cannot be None (destroy_process_group: no process group was initialized; "
        + _COMING + ")"
    )


def get_rank(group: Any = None) -> int:
    """Raises PyTorch's ``ValueError``: no default process group exists."""
    raise _no_group("get_rank")


def get_world_size(group: Any = None) -> int:
    """Raises PyTorch's ``ValueError``: no default process group exists."""
    raise _no_group("get_world_size")


def get_backend(group: Any = None) -> str:
    """Raises PyTorch's ``ValueError``: no default process group exists."""
    raise _no_group("get_backend")


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``; the identity for the world group."""
    if group is None or group is GroupMember.WORLD:
        return group_rank
    raise _no_group("get_global_rank")


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank of ``global_rank`` inside ``group``; the identity for the world group."""
    if group is None or group is GroupMember.WORLD:
        return global_rank
    raise _no_group("get_group_rank")


def get_process_group_ranks(group: Any) -> list[int]:
    """Raises: no process group exists."""
    raise _no_group("get_process_group_ranks")


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """``LOCAL_RANK`` from the environment, else ``fallback_rank`` (PyTorch's behaviour)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead."
    )


def _needs_group(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise _no_group(name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"PyTorch's ``torch.distributed.{name}``; raises until ember has a process-group "
                  "backend (no default process group can exist yet).")
    return fn


all_gather = _needs_group("all_gather")
all_gather_into_tensor = _needs_group("all_gather_into_tensor")
all_gather_object = _needs_group("all_gather_object")
all_reduce = _needs_group("all_reduce")
all_to_all = _needs_group("all_to_all")
all_to_all_single = _needs_group("all_to_all_single")
barrier = _needs_group("barrier")
batch_isend_irecv = _needs_group("batch_isend_irecv")
broadcast = _needs_group("broadcast")
broadcast_object_list = _needs_group("broadcast_object_list")
gather = _needs_group("gather")
gather_object = _needs_group("gather_object")
irecv = _needs_group("irecv")
isend = _needs_group("isend")
monitored_barrier = _needs_group("monitored_barrier")
new_group = _needs_group("new_group")
new_subgroups = _needs_group("new_subgroups")
recv = _needs_group("recv")
reduce = _needs_group("reduce")
reduce_scatter = _needs_group("reduce_scatter")
reduce_scatter_tensor = _needs_group("reduce_scatter_tensor")
scatter = _needs_group("scatter")
scatter_object_list = _needs_group("scatter_object_list")
send = _needs_group("send")
send_object_list = _needs_group("send_object_list")
recv_object_list = _needs_group("recv_object_list")


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.distributed", name)
