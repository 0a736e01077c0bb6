"""Process groups and the collectives on tensors (PyTorch's ``torch.distributed.distributed_c10d``).

A process group is an MPI communicator. Every collective first *agrees*: each rank tells every
other rank of the group which call it is about to make (op, dtype, shape, root), over a separate
communicator, so a mismatch raises on every rank with each rank's call named, and a rank that
never arrives is named when the group's ``timeout`` runs out, instead of MPI reading the wrong
bytes or waiting forever. Then the collective itself runs through MPI's non-blocking call on the
tensor's own array, in place, and ``async_op=True`` returns its :class:`Work`.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import sys
import time
from typing import Any

import numpy as np

from . import _mpi, _nccl, _rendezvous
from ._names import (
    _COMING,
    Backend,
    DistBackendError,
    GroupMember,
    ReduceOp,
    _no_group,
    default_pg_timeout,
    group,
)

__all__ = [
    "ProcessGroup", "Work", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "destroy_process_group",
    "gather", "get_backend", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "breakpoint", "get_default_backend_for_device", "get_pg_count",
    "get_process_group_ranks", "get_rank", "get_world_size", "init_process_group", "irecv",
    "is_initialized", "isend", "monitored_barrier", "new_group", "new_subgroups",
    "new_subgroups_by_enumeration", "recv", "supports_complex",
    "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
]

Work = _mpi.Work


class ProcessGroup:
    """A group of processes: the world after ``init_process_group``, or one from ``new_group``.

    ``rank()``/``size()`` are this process's rank in the group and the group's size."""

    def __init__(self, comm: Any, backend: str, ranks: list[int],
                 timeout: datetime.timedelta, label: str | None = None) -> None:
        self._comm = comm
        self._checks = comm.Dup()  # the agreement messages never meet the program's own sends
        self._backend = backend  # the backend that runs the collectives
        # what get_backend answers: PyTorch's "undefined" for a group made with backend=None
        self._label = backend if label is None else label
        self._ranks = ranks  # global rank of each group rank
        self._timeout = timeout
        self._calls = 0

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:  # "cpu:gloo" -> "gloo", as PyTorch's
        return self._backend.split(",")[0].split(":")[-1]

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend!r}, ranks={self._ranks})"


_WORLD: dict[str, Any] = {}  # "group" once init_process_group has run
_GROUPS: list[ProcessGroup] = []  # every group this process belongs to, the world first


# -- the process group ----------------------------------------------------------------------
def is_initialized() -> bool:
    """Whether ``init_process_group`` has run in this process."""
    return bool(_WORLD)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the default process group: MPI's world, started by ``mpiexec``.

    ``backend`` is ``"gloo"`` or ``"mpi"`` (both MPI in ember; ``None`` means gloo); ``rank`` and
    ``world_size``, given or in the environment (``RANK``, ``WORLD_SIZE``), must agree with MPI's.
    ``store`` (a ``TCPStore``, ``FileStore``, ``HashStore``...) is accepted as PyTorch accepts it,
    with ``rank`` and ``world_size`` given and no ``init_method``; MPI's world is still the one
    the launcher started (a one-process world needs no launcher).
    """
    if _WORLD:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:  # PyTorch's conditions (and its AssertionError)
        if init_method is not None:
            raise AssertionError("Cannot specify both init_method and store.")
        if world_size <= 0:
            raise AssertionError("world_size must be positive if using store")
        if rank < 0:
            raise AssertionError("rank must be non-negative if using store")
    name = Backend(backend) if backend else Backend.GLOO
    if "nccl" in name or "cuda:" in name:
        from . import _nccl

        _nccl.check_available(backend)
    elif name not in (Backend.GLOO, Backend.MPI) and not name.startswith("cpu:"):
        raise ValueError(f"Invalid backend: {backend!r}; ember runs 'gloo' and 'mpi' over MPI, "
                         "'nccl' over CuPy's NCCL")
    timeout = timeout or default_pg_timeout
    comm = _rendezvous.joined_world(_mpi.module(), timeout)
    size, me = comm.Get_size(), comm.Get_rank()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", size))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", me))
    if want_size != size or want_rank != me:
        raise RuntimeError(
            f"init_process_group: this process is rank {me} of {size} in MPI's world, but "
            f"rank={want_rank}, world_size={want_size} was asked (arguments or RANK/WORLD_SIZE): "
            f"start the processes with `ember launch --nproc-per-node {want_size} script.py` (or "
            f"MPI's own `mpiexec -n {want_size} ember run script.py`), so the two agree"
            + ("; a store does not join processes started apart (each is its own MPI world)"
               if store is not None and size < want_size else "")
        )
    world = ProcessGroup(comm, str(name), list(range(size)), timeout,
                         None if backend else Backend.UNDEFINED)
    _WORLD["group"] = world
    _GROUPS[:] = [world]
    group.WORLD = GroupMember.WORLD = world


