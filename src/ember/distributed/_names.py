"""The names of ``torch.distributed`` that need no process: errors, ``ReduceOp``, ``Backend``,
``group``/``GroupMember``, the store classes and ``P2POp``."""

from __future__ import annotations

import datetime
import enum
from typing import Any

_NO_GROUP = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")
_COMING = ("start the processes with `ember launch --nproc-per-node N script.py` and call "
           "torch.distributed.init_process_group('gloo') in each (pip install 'ember[mpi]')")


class DistributedNotInitializedError(ValueError, NotImplementedError):
    """Raised where PyTorch raises ``ValueError`` for a missing default process group (also a
    ``NotImplementedError``, which programs written for earlier ember versions catch)."""


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



# -- reductions, backends, groups ----------------------------------------------------------------------------------
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


class P2POp:
    """A point-to-point operation for ``batch_isend_irecv`` (op, tensor, peer, group, tag)."""

    def __init__(self, op: Any, tensor: Any, peer: int | None = None, group: Any = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer
