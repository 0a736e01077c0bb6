"""Atomic writes for ``save`` (and ``ember.utils.safetensors``): a temporary file in the same
folder, fsync, ``os.replace``, then fsync of the folder; temporaries left by a crashed writer on
this host are cleaned up."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from typing import IO

_TMP_SUFFIX = ".tmp"


def _host_tag() -> str:
    """8 hex digits naming this machine in temporary file names (pids are per machine)."""
    import socket

    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _temp_name(base: str) -> str:
    """``.<base>.ember-<host>-<pid>-<random>.tmp``: recognisably ours, for this path."""
    return f".{base}.ember-{_host_tag()}-{os.getpid()}-{secrets.token_hex(6)}{_TMP_SUFFIX}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or we cannot tell: keep its file
    return True


def _remove_stale_temps(folder: str, base: str) -> None:
    """Delete temporary files that an interrupted ``save`` to ``base`` left behind.

    Only names made by ``_temp_name`` for this exact file name, written on this machine by
    a process that no longer exists, and only regular files (never links) are removed.
    """
    pat = re.compile(re.escape(f".{base}.ember-") + r"([0-9a-f]{8})-([0-9]{1,10})-[0-9a-f]{12}"
                     + re.escape(_TMP_SUFFIX))
    host = _host_tag()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = pat.fullmatch(e.name)
        if m is None or m.group(1) != host or int(m.group(2)) == os.getpid():
            continue
        try:
            if not e.is_file(follow_symlinks=False) or _pid_alive(int(m.group(2))):
                continue
            os.unlink(e.path)
        except OSError:
            pass


def _atomic_write(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Write through a temporary file in ``path``'s folder: flush, fsync, rename, fsync folder.

    The temporary file is created with its final permission bits (an existing file's mode, or
    the umask-derived default for a new file), so it is never more readable than the result.
    Temporary files left by an interrupted save to the same path are removed first.
    """
    if os.path.islink(path):
        path = os.path.realpath(path)  # replace the file the link points to, not the link
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"ember.save: {path!r} is a directory; give a file name")
    base = os.path.basename(path)
    _remove_stale_temps(folder, base)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)  # keep an existing file's mode
    except OSError:
        mode = None  # a new file: 0o666 less the umask, as open() gives it
    tmp = os.path.join(folder, _temp_name(base))
    # the kernel applies the umask to the creation mode, so the file starts at most as open
    # as the final mode; fchmod then sets an existing file's exact bits (never wider)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o666 if mode is None else mode)
    try:
        if mode is not None and hasattr(os, "fchmod"):
            try:
                os.fchmod(fd, mode)
            except OSError:
                pass
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