def destroy_process_group(group: Any = None) -> None:
    """Leave the default process group (MPI itself stays up until the process exits)."""
    if not _WORLD:
        raise AssertionError(
            "Process group cannot be None (destroy_process_group: no process group was "
            "initialized; " + _COMING + ")"
        )
    if group is not None and group is not _WORLD["group"]:
        _GROUPS[:] = [g for g in _GROUPS if g is not group]
        return
    _WORLD.clear()
    _GROUPS.clear()
    globals()["group"].WORLD = GroupMember.WORLD = None


def new_group(ranks: list[int] | None = None, timeout: datetime.timedelta | None = None,
              backend: str | None = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None) -> Any:
    """A group of the given global ``ranks`` (all when None). Every process of the world must call
    it, members or not, as in PyTorch; a non-member gets ``GroupMember.NON_GROUP_MEMBER``."""
    world = _group("new_group", None)
    members = sorted(set(range(world.size()) if ranks is None else ranks))
    if not members or members[0] < 0 or members[-1] >= world.size():
        raise ValueError(f"new_group: ranks {ranks} must be in [0, {world.size() - 1}]")
    mpi = _mpi.module()
    comm = world._comm.Create(world._comm.Get_group().Incl(members))
    if comm == mpi.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, Backend(backend) if backend else world._backend, members,
                      timeout or world._timeout, None if backend else world._label)
    _GROUPS.append(pg)
    return pg


def new_subgroups(group_size: int | None = None, group: Any = None, timeout: Any = None,
                  backend: str | None = None, pg_options: Any = None,
                  group_desc: str | None = None) -> tuple[Any, list]:
    """Split the world into groups of ``group_size`` consecutive ranks (default: one per node,
    ``LOCAL_WORLD_SIZE``); returns (this process's group, every group)."""
    world = _group("new_subgroups", None)
    n = world.size()
    size = group_size or int(os.environ.get("LOCAL_WORLD_SIZE", n))
    if size <= 0 or n % size:
        raise ValueError(f"new_subgroups: the world ({n} processes) must divide into groups of "
                         f"{size}")
    mine, every = None, []
    for start in range(0, n, size):
        pg = new_group(list(range(start, start + size)), timeout=timeout, backend=backend)
        every.append(pg)
        if pg is not GroupMember.NON_GROUP_MEMBER:
            mine = pg
    return mine, every


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list[list[int]], timeout: Any = None,
                                 backend: str | None = None, pg_options: Any = None,
                                 group_desc: str | None = None) -> tuple[Any, list]:
    """A group for each list of global ranks; returns (this process's group or None, every group)."""
    mine, every = None, []
    for ranks in ranks_per_subgroup_list:
        pg = new_group(ranks, timeout=timeout, backend=backend)
        every.append(pg)
        if pg is not GroupMember.NON_GROUP_MEMBER:
            mine = pg
    return mine, every


def get_pg_count() -> int:
    """How many process groups this process has made (the world included)."""
    return len(_GROUPS)


