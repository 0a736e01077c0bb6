"""``ember.distributed``: PyTorch's ``torch.distributed`` over MPI (``pip install 'ember[mpi]'``).

Start the processes with ``ember launch --nproc-per-node 4 train.py`` (torchrun's interface over
MPICH's ``mpiexec``, or ``mpiexec -n 4 ember run train.py`` by hand); in each,
``init_process_group("gloo")`` (or ``"mpi"``) joins MPI's world, and the collectives
(``all_reduce``, ``broadcast``, ``all_gather``, ...) run on the tensors' arrays in place, through
MPI's non-blocking calls, so ``async_op=True`` returns a work object with ``wait()``.

Without mpi4py, ``is_available()`` is False and ``init_process_group`` says what to install.
Everything that needs the default process group raises PyTorch's error for "no process group"
(``ValueError``) until ``init_process_group`` has run. Not yet here: sub-groups (``new_group``),
``all_to_all``, ``nccl`` on CUDA tensors, several machines. See
docs/parallel.md.
"""

from __future__ import annotations

import datetime
import enum
import io
import os
from typing import Any

import numpy as np

from . import _mpi

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


# -- availability ---------------------------------------------------------------------------
def is_available() -> bool:
    """Whether ember can run collectives here: True when mpi4py is installed (``ember[mpi]``)."""
    return _mpi.available()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run in this process."""
    return bool(_WORLD)


def is_nccl_available() -> bool:
    """False: ember's NCCL backend is not written yet."""
    return False


def is_gloo_available() -> bool:
    """True when MPI is available: ``"gloo"`` runs over MPI in ember."""
    return _mpi.available()


def is_mpi_available() -> bool:
    """True when mpi4py is installed."""
    return _mpi.available()


