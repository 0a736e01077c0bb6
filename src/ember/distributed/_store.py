"""``torch.distributed``'s key-value stores: ``TCPStore`` (a server in the master process, every
process a client over TCP), ``HashStore`` (in one process), ``FileStore`` (a file shared by the
processes) and ``PrefixStore`` (a namespace inside another store).

The API is PyTorch's: ``set(key, value)``, ``get(key) -> bytes`` (waiting up to the timeout for
the key), ``add(key, n) -> int``, ``compare_set``, ``append``, ``multi_get``/``multi_set``,
``check``, ``wait``, ``delete_key``, ``num_keys``, ``list_keys``, ``set_timeout``/``timeout``.
Values are bytes (a str is stored encoded); a wait that times out raises ``DistStoreError`` with
PyTorch's message. A TCPStore made with ``world_size`` counts its clients under the key
``init/`` (as PyTorch's does) and its master waits for all of them when ``wait_for_workers``.
"""

from __future__ import annotations

import datetime
import pickle
import socket
import socketserver
import struct
import threading
import time
from typing import Any

from ._names import DistStoreError

__all__ = ["Store", "TCPStore", "HashStore", "FileStore", "PrefixStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _timeout_error(seconds: float, keys: list[str]) -> DistStoreError:
    return DistStoreError(f"wait timeout after {int(seconds * 1000)}ms, keys: "
                          + ", ".join("/" + k for k in keys))


class _Table:
    """The keys and values with a condition to wait on: the state behind HashStore and a
    TCPStore's server."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()

    def call(self, op: str, args: tuple, timeout: float) -> Any:
        with self.cond:
            if op == "set":
                self.data[args[0]] = args[1]
            elif op == "get":
                self._wait([args[0]], timeout)
                return self.data[args[0]]
            elif op == "add":
                value = int(self.data.get(args[0], b"0")) + int(args[1])
                self.data[args[0]] = str(value).encode()
                self.cond.notify_all()
                return value
            elif op == "compare_set":
                key, expected, desired = args
                current = self.data.get(key)
                if (current is None and expected == b"") or current == expected:
                    self.data[key] = desired
                    self.cond.notify_all()
                    return desired
                return expected if current is None else current
            elif op == "append":
                self.data[args[0]] = self.data.get(args[0], b"") + args[1]
            elif op == "multi_get":
                self._wait(list(args[0]), timeout)
                return [self.data[k] for k in args[0]]
            elif op == "multi_set":
                self.data.update(zip(args[0], args[1]))
            elif op == "check":
                return all(k in self.data for k in args[0])
            elif op == "wait":
                self._wait(list(args[0]), args[1] if args[1] is not None else timeout)
            elif op == "delete_key":
                return self.data.pop(args[0], None) is not None
            elif op == "num_keys":
                return len(self.data)
            elif op == "list_keys":
                return list(self.data)
            else:
                raise ValueError(f"unknown store operation {op!r}")
            self.cond.notify_all()
            return None

    def _wait(self, keys: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(k in self.data for k in keys):
            left = deadline - time.monotonic()
            if left <= 0:
                raise _timeout_error(timeout, [k for k in keys if k not in self.data])
            self.cond.wait(left)


class Store:
    """The key-value store interface (``torch.distributed.Store``)."""

    def __init__(self, timeout: datetime.timedelta = _DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout

    def _call(self, op: str, *args: Any) -> Any:
        raise NotImplementedError

    @property
    def timeout(self) -> datetime.timedelta:
        return self._timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self._timeout = timeout

    def set(self, key: str, value: str | bytes) -> None:
        self._call("set", key, _bytes(value))

    def get(self, key: str) -> bytes:
        return self._call("get", key)

    def add(self, key: str, value: int) -> int:
        return self._call("add", key, int(value))

    def compare_set(self, key: str, expected_value: str | bytes,
                    desired_value: str | bytes) -> bytes:
        return self._call("compare_set", key, _bytes(expected_value), _bytes(desired_value))

    def append(self, key: str, value: str | bytes) -> None:
        self._call("append", key, _bytes(value))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return self._call("multi_get", list(keys))

    def multi_set(self, keys: list[str], values: list[str | bytes]) -> None:
        self._call("multi_set", list(keys), [_bytes(v) for v in values])

    def check(self, keys: list[str]) -> bool:
        return self._call("check", list(keys))

    def wait(self, keys: list[str], timeout: datetime.timedelta | None = None) -> None:
        self._call("wait", list(keys), None if timeout is None else timeout.total_seconds())

    def delete_key(self, key: str) -> bool:
        return self._call("delete_key", key)

    def num_keys(self) -> int:
        return self._call("num_keys")

    def list_keys(self) -> list[str]:
        return self._call("list_keys")

    def has_extended_api(self) -> bool:
        return True


class HashStore(Store):
    """A store in this process's memory (threads share it)."""

    def __init__(self) -> None:
        super().__init__()
        self._table = _Table()

    def _call(self, op: str, *args: Any) -> Any:
        return self._table.call(op, args, self._timeout.total_seconds())


class PrefixStore(Store):
    """``PrefixStore(prefix, store)``: the keys of ``store`` under ``prefix + "/"``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix, self.underlying_store = prefix, store

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def _call(self, op: str, *args: Any) -> Any:
        if op in ("multi_get", "multi_set", "check", "wait"):
            args = ([self._key(k) for k in args[0]], *args[1:])
        elif op not in ("num_keys", "list_keys"):
            args = (self._key(args[0]), *args[1:])
        result = self.underlying_store._call(op, *args)
        if op == "list_keys":
            head = self.prefix + "/"
            return [k[len(head):] for k in result if k.startswith(head)]
        return result


# --- TCPStore: length-prefixed pickled (op, args, timeout) requests --------------------------

def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv(sock: socket.socket) -> Any:
    head = _recv_exact(sock, 8)
    return pickle.loads(_recv_exact(sock, struct.unpack("!Q", head)[0]))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("TCPStore: the connection was closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        table: _Table = self.server.table  # type: ignore[attr-defined]
        while True:
            try:
                op, args, timeout = _recv(self.request)
            except (ConnectionError, OSError, EOFError):
                return
            try:
                reply = ("ok", table.call(op, args, timeout))
            except Exception as e:  # noqa: BLE001 - sent back to the client, raised there
                reply = ("err", e)
            try:
                _send(self.request, reply)
            except OSError:
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class TCPStore(Store):
    """``TCPStore(host_name, port, world_size=None, is_master=False, timeout=300 s,
    wait_for_workers=True)``: the master serves the keys on ``port`` (0: a free port, then
    ``store.port``); every process, the master too, is a client."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: datetime.timedelta = _DEFAULT_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True) -> None:
        super().__init__(timeout)
        self.host, self.world_size = host_name, world_size
        self._server: _Server | None = None
        if is_master:
            try:
                self._server = _Server((host_name, int(port)), _Handler)
            except OSError as e:
                raise RuntimeError(f"The server socket has failed to listen on any local "
                                   f"network address. port: {port}, useIpv6: 0, code: "
                                   f"{e.errno}, name: {e.strerror}") from None
            self._server.table = _Table()  # type: ignore[attr-defined]
            threading.Thread(target=self._server.serve_forever, daemon=True,
                             name="ember-TCPStore").start()
            port = self._server.server_address[1]
        self.port = int(port)
        self._lock = threading.Lock()
        self._sock = self._connect()
        if world_size is not None:
            self.add("init/", 1)
            if is_master and wait_for_workers:
                self._wait_workers(world_size)

    @property
    def libuvBackend(self) -> bool:  # noqa: N802 - PyTorch's name
        return False

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self._timeout.total_seconds()
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=None)
            except OSError:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"TCPStore: could not connect to {self.host}:"
                                         f"{self.port} within {self._timeout}") from None
                time.sleep(0.05)

    def _wait_workers(self, world_size: int) -> None:
        deadline = time.monotonic() + self._timeout.total_seconds()
        while int(self.get("init/")) < world_size:
            if time.monotonic() > deadline:
                raise DistStoreError(f"Timed out after {self._timeout} waiting for "
                                     f"{world_size} workers to join the TCPStore")
            time.sleep(0.01)

    def _call(self, op: str, *args: Any) -> Any:
        with self._lock:
            _send(self._sock, (op, args, self._timeout.total_seconds()))
            status, value = _recv(self._sock)
        if status == "err":
            raise value
        return value

    def __getstate__(self) -> Any:
        raise TypeError("cannot pickle a TCPStore: make one in each process (host, port)")

    def __del__(self) -> None:
        try:
            self._sock.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class FileStore(Store):
    """``FileStore(file_name, world_size=-1)``: keys kept in a file that processes on one
    machine share (each operation holds an exclusive lock on it)."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path, self.world_size = file_name, world_size
        with open(file_name, "ab"):
            pass

    def _call(self, op: str, *args: Any) -> Any:
        import fcntl

        limit = self._timeout.total_seconds()
        if op == "wait":  # polled below as "check"
            keys, given = args
            limit = given if given is not None else limit
            op, args = "check", (keys,)
            blocking = keys
        else:
            blocking = [args[0]] if op == "get" else list(args[0]) if op == "multi_get" else None
        deadline = time.monotonic() + limit
        while True:
            with open(self.path, "r+b") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                raw = f.read()
                table = _Table()
                table.data = pickle.loads(raw) if raw else {}
                ready = blocking is None or all(k in table.data for k in blocking)
                if ready:
                    result = table.call(op, args, 0.0)
                    if op not in ("get", "multi_get", "check", "num_keys", "list_keys"):
                        f.seek(0)
                        f.truncate()
                        f.write(pickle.dumps(table.data))
                        f.flush()
            if ready:
                return None if blocking is not None and op == "check" else result
            if time.monotonic() > deadline:
                missing = [k for k in blocking if k not in table.data]
                raise RuntimeError(f"Timeout waiting for key: {', '.join(missing)} after "
                                     f"{int(limit * 1000)} ms")
            time.sleep(0.01)