def get_default_backend_for_device(device: Any) -> str:
    """``"gloo"`` for the CPU, ``"nccl"`` for CUDA (PyTorch's defaults)."""
    kind = getattr(device, "type", str(device)).split(":")[0]
    table = {"cpu": "gloo", "cuda": "nccl"}
    if kind not in table:
        raise ValueError(f"Default backend not registered for device : {device}")
    return table[kind]


def supports_complex(reduce_op: Any) -> bool:
    """Whether a reduction is defined on complex tensors (not MAX, MIN, PRODUCT and the bitwise
    ones)."""
    return _op_name(reduce_op) not in ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR")


def breakpoint(rank: int = 0, skip: int = 0, timeout_s: int = 3600) -> None:  # noqa: A001
    """Stop in the debugger on ``rank`` while the other ranks wait at a barrier."""
    if get_rank() == rank:
        import pdb

        pdb.Pdb(skip=["ember.distributed.*"]).set_trace(sys._getframe(1))
    barrier()


def _group(what: str, grp: Any) -> ProcessGroup:
    if not _WORLD:
        raise _no_group(what)
    if grp is None or grp is GroupMember.WORLD:
        return _WORLD["group"]
    if not isinstance(grp, ProcessGroup):
        raise TypeError(f"{what}: group must be a ProcessGroup from new_group, got {grp!r}")
    return grp


def _member(what: str, grp: Any) -> ProcessGroup | None:
    """The group to run on, or None where this process is not in it (PyTorch returns then)."""
    if grp == GroupMember.NON_GROUP_MEMBER:
        return None
    return _group(what, grp)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside it."""
    pg = _member("get_rank", group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of processes in ``group`` (the default group when None); -1 outside it."""
    pg = _member("get_world_size", group)
    return -1 if pg is None else pg.size()


def get_backend(group: Any = None) -> str:
    """The backend name given to ``init_process_group`` (or ``new_group``): ``"undefined"`` for a
    group made with ``backend=None``, as PyTorch answers (gloo runs its collectives here)."""
    return _group("get_backend", group)._label


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``."""
    return _group("get_global_rank", group)._ranks[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank of ``global_rank`` inside ``group``."""
    pg = _group("get_group_rank", group)
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._ranks.index(global_rank)


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks in ``group``."""
    return list(_group("get_process_group_ranks", group)._ranks)


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


def _root(pg: ProcessGroup, what: str, glob: int | None, local: int | None) -> int:
    """A collective's root as a rank inside ``pg`` (PyTorch's src/dst are global ranks)."""
    if local is not None:
        return local
    if glob not in pg._ranks:
        raise ValueError(f"{what}: rank {glob} is not in the group (its global ranks: {pg._ranks})")
    return pg._ranks.index(glob)


# -- agreement before each collective, and waiting with a deadline ---------------------------
_SIG = 512  # bytes of one call's description


def describe(t: Any) -> str:
    """``float32[2, 3]``: how a tensor appears in the agreement messages."""
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"


def agree(pg: ProcessGroup, call: str) -> None:
    """Check that every rank of ``pg`` is making the same ``call`` (e.g.
    ``all_reduce(float32[4], SUM)``): each rank sends its description to every other. Raises on
    every rank, naming each rank's call, when they differ; names the ranks that have not arrived
    when the group's timeout runs out."""
    n, me = pg.size(), pg.rank()
    if n == 1:
        return
    pg._calls += 1
    tag = pg._calls % 30000
    theirs = {r: np.empty(_SIG, np.uint8) for r in range(n) if r != me}
    recvs = {r: pg._checks.Irecv(buf, source=r, tag=tag) for r, buf in theirs.items()}
    mine = _signature(call)
    sends = [pg._checks.Isend(mine, dest=r, tag=tag) for r in theirs]
    late = wait_all(pg, list(recvs.values()) + sends)
    if late:
        missing = sorted(pg._ranks[r] for r, req in recvs.items() if req in late)
        for req in late:
            req.Cancel()
        raise DistBackendError(
            f"{call.split('(')[0]}: timed out after {pg._timeout} waiting for rank(s) {missing} "
            f"of {pg._ranks}; this process (rank {pg._ranks[me]}) called {call}. A rank that "
            "never arrives is usually one that took another branch, raised, or is still in an "
            "earlier step: every rank must make the same collectives in the same order"
        )
    if any(not np.array_equal(b[:_DIGEST], mine[:_DIGEST]) for b in theirs.values()):
        calls = {me: call} | {r: _text(b) for r, b in theirs.items()}
        lines = "\n".join(f"  rank {pg._ranks[r]}: {calls[r]}" for r in sorted(calls))
        raise RuntimeError(
            f"{call.split('(')[0]}: the ranks disagree on the collective they are running "
            f"(ops, dtypes and shapes must match on every rank):\n{lines}"
        )