def is_ucc_available() -> bool:
    """False: ember has no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """False: ember has no XCCL backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` can be used: ``"gloo"`` and ``"mpi"`` when MPI is available."""
    return str(backend).lower() in ("gloo", "mpi") and _mpi.available()


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
    """A group of processes; ``group.WORLD`` after ``init_process_group``."""

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return self._backend


Work = _mpi.Work


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
_WORLD: dict[str, Any] = {}  # "comm", "backend", "timeout" once init_process_group has run


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the default process group: MPI's world, started by ``mpiexec``.

    ``backend`` is ``"gloo"`` or ``"mpi"`` (both MPI in ember; ``None`` means gloo); ``rank`` and
    ``world_size``, given or in the environment (``RANK``, ``WORLD_SIZE``), must agree with MPI's.
    """
    if _WORLD:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend) if backend else Backend.GLOO
    if "nccl" in name or "cuda:" in name:
        raise RuntimeError(
            f"init_process_group(backend={backend!r}): ember's NCCL backend is not written yet; "
            "use backend='gloo' (CPU tensors, over MPI)"
        )
    if name not in (Backend.GLOO, Backend.MPI) and not name.startswith("cpu:"):
        raise ValueError(f"Invalid backend: {backend!r}; ember runs 'gloo' and 'mpi' over MPI")
    comm = _mpi.comm_world()
    size, me = comm.Get_size(), comm.Get_rank()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", size))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", me))
    if want_size != size or want_rank != me:
        raise RuntimeError(
            f"init_process_group: this process is rank {me} of {size} in MPI's world, but "
            f"rank={want_rank}, world_size={want_size} was asked (arguments or RANK/WORLD_SIZE): "
            f"start the processes with `ember launch --nproc-per-node {want_size} script.py` (or "
            f"MPI's own `mpiexec -n {want_size} ember run script.py`), so the two agree"
        )
    world = ProcessGroup.__new__(ProcessGroup)
    world._comm, world._backend = comm, str(name)
    _WORLD.update(comm=comm, backend=str(name), timeout=timeout or default_pg_timeout,
                  group=world)
    group.WORLD = GroupMember.WORLD = world


def destroy_process_group(group: Any = None) -> None:
    """Leave the default process group (MPI itself stays up until the process exits)."""
    if not _WORLD:
        raise AssertionError(
            "Process group cannot be None (destroy_process_group: no process group was "
            "initialized; " + _COMING + ")"
        )
    _WORLD.clear()
    globals()["group"].WORLD = GroupMember.WORLD = None


def _comm(what: str, grp: Any = None) -> Any:
    if not _WORLD:
        raise _no_group(what)
    if grp is not None and grp is not _WORLD["group"]:
        raise NotImplementedError(f"{what}: ember supports the default group only (no new_group yet)")
    return _WORLD["comm"]


def get_rank(group: Any = None) -> int:
    """This process's rank in the default group."""
    return _comm("get_rank", group).Get_rank()


def get_world_size(group: Any = None) -> int:
    """The number of processes in the default group."""
    return _comm("get_world_size", group).Get_size()


def get_backend(group: Any = None) -> str:
    """The backend name given to ``init_process_group`` (``"gloo"`` or ``"mpi"``)."""
    _comm("get_backend", group)
    return _WORLD["backend"]


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
    """The global ranks in ``group`` (every rank, for the default group)."""
    return list(range(_comm("get_process_group_ranks", group).Get_size()))


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
        if _WORLD:
            raise NotImplementedError(f"torch.distributed.{name} is not in ember yet")
        raise _no_group(name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"PyTorch's ``torch.distributed.{name}``; not in ember yet."
    return fn


# -- collectives ----------------------------------------------------------------------------
def _array(t: Any, what: str) -> np.ndarray:
    """The tensor's own array, which a collective reads and writes in place."""
    from .._tensor_base import TensorBase

    if not isinstance(t, TensorBase):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise RuntimeError(
            f"{what}: the tensor is on {t.device}; ember's gloo/mpi backend moves CPU tensors "
            "(NCCL for CUDA tensors is not written yet): call it on t.cpu() and copy back"
        )
    arr = t._data
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what}: Tensors must be contiguous (got shape {tuple(t.shape)} with "
                         "strides of a view); pass t.contiguous()")
    return arr


def _finish(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _average(arr: np.ndarray, comm: Any) -> Any:
    """What ReduceOp.AVG adds after MPI's SUM: divide by the world size, in place."""
    return lambda: np.divide(arr, comm.Get_size(), out=arr)


def _op_name(op: Any) -> str:
    return getattr(op, "name", str(op)).split(".")[-1]


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over every process, in place: afterwards every rank holds the result."""
    comm = _comm("all_reduce", group)
    arr = _array(tensor, "all_reduce")
    name = _op_name(op)
    if name == "AVG" and arr.dtype.kind not in "fc":
        raise ValueError(f"all_reduce: ReduceOp.AVG needs a floating tensor, got {tensor.dtype}")
    req = comm.Iallreduce(_mpi.module().IN_PLACE, _mpi.as_buffer(arr), op=_mpi.mpi_op(name))
    then = _average(arr, comm) if name == "AVG" else None
    tensor._bump_version()
    return _finish(Work([req], then), async_op)


def broadcast(tensor: Any, src: int = 0, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` from rank ``src`` into the same tensor on every other rank."""
    comm = _comm("broadcast", group)
    arr = _array(tensor, "broadcast")
    req = comm.Ibcast(_mpi.as_buffer(arr), root=src if group_src is None else group_src)
    tensor._bump_version()
    return _finish(Work([req]), async_op)


def reduce(tensor: Any, dst: int = 0, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over every process into rank ``dst``'s tensor (the others keep theirs)."""
    comm = _comm("reduce", group)
    arr = _array(tensor, "reduce")
    root = dst if group_dst is None else group_dst
    name = _op_name(op)
    mine = comm.Get_rank() == root
    send = _mpi.module().IN_PLACE if mine else _mpi.as_buffer(arr)
    req = comm.Ireduce(send, _mpi.as_buffer(arr) if mine else None, op=_mpi.mpi_op(name),
                       root=root)
    then = _average(arr, comm) if name == "AVG" and mine else None
    if mine:
        tensor._bump_version()
    return _finish(Work([req], then), async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor``, concatenated along dim 0 (or stacked) into ``output_tensor``."""
    comm = _comm("all_gather_into_tensor", group)
    out, inp = _array(output_tensor, "all_gather_into_tensor"), _array(input_tensor,
                                                                       "all_gather_into_tensor")
    if out.size != inp.size * comm.Get_size() or out.dtype != inp.dtype:
        raise ValueError(
            f"all_gather_into_tensor: output {tuple(output_tensor.shape)} {output_tensor.dtype} "
            f"must hold world_size ({comm.Get_size()}) x input {tuple(input_tensor.shape)} "
            f"{input_tensor.dtype}"
        )
    req = comm.Iallgather(_mpi.as_buffer(inp), _mpi.as_buffer(out))
    output_tensor._bump_version()
    return _finish(Work([req]), async_op)


def all_gather(tensor_list: list, tensor: Any, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list[r]`` on every rank."""
    comm = _comm("all_gather", group)
    if len(tensor_list) != comm.Get_size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; it needs "
                         f"world_size ({comm.Get_size()})")
    inp = _array(tensor, "all_gather")
    buf = np.empty((comm.Get_size(),) + inp.shape, inp.dtype)
    req = comm.Iallgather(_mpi.as_buffer(inp), _mpi.as_buffer(buf))

    def then() -> None:
        for t, part in zip(tensor_list, buf, strict=True):
            _array(t, "all_gather")[...] = part
            t._bump_version()
    return _finish(Work([req], then), async_op)


