"""The launchers of a torchrun-style multi-node job watch each other, as torchrun's agents do.

Each machine's ``ember launch`` runs its own ``mpiexec``, which ends that machine's processes
when one of them fails; the machines' processes also talk to each other after joining, and
nothing in MPI tells the other machines that one went away. So node 0's launcher listens on
``MASTER_PORT + 1`` and every other launcher keeps a connection to it: a launcher whose job
failed (or that vanished: its connection closes without "done") makes every launcher stop its
``mpiexec`` and exit non-zero, within a fraction of a second.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import subprocess
import sys
import time

from ._rendezvous import connect_tcp

__all__ = ["NodeWatch"]

_CONNECT_SECONDS = 300.0  # how long a launcher waits for node 0's to listen


class NodeWatch:
    """Node ``node`` of ``nnodes``: link to the others, then supervise a local ``mpiexec``."""

    def __init__(self, addr: str, port: int, node: int, nnodes: int) -> None:
        self.node, self.nnodes = node, nnodes
        self.addr, self.port = addr, port
        self.peers: dict[socket.socket, int] = {}  # connection -> node at the other end
        self.server: socket.socket | None = None
        self.done: set[int] = set()

    def run(self, proc: subprocess.Popen) -> int:
        """Wait for ``proc`` (this machine's mpiexec) and the other machines; its exit code, or
        the failing machine's."""
        sel = selectors.DefaultSelector()
        if self.node == 0:
            self.server = socket.create_server(("", self.port))
            self.server.setblocking(False)
            sel.register(self.server, selectors.EVENT_READ)
        else:
            conn = self._connect(proc)
            if conn is None:
                return self._stop(proc, 1, "node 0's launcher was not reachable at "
                                  f"{self.addr}:{self.port}")
            sel.register(conn, selectors.EVENT_READ)
        buffers: dict[socket.socket, bytes] = {}
        told = False
        try:
            while True:
                code = proc.poll()
                if code is not None:
                    if not told:
                        self._tell(f"{'done' if code == 0 else 'fail'} {self.node} {code}")
                        told = True
                    if code != 0 or self.node != 0:
                        return code
                    if len(self.done) == self.nnodes - 1:
                        return 0
                for key, _ in sel.select(timeout=0.1):
                    if key.fileobj is self.server:
                        conn, _ = self.server.accept()
                        sel.register(conn, selectors.EVENT_READ)
                        self.peers[conn] = -1
                        continue
                    conn = key.fileobj
                    data = conn.recv(4096)
                    if not data:  # the other launcher is gone
                        sel.unregister(conn)
                        gone = self.peers.pop(conn, -1)
                        if gone in self.done:
                            continue
                        return self._stop(proc, 1, f"the launcher of node {max(gone, 0)} "
                                          "went away")
                    buffers[conn] = buffers.get(conn, b"") + data
                    while b"\n" in buffers[conn]:
                        line, buffers[conn] = buffers[conn].split(b"\n", 1)
                        verdict = self._hear(conn, line.decode())
                        if verdict is not None:
                            return self._stop(proc, *verdict)
        finally:
            for conn in list(self.peers):
                with contextlib.suppress(OSError):
                    conn.close()
            if self.server is not None:
                self.server.close()

    def _connect(self, proc: subprocess.Popen) -> socket.socket | None:
        deadline = time.monotonic() + _CONNECT_SECONDS
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                conn = connect_tcp(self.addr, self.port, 5)
            except OSError:
                time.sleep(0.2)
                continue
            conn.sendall(f"hello {self.node} 0\n".encode())
            self.peers[conn] = 0
            return conn
        return None

    def _hear(self, conn: socket.socket, line: str) -> tuple[int, str] | None:
        """A message from another launcher; (exit code, why) when this job must stop."""
        what, node, code = line.split()
        self.peers[conn] = int(node)
        if what == "done":
            self.done.add(int(node))
        elif what == "fail":
            if self.node == 0:  # pass it on to every other machine
                self._tell(line, skip=conn)
            return int(code) or 1, f"node {node}'s processes failed (exit code {code})"
        return None

    def _tell(self, line: str, skip: socket.socket | None = None) -> None:
        for conn in list(self.peers):
            if conn is not skip:
                with contextlib.suppress(OSError):
                    conn.sendall((line + "\n").encode())

    def _stop(self, proc: subprocess.Popen, code: int, why: str) -> int:
        print(f"ember launch (node {self.node}): {why}; stopping this node's processes",
              file=sys.stderr, flush=True)
        self._tell(f"fail {self.node} {code}")
        if proc.poll() is None:
            proc.terminate()  # mpiexec passes the signal on to every process it started
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return code