_DIGEST = 16


def _signature(call: str) -> np.ndarray:
    """A digest of the whole description, then as much of its text as fits."""
    raw = call.encode()
    out = np.zeros(_SIG, np.uint8)
    out[:_DIGEST] = np.frombuffer(hashlib.blake2b(raw, digest_size=_DIGEST).digest(), np.uint8)
    text = raw[:_SIG - _DIGEST]
    out[_DIGEST:_DIGEST + len(text)] = np.frombuffer(text, np.uint8)
    return out


def _text(sig: np.ndarray) -> str:
    text = bytes(sig[_DIGEST:]).rstrip(b"\0").decode(errors="replace")
    return text + ("..." if sig[-1] else "")


def wait_all(pg: ProcessGroup, requests: list, timeout: Any = None) -> list:
    """Wait for MPI ``requests`` until the group's timeout (or ``timeout``); the ones still
    pending then (empty when all completed)."""
    mpi = _mpi.module()
    if all(isinstance(r, mpi.Request) for r in requests):
        testall = mpi.Request.Testall
    else:  # NCCL's requests (CUDA events) among them
        testall = lambda reqs: all([r.Test() for r in reqs])  # noqa: E731
    if testall(requests):
        return []
    limit = timeout if timeout is not None else pg._timeout
    seconds = limit.total_seconds() if isinstance(limit, datetime.timedelta) else float(limit)
    now = time.monotonic()
    deadline, spin_until = now + seconds, now + _SPIN_SECONDS
    pause = 1e-5
    while not testall(requests):
        now = time.monotonic()
        if now > deadline:
            return [r for r in requests if not r.Test()]
        if now > spin_until:  # then yield the core: ranks may share one
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
    return []


_SPIN_SECONDS = 2e-3  # MPI progresses only inside its calls: poll hard at first, as its Wait does


class _TimedWork(Work):
    """A collective's work whose ``wait()`` gives up, naming the op, at the group's timeout."""

    def __init__(self, pg: ProcessGroup, call: str, requests: list, then: Any = None,
                 result: Any = None) -> None:
        super().__init__(requests, then, result)
        self._pg, self._call = pg, call

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            if wait_all(self._pg, self._requests, timeout):
                raise DistBackendError(f"{self._call}: did not complete within "
                                       f"{timeout or self._pg._timeout} on rank "
                                       f"{self._pg._ranks[self._pg.rank()]}")
            if self._then is not None:
                self._then()
            self._done = True
        return True


