"""Joining the machines of a torchrun-style multi-node launch into one MPI world.

With ``ember launch --nnodes M --node-rank R --master-addr A --master-port P`` run on each of M
machines, each machine's ``mpiexec`` starts its own MPI world of ``--nproc-per-node`` processes.
At ``init_process_group`` they become one: node 0's rank 0 opens an MPI port and hands its name,
over a plain TCP connection at ``A:P``, to each other node in turn; the nodes join with MPI's
``Comm_accept``/``Comm_connect`` and merge, then the world is renumbered node by node (rank =
node_rank * nproc_per_node + local_rank, as torchrun numbers them). MPICH's host-file launch
(``ember launch --hostfile``) needs none of this: one ``mpiexec`` starts every machine's
processes in one world.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
from typing import Any

__all__ = ["joined_world"]


def joined_world(mpi: Any, timeout: datetime.timedelta) -> Any:
    """MPI's world, or, in a multi-node torchrun-style launch, every node's processes joined."""
    nnodes = int(os.environ.get("EMBER_NNODES", "1"))
    if nnodes == 1:
        return mpi.COMM_WORLD
    node = int(os.environ["EMBER_NODE_RANK"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    local = mpi.COMM_WORLD
    per_node = local.Get_size()
    seconds = timeout.total_seconds()
    if node == 0:
        comm = _host(mpi, local, addr, port, nnodes, seconds)
    else:
        comm = _join(mpi, local, addr, port, node, seconds)
    if comm.Get_size() != nnodes * per_node:
        raise RuntimeError(f"init_process_group: {comm.Get_size()} processes joined; "
                           f"{nnodes} nodes x {per_node} were expected (every node needs the same "
                           "--nproc-per-node)")
    return comm.Split(0, node * per_node + local.Get_rank())


def _host(mpi: Any, local: Any, addr: str, port: int, nnodes: int, seconds: float) -> Any:
    """Node 0: accept the other nodes one at a time."""
    server = None
    name = None
    if local.Get_rank() == 0:
        server = socket.create_server(("", port), reuse_port=False)
        server.settimeout(seconds)
        name = mpi.Open_port()
    comm = local
    joined = [0]
    for _ in range(nnodes - 1):
        news = None
        if comm.Get_rank() == 0:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                news = ("late", None)
            else:
                with conn:
                    their = int(conn.makefile().readline())
                    conn.sendall(name.encode() + b"\n")
                news = ("node", their)
        news = comm.bcast(news, root=0)
        if news[0] == "late":
            missing = sorted(set(range(nnodes)) - set(joined))
            raise RuntimeError(f"init_process_group: node(s) {missing} did not join within "
                               f"{datetime.timedelta(seconds=seconds)} (is `ember launch "
                               f"--node-rank N` running on each, with --master-addr {addr} "
                               f"--master-port {port}?)")
        joined.append(news[1])
        inter = comm.Accept(name if comm.Get_rank() == 0 else None, root=0)
        comm = inter.Merge(high=False)
    if server is not None:
        mpi.Close_port(name)
        server.close()
    return comm


def connect_tcp(addr: str, port: int, timeout: float) -> socket.socket:
    """``socket.create_connection``, refusing a socket connected to itself: while nothing
    listens on a local port in the ephemeral range, Linux may pick that same port for the
    connecting socket and join it to itself (a "simultaneous open"), which then holds the port
    node 0 wants to listen on. Raises ``ConnectionRefusedError`` then, so callers retry."""
    conn = socket.create_connection((addr, port), timeout=timeout)
    try:
        if conn.getsockname() == conn.getpeername():
            raise ConnectionRefusedError(f"a connection to {addr}:{port} reached itself")
    except BaseException:
        conn.close()
        raise
    return conn


def _join(mpi: Any, local: Any, addr: str, port: int, node: int, seconds: float) -> Any:
    """Another node: ask node 0 for its MPI port, connect, then take part in later joins."""
    name = None
    if local.Get_rank() == 0:
        deadline = time.monotonic() + seconds
        while True:
            try:
                with connect_tcp(addr, port, 5) as conn:
                    conn.sendall(f"{node}\n".encode())
                    name = conn.makefile().readline().strip()
                break
            except OSError:
                if time.monotonic() > deadline:
                    name = ""
                    break
                time.sleep(0.2)  # node 0 may not be listening yet
    name = local.bcast(name, root=0)
    if not name:
        raise RuntimeError(f"init_process_group: node 0 was not reachable at {addr}:{port} "
                           "(start `ember launch --node-rank 0 ...` there, with the same "
                           "--master-addr and --master-port)")
    comm = local.Connect(name, root=0).Merge(high=True)
    per_node = local.Get_size()
    nnodes = int(os.environ["EMBER_NNODES"])
    while comm.Get_size() < nnodes * per_node:  # later nodes join through every member
        news = comm.bcast(None, root=0)
        if news[0] == "late":
            raise RuntimeError("init_process_group: not every node joined in time (see node 0)")
        comm = comm.Accept(None, root=0).Merge(high=False)
    return comm