def gather(tensor: Any, gather_list: list | None = None, dst: int = 0, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (None on the others)."""
    comm = _comm("gather", group)
    root = dst if group_dst is None else group_dst
    inp = _array(tensor, "gather")
    mine = comm.Get_rank() == root
    if mine and (gather_list is None or len(gather_list) != comm.Get_size()):
        raise ValueError(f"gather: rank {root} needs a gather_list of world_size "
                         f"({comm.Get_size()}) tensors")
    buf = np.empty((comm.Get_size(),) + inp.shape, inp.dtype) if mine else None
    req = comm.Igather(_mpi.as_buffer(inp), _mpi.as_buffer(buf) if mine else None, root=root)

    def then() -> None:
        if mine:
            for t, part in zip(gather_list, buf, strict=True):
                _array(t, "gather")[...] = part
                t._bump_version()
    return _finish(Work([req], then), async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int = 0, group: Any = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``scatter_list[r]`` into ``tensor`` on rank ``r``."""
    comm = _comm("scatter", group)
    root = src if group_src is None else group_src
    out = _array(tensor, "scatter")
    mine = comm.Get_rank() == root
    if mine:
        if scatter_list is None or len(scatter_list) != comm.Get_size():
            raise ValueError(f"scatter: rank {root} needs a scatter_list of world_size "
                             f"({comm.Get_size()}) tensors")
        buf = np.ascontiguousarray(np.stack([_array(t, "scatter") for t in scatter_list]))
    req = comm.Iscatter(_mpi.as_buffer(buf) if mine else None, _mpi.as_buffer(out), root=root)
    tensor._bump_version()
    return _finish(Work([req]), async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` over every rank and give rank ``r`` the ``r``-th equal block of dim 0."""
    comm = _comm("reduce_scatter_tensor", group)
    out, inp = _array(output, "reduce_scatter_tensor"), _array(input, "reduce_scatter_tensor")
    if inp.size != out.size * comm.Get_size():
        raise ValueError(f"reduce_scatter_tensor: input {tuple(input.shape)} must be world_size "
                         f"({comm.Get_size()}) x output {tuple(output.shape)}")
    name = _op_name(op)
    req = comm.Ireduce_scatter_block(_mpi.as_buffer(inp), _mpi.as_buffer(out),
                                     op=_mpi.mpi_op(name))
    then = _average(out, comm) if name == "AVG" else None
    output._bump_version()
    return _finish(Work([req], then), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every process has reached this call."""
    comm = _comm("barrier", group)
    return _finish(Work([comm.Ibarrier()]), async_op)


def isend(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Send ``tensor`` to rank ``dst`` without waiting: returns the work to ``wait()`` on."""
    comm = _comm("isend", group)
    return Work([comm.Isend(_mpi.as_buffer(_array(tensor, "isend")), dest=dst, tag=tag)])


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0) -> Work:
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting."""
    comm = _comm("irecv", group)
    source = _mpi.module().ANY_SOURCE if src is None else src
    req = comm.Irecv(_mpi.as_buffer(_array(tensor, "irecv")), source=source, tag=tag)
    tensor._bump_version()
    return Work([req])


def send(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst``."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src``; returns the sender's rank."""
    comm = _comm("recv", group)
    status = _mpi.module().Status()
    source = _mpi.module().ANY_SOURCE if src is None else src
    comm.Recv(_mpi.as_buffer(_array(tensor, "recv")), source=source, tag=tag, status=status)
    tensor._bump_version()
    return status.Get_source()


# -- objects: ember's safe checkpoint encoding, never pickle -------------------------------------
def _encode(obj: Any) -> np.ndarray:
    from ..serialization import save

    buf = io.BytesIO()
    save(obj, buf)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _decode(data: np.ndarray) -> Any:
    from ..serialization import load

    return load(io.BytesIO(data.tobytes()), weights_only=True)


def _spans(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return sizes, np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    """Every rank's ``obj`` into ``object_list[r]`` on every rank. Objects travel in ember's
    checkpoint format and are read back with ``weights_only=True`` (tensors, numbers, strings,
    lists, tuples, dicts...), so no process ever unpickles bytes from another."""
    comm = _comm("all_gather_object", group)
    n = comm.Get_size()
    if len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries; it "
                         f"needs world_size ({n})")
    data = _encode(obj)
    sizes = np.zeros(n, np.int64)
    comm.Allgather(np.array([data.size], np.int64), sizes)
    counts, displs = _spans(sizes)
    out = np.empty(int(sizes.sum()), np.uint8)
    comm.Allgatherv(data, [out, (counts, displs), _mpi.module().BYTE])
    for k in range(n):
        object_list[k] = _decode(out[displs[k]:displs[k] + counts[k]])


def broadcast_object_list(object_list: list, src: int = 0, group: Any = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """Rank ``src``'s ``object_list`` into every rank's list (same length), in place."""
    comm = _comm("broadcast_object_list", group)
    root = src if group_src is None else group_src
    mine = comm.Get_rank() == root
    parts = [_encode(o) for o in object_list] if mine else []
    sizes = np.array([p.size for p in parts] if mine else [0] * len(object_list), np.int64)
    comm.Bcast(sizes, root=root)
    data = np.concatenate(parts) if mine and parts else np.empty(int(sizes.sum()), np.uint8)
    comm.Bcast(data, root=root)
    if not mine:
        counts, displs = _spans(sizes)
        for k in range(len(object_list)):
            object_list[k] = _decode(data[displs[k]:displs[k] + counts[k]])


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int = 0,
                  group: Any = None, group_dst: int | None = None) -> None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst`` (None elsewhere)."""
    comm = _comm("gather_object", group)
    root = dst if group_dst is None else group_dst
    n, mine = comm.Get_size(), comm.Get_rank() == root
    if mine and (object_gather_list is None or len(object_gather_list) != n):
        raise ValueError(f"gather_object: rank {root} needs an object_gather_list of world_size "
                         f"({n}) entries")
    data = _encode(obj)
    sizes = np.zeros(n, np.int64) if mine else None
    comm.Gather(np.array([data.size], np.int64), sizes, root=root)
    if mine:
        counts, displs = _spans(sizes)
        out = np.empty(int(sizes.sum()), np.uint8)
        comm.Gatherv(data, [out, (counts, displs), _mpi.module().BYTE], root=root)
        for k in range(n):
            object_gather_list[k] = _decode(out[displs[k]:displs[k] + counts[k]])
    else:
        comm.Gatherv(data, None, root=root)


all_to_all = _needs_group("all_to_all")
all_to_all_single = _needs_group("all_to_all_single")
batch_isend_irecv = _needs_group("batch_isend_irecv")
monitored_barrier = _needs_group("monitored_barrier")
new_group = _needs_group("new_group")
new_subgroups = _needs_group("new_subgroups")
reduce_scatter = _needs_group("reduce_scatter")
scatter_object_list = _needs_group("scatter_object_list")
send_object_list = _needs_group("send_object_list")
recv_object_list = _needs_group("recv_object_list")


def __getattr__(name: str) -> object:
    from .._missing import attribute_error

    raise attribute_error("torch.distributed", name)