# -- collectives ----------------------------------------------------------------------------
def _array(t: Any, what: str, pg: ProcessGroup | None = None) -> Any:
    """The tensor's own array, which a collective reads and writes in place: a NumPy array, or a
    CuPy one in a group whose backend is NCCL."""
    from .._tensor_base import TensorBase

    if not isinstance(t, TensorBase):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    if t.device.type != "cpu" and (pg is None or pg._backend != "nccl"):
        raise RuntimeError(
            f"{what}: the tensor is on {t.device}; the {pg._backend if pg else 'gloo'!r} backend "
            "moves CPU tensors (init_process_group('nccl') for CUDA tensors): call it on t.cpu() "
            "and copy back"
        )
    if t.device.type == "cpu" and pg is not None and pg._backend == "nccl":
        raise RuntimeError(f"{what}: the NCCL backend moves CUDA tensors and this one is on the "
                           "CPU; move it with .cuda() or use a 'gloo' group")
    arr = t._data
    if t.device.type != "cpu" and what not in _NCCL_CALLS:
        raise RuntimeError(f"{what}: ember's NCCL backend runs {', '.join(sorted(_NCCL_CALLS))} on "
                           f"CUDA tensors; for {what}, move the tensors to the CPU (a 'gloo' "
                           "group from new_group(backend='gloo'))")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what}: Tensors must be contiguous (got shape {tuple(t.shape)} with "
                         "strides of a view); pass t.contiguous()")
    return arr


_NCCL_CALLS = {"all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor"}


def _on_gpu(arr: Any) -> bool:
    return type(arr) is not np.ndarray


def _run(pg: ProcessGroup, call: str, requests: list, then: Any, async_op: bool,
         result: Any = None) -> Work | None:
    work = _TimedWork(pg, call, requests, then, result)
    if async_op:
        return work
    work.wait()
    return None


def _average(arr: np.ndarray, n: int) -> Any:
    """What ReduceOp.AVG adds after MPI's SUM: divide by the group's size, in place."""
    return lambda: np.divide(arr, n, out=arr)


def _op_name(op: Any) -> str:
    return getattr(op, "name", str(op)).split(".")[-1]


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over every process, in place: afterwards every rank holds the result."""
    pg = _member("all_reduce", group)
    if pg is None:
        return None
    arr = _array(tensor, "all_reduce", pg)
    name = _op_name(op)
    if name == "AVG" and arr.dtype.kind not in "fc":
        raise ValueError(f"all_reduce: ReduceOp.AVG needs a floating tensor, got {tensor.dtype}")
    call = f"all_reduce({describe(tensor)}, {name})"
    agree(pg, call)
    if _on_gpu(arr):
        tensor._bump_version()
        return _run(pg, call, [_nccl.all_reduce(pg, arr, name)], None, async_op)
    req = pg._comm.Iallreduce(_mpi.module().IN_PLACE, _mpi.as_buffer(arr), op=_mpi.mpi_op(name))
    tensor._bump_version()
    return _run(pg, call, [req], _average(arr, pg.size()) if name == "AVG" else None, async_op)


def broadcast(tensor: Any, src: int = 0, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` from rank ``src`` into the same tensor on every other rank."""
    pg = _member("broadcast", group)
    if pg is None:
        return None
    arr = _array(tensor, "broadcast", pg)
    root = _root(pg, "broadcast", src, group_src)
    call = f"broadcast({describe(tensor)}, src={pg._ranks[root]})"
    agree(pg, call)
    if _on_gpu(arr):
        req = _nccl.broadcast(pg, arr, root)
    else:
        req = pg._comm.Ibcast(_mpi.as_buffer(arr), root=root)
    tensor._bump_version()
    return _run(pg, call, [req], None, async_op)


