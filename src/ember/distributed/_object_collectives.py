"""Collectives on Python objects: ``all_gather_object``, ``broadcast_object_list``,
``gather_object``, ``scatter_object_list``, ``send_object_list``/``recv_object_list``.

Objects travel in ember's checkpoint format and are read back with ``weights_only=True``
(tensors, numbers, strings, lists, tuples, dicts...), so no process ever unpickles bytes that
another process sent.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from . import _mpi
from .distributed_c10d import _member, _root, agree

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "recv_object_list",
           "scatter_object_list", "send_object_list"]


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
    """Every rank's ``obj`` into ``object_list[r]`` on every rank."""
    pg = _member("all_gather_object", group)
    if pg is None:
        return
    n = pg.size()
    if len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries; it "
                         f"needs world_size ({n})")
    agree(pg, "all_gather_object()")
    data = _encode(obj)
    sizes = np.zeros(n, np.int64)
    pg._comm.Allgather(np.array([data.size], np.int64), sizes)
    counts, displs = _spans(sizes)
    out = np.empty(int(sizes.sum()), np.uint8)
    pg._comm.Allgatherv(data, [out, (counts, displs), _mpi.module().BYTE])
    for k in range(n):
        object_list[k] = _decode(out[displs[k]:displs[k] + counts[k]])


def broadcast_object_list(object_list: list, src: int = 0, group: Any = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """Rank ``src``'s ``object_list`` into every rank's list (same length), in place."""
    pg = _member("broadcast_object_list", group)
    if pg is None:
        return
    root = _root(pg, "broadcast_object_list", src, group_src)
    agree(pg, f"broadcast_object_list({len(object_list)} objects, src={pg._ranks[root]})")
    mine = pg.rank() == root
    parts = [_encode(o) for o in object_list] if mine else []
    sizes = np.array([p.size for p in parts] if mine else [0] * len(object_list), np.int64)
    pg._comm.Bcast(sizes, root=root)
    data = np.concatenate(parts) if mine and parts else np.empty(int(sizes.sum()), np.uint8)
    pg._comm.Bcast(data, root=root)
    if not mine:
        counts, displs = _spans(sizes)
        for k in range(len(object_list)):
            object_list[k] = _decode(data[displs[k]:displs[k] + counts[k]])


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int = 0,
                  group: Any = None, group_dst: int | None = None) -> None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst`` (None elsewhere)."""
    pg = _member("gather_object", group)
    if pg is None:
        return
    root = _root(pg, "gather_object", dst, group_dst)
    n, mine = pg.size(), pg.rank() == root
    if mine and (object_gather_list is None or len(object_gather_list) != n):
        raise ValueError(f"gather_object: rank {pg._ranks[root]} needs an object_gather_list of "
                         f"world_size ({n}) entries")
    agree(pg, f"gather_object(dst={pg._ranks[root]})")
    data = _encode(obj)
    sizes = np.zeros(n, np.int64) if mine else None
    pg._comm.Gather(np.array([data.size], np.int64), sizes, root=root)
    if mine:
        counts, displs = _spans(sizes)
        out = np.empty(int(sizes.sum()), np.uint8)
        pg._comm.Gatherv(data, [out, (counts, displs), _mpi.module().BYTE], root=root)
        for k in range(n):
            object_gather_list[k] = _decode(out[displs[k]:displs[k] + counts[k]])
    else:
        pg._comm.Gatherv(data, None, root=root)


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None,
                        src: int = 0, group: Any = None, group_src: int | None = None) -> None:
    """Rank ``src``'s ``scatter_object_input_list[r]`` into ``scatter_object_output_list[0]`` on
    rank ``r``."""
    pg = _member("scatter_object_list", group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = _root(pg, "scatter_object_list", src, group_src)
    n, mine = pg.size(), pg.rank() == root
    if mine and (scatter_object_input_list is None or len(scatter_object_input_list) != n):
        raise ValueError(f"scatter_object_list: rank {pg._ranks[root]} needs "
                         f"scatter_object_input_list of world_size ({n}) objects")
    agree(pg, f"scatter_object_list(src={pg._ranks[root]})")
    parts = [_encode(o) for o in scatter_object_input_list] if mine else []
    sizes = np.array([p.size for p in parts], np.int64) if mine else None
    size = np.zeros(1, np.int64)
    pg._comm.Scatter(sizes, size, root=root)
    out = np.empty(int(size[0]), np.uint8)
    if mine:
        counts, displs = _spans(sizes)
        pg._comm.Scatterv([np.concatenate(parts), (counts, displs), _mpi.module().BYTE], out,
                          root=root)
    else:
        pg._comm.Scatterv(None, out, root=root)
    scatter_object_output_list[0] = _decode(out)


def send_object_list(object_list: list, dst: int, group: Any = None, device: Any = None,
                     group_dst: int | None = None) -> None:
    """Send the objects of ``object_list`` to rank ``dst`` (which calls ``recv_object_list``)."""
    pg = _member("send_object_list", group)
    if pg is None:
        return
    peer = _root(pg, "send_object_list", dst, group_dst)
    parts = [_encode(o) for o in object_list]
    sizes = np.array([p.size for p in parts], np.int64)
    pg._comm.Send(sizes, dest=peer, tag=1)
    pg._comm.Send(np.concatenate(parts) if parts else np.empty(0, np.uint8), dest=peer, tag=2)


def recv_object_list(object_list: list, src: int | None = None, group: Any = None,
                     device: Any = None, group_src: int | None = None) -> int:
    """Receive ``len(object_list)`` objects from rank ``src`` into ``object_list``; returns the
    sender's rank."""
    pg = _member("recv_object_list", group)
    if pg is None:
        return -1
    mpi = _mpi.module()
    peer = mpi.ANY_SOURCE if src is None and group_src is None else _root(
        pg, "recv_object_list", src, group_src)
    sizes = np.empty(len(object_list), np.int64)
    status = mpi.Status()
    pg._comm.Recv(sizes, source=peer, tag=1, status=status)
    sender = status.Get_source()
    data = np.empty(int(sizes.sum()), np.uint8)
    pg._comm.Recv(data, source=sender, tag=2)
    counts, displs = _spans(sizes)
    for k in range(len(object_list)):
        object_list[k] = _decode(data[displs[k]:displs[k] + counts[k]])
    return pg._ranks[sender]