def reduce(tensor: Any, dst: int = 0, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` over every process into rank ``dst``'s tensor (the others keep theirs)."""
    pg = _member("reduce", group)
    if pg is None:
        return None
    arr = _array(tensor, "reduce", pg)
    root = _root(pg, "reduce", dst, group_dst)
    name = _op_name(op)
    call = f"reduce({describe(tensor)}, {name}, dst={pg._ranks[root]})"
    agree(pg, call)
    mine = pg.rank() == root
    send = _mpi.module().IN_PLACE if mine else _mpi.as_buffer(arr)
    req = pg._comm.Ireduce(send, _mpi.as_buffer(arr) if mine else None, op=_mpi.mpi_op(name),
                           root=root)
    if mine:
        tensor._bump_version()
    then = _average(arr, pg.size()) if name == "AVG" and mine else None
    return _run(pg, call, [req], then, async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor``, concatenated along dim 0 (or stacked) into ``output_tensor``."""
    pg = _member("all_gather_into_tensor", group)
    if pg is None:
        return None
    out = _array(output_tensor, "all_gather_into_tensor", pg)
    inp = _array(input_tensor, "all_gather_into_tensor", pg)
    if out.size != inp.size * pg.size() or out.dtype != inp.dtype:
        raise ValueError(
            f"all_gather_into_tensor: output {tuple(output_tensor.shape)} {output_tensor.dtype} "
            f"must hold world_size ({pg.size()}) x input {tuple(input_tensor.shape)} "
            f"{input_tensor.dtype}"
        )
    call = f"all_gather_into_tensor({describe(input_tensor)})"
    agree(pg, call)
    if _on_gpu(inp):
        req = _nccl.all_gather(pg, out, inp)
    else:
        req = pg._comm.Iallgather(_mpi.as_buffer(inp), _mpi.as_buffer(out))
    output_tensor._bump_version()
    return _run(pg, call, [req], None, async_op)


def all_gather(tensor_list: list, tensor: Any, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list[r]`` on every rank."""
    pg = _member("all_gather", group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; it needs "
                         f"world_size ({pg.size()})")
    inp = _array(tensor, "all_gather", pg)
    call = f"all_gather({describe(tensor)})"
    agree(pg, call)
    buf = np.empty((pg.size(),) + inp.shape, inp.dtype)
    req = pg._comm.Iallgather(_mpi.as_buffer(inp), _mpi.as_buffer(buf))
    return _run(pg, call, [req], lambda: _unstack(buf, tensor_list, "all_gather"), async_op)


def _check_list(pg: ProcessGroup, what: str, root: int, tensors: list | None, name: str) -> None:
    """The root of a gather/scatter needs one tensor per rank."""
    if pg.rank() == root and (tensors is None or len(tensors) != pg.size()):
        raise ValueError(f"{what}: rank {pg._ranks[root]} needs a {name} of world_size "
                         f"({pg.size()}) tensors")


def _unstack(buf: np.ndarray, tensors: list, what: str) -> None:
    for t, part in zip(tensors, buf, strict=True):
        _array(t, what)[...] = part
        t._bump_version()


def gather(tensor: Any, gather_list: list | None = None, dst: int = 0, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (None on the others)."""
    pg = _member("gather", group)
    if pg is None:
        return None
    root = _root(pg, "gather", dst, group_dst)
    inp = _array(tensor, "gather", pg)
    mine = pg.rank() == root
    _check_list(pg, "gather", root, gather_list, "gather_list")
    call = f"gather({describe(tensor)}, dst={pg._ranks[root]})"
    agree(pg, call)
    buf = np.empty((pg.size(),) + inp.shape, inp.dtype) if mine else None
    req = pg._comm.Igather(_mpi.as_buffer(inp), _mpi.as_buffer(buf) if mine else None, root=root)
    then = (lambda: _unstack(buf, gather_list, "gather")) if mine else None
    return _run(pg, call, [req], then, async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int = 0, group: Any = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``scatter_list[r]`` into ``tensor`` on rank ``r``."""
    pg = _member("scatter", group)
    if pg is None:
        return None
    root = _root(pg, "scatter", src, group_src)
    out = _array(tensor, "scatter", pg)
    mine = pg.rank() == root
    _check_list(pg, "scatter", root, scatter_list, "scatter_list")
    call = f"scatter({describe(tensor)}, src={pg._ranks[root]})"
    agree(pg, call)
    buf = (np.ascontiguousarray(np.stack([_array(t, "scatter", pg) for t in scatter_list]))
           if mine else None)
    req = pg._comm.Iscatter(_mpi.as_buffer(buf) if mine else None, _mpi.as_buffer(out),
                            root=root)
    tensor._bump_version()
    return _run(pg, call, [req], None, async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` over every rank and give rank ``r`` the ``r``-th equal block of dim 0."""
    pg = _member("reduce_scatter_tensor", group)
    if pg is None:
        return None
    out = _array(output, "reduce_scatter_tensor", pg)
    inp = _array(input, "reduce_scatter_tensor", pg)
    if inp.size != out.size * pg.size() or inp.dtype != out.dtype:
        raise ValueError(f"reduce_scatter_tensor: input {tuple(input.shape)} {input.dtype} must "
                         f"be world_size ({pg.size()}) x output {tuple(output.shape)} "
                         f"{output.dtype}")
    name = _op_name(op)
    call = f"reduce_scatter_tensor({describe(input)}, {name})"
    agree(pg, call)
    if _on_gpu(inp):
        output._bump_version()
        return _run(pg, call, [_nccl.reduce_scatter(pg, out, inp, name)], None, async_op)
    req = pg._comm.Ireduce_scatter_block(_mpi.as_buffer(inp), _mpi.as_buffer(out),
                                         op=_mpi.mpi_op(name))
    output._bump_version()
    return _run(pg, call, [req], _average(out, pg.size()) if name == "AVG" else None, async_op)


def reduce_scatter(output: Any, input_list: list, op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    """Reduce ``input_list[r]`` over every rank into rank ``r``'s ``output``."""
    pg = _member("reduce_scatter", group)
    if pg is None:
        return None
    out = _array(output, "reduce_scatter", pg)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors; it needs "
                         f"world_size ({pg.size()})")
    parts = [_array(t, "reduce_scatter", pg) for t in input_list]
    if any(p.shape != out.shape or p.dtype != out.dtype for p in parts):
        raise ValueError(f"reduce_scatter: every input must match output {describe(output)}; got "
                         f"{[describe(t) for t in input_list]}")
    name = _op_name(op)
    call = f"reduce_scatter({describe(output)}, {name})"
    agree(pg, call)
    buf = np.ascontiguousarray(np.stack(parts))
    req = pg._comm.Ireduce_scatter_block(_mpi.as_buffer(buf), _mpi.as_buffer(out),
                                         op=_mpi.mpi_op(name))
    output._bump_version()
    return _run(pg, call, [req], _average(out, pg.size()) if name == "AVG" else None, async_op)


def all_to_all_single(output: Any, input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``), send part ``r`` to rank
    ``r``, and concatenate what each rank sent this one into ``output``."""
    pg = _member("all_to_all_single", group)
    if pg is None:
        return None
    n = pg.size()
    out, inp = _array(output, "all_to_all_single", pg), _array(input, "all_to_all_single", pg)
    row_in = int(np.prod(inp.shape[1:], dtype=np.int64))
    row_out = int(np.prod(out.shape[1:], dtype=np.int64))
    ins = _splits(input_split_sizes, inp.shape[0] if inp.ndim else 0, n, "input")
    outs = _splits(output_split_sizes, out.shape[0] if out.ndim else 0, n, "output")
    if row_in != row_out or inp.dtype != out.dtype:
        raise ValueError(f"all_to_all_single: input {describe(input)} and output "
                         f"{describe(output)} need the same dtype and trailing dims")
    call = f"all_to_all_single({str(input.dtype).replace('torch.', '')}, rows of {row_in})"
    agree(pg, call)
    sc = np.array(ins, np.int64) * row_in
    rc = np.array(outs, np.int64) * row_out
    req = pg._comm.Ialltoallv([_mpi.as_buffer(inp), (sc, _starts(sc))],
                              [_mpi.as_buffer(out), (rc, _starts(rc))])
    output._bump_version()
    return _run(pg, call, [req], None, async_op)


def _splits(sizes: list[int] | None, rows: int, n: int, which: str) -> list[int]:
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(f"all_to_all_single: the {which}'s {rows} rows do not split evenly "
                             f"over {n} ranks; pass {which}_split_sizes")
        return [rows // n] * n
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {which}_split_sizes {list(sizes)} must have {n} "
                         f"entries summing to the {which}'s {rows} rows")
    return [int(s) for s in sizes]


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Send ``input_tensor_list[r]`` to rank ``r``; receive rank ``r``'s into
    ``output_tensor_list[r]``."""
    pg = _member("all_to_all", group)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both lists need world_size ({n}) tensors")
    ins = [_array(t, "all_to_all", pg) for t in input_tensor_list]
    outs = [_array(t, "all_to_all", pg) for t in output_tensor_list]
    dtypes = {a.dtype for a in ins + outs}
    if len(dtypes) > 1:
        raise ValueError(f"all_to_all: every tensor needs one dtype, got {sorted(map(str, dtypes))}")
    call = f"all_to_all({str(input_tensor_list[0].dtype).replace('torch.', '')})"
    agree(pg, call)
    send = np.concatenate([a.ravel() for a in ins]) if ins else np.empty(0)
    recv = np.empty(sum(a.size for a in outs), outs[0].dtype)
    sc = np.array([a.size for a in ins], np.int64)
    rc = np.array([a.size for a in outs], np.int64)
    req = pg._comm.Ialltoallv([_mpi.as_buffer(send), (sc, _starts(sc))],
                              [_mpi.as_buffer(recv), (rc, _starts(rc))])

    def then() -> None:
        for t, a, start, count in zip(output_tensor_list, outs, _starts(rc), rc, strict=True):
            a[...] = recv[start:start + count].reshape(a.shape)
            t._bump_version()
    return _run(pg, call, [req], then, async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every process has reached this call."""
    pg = _member("barrier", group)
    if pg is None:
        return None
    agree(pg, "barrier()")
    return _run(pg, "barrier()", [pg._comm.Ibarrier()], None, async_op)


def monitored_barrier(group: Any = None, timeout: datetime.timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it within ``timeout``."""
    pg = _member("monitored_barrier", group)
    if pg is None:
        return
    saved = pg._timeout
    pg._timeout = timeout or saved
    try:
        agree(pg, "monitored_barrier()")
    finally:
        pg._timeout = saved


# -- point to point -------------------------------------------------------------------------
def isend(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting: returns the work to ``wait()`` on."""
    pg = _member("isend", group)
    if pg is None:
        return None
    peer = _root(pg, "isend", dst, None)
    req = pg._comm.Isend(_mpi.as_buffer(_array(tensor, "isend", pg)), dest=peer, tag=tag)
    return _TimedWork(pg, f"isend({describe(tensor)}, dst={dst})", [req])


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting."""
    pg = _member("irecv", group)
    if pg is None:
        return None
    peer = _mpi.module().ANY_SOURCE if src is None else _root(pg, "irecv", src, None)
    req = pg._comm.Irecv(_mpi.as_buffer(_array(tensor, "irecv", pg)), source=peer, tag=tag)
    tensor._bump_version()
    return _TimedWork(pg, f"irecv({describe(tensor)}, src={src})", [req])


def send(tensor: Any, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst``."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src``; returns the sender's (global) rank."""
    pg = _member("recv", group)
    if pg is None:
        return -1
    mpi = _mpi.module()
    status = mpi.Status()
    peer = mpi.ANY_SOURCE if src is None else _root(pg, "recv", src, None)
    req = pg._comm.Irecv(_mpi.as_buffer(_array(tensor, "recv", pg)), source=peer, tag=tag)
    if wait_all(pg, [req]):
        req.Cancel()
        raise DistBackendError(f"recv({describe(tensor)}, src={src}): nothing arrived within "
                               f"{pg._timeout}")
    req.Wait(status)
    tensor._bump_version()
    return pg._ranks[status.Get_source()]


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every ``P2POp`` (isend/irecv) in the list; returns their works."""
    if not p2p_op_list:
        raise ValueError("batch_isend_irecv: the list of P2POp is empty")
    works = []
    for p in p2p_op_list:
        peer = p.peer if p.group_peer is None else get_global_rank(p.group, p.group_peer)
        works.append(p.op(p.tensor, peer, p.group, p.tag))
    return works
