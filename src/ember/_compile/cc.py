"""Building generated C: the system compiler, an on-disk cache per user, loading with ctypes.

The compiler is ``$CC``, else the first of ``cc``, ``gcc``, ``clang`` on ``PATH``, run with
``FLAGS`` (``-ffp-contract=off`` and no ``-ffast-math``: each operation rounds as NumPy's does)
and ``-march=native`` where the compiler takes it. One translation unit per compiled graph.
Libraries are cached in ``$EMBER_CACHE_DIR`` (default ``~/.cache/ember/kernels``) under a key
hashed from the source, the compiler's path and version, the flags and the CPU (its model and
feature flags, what ``-march=native`` compiles for); each is written to a temporary file and renamed into
place (two processes compiling at once both end with a whole file), with a digest of its bytes
beside it: an entry whose bytes do not match is rebuilt, never loaded. No compiler, or a build
that fails: one warning, and ``build`` returns None (the caller keeps NumPy).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
import warnings
from typing import Any

# -fno-trapping-math: without it GCC keeps every comparison of the selections (maximum, relu,
# clamp) behind a branch and vectorizes nothing (measured: 25x slower on random data); it lets
# the compiler ignore floating-point exception *flags*, never a value. -march=native is added when
# the compiler takes it (the cache key names the CPU model and its feature flags).
FLAGS = ("-O3", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
         "-std=c99")
NATIVE = "-march=native"
stats: dict[str, Any] = {"builds": 0, "cache_hits": 0, "failures": 0, "build_seconds": 0.0}
_warned = False
_compiler_info: dict[str, Any] = {}  # CC path -> its --version line (or None: unusable)


def cache_dir() -> str:
    d = os.environ.get("EMBER_CACHE_DIR")
    return d or os.path.join(os.path.expanduser("~"), ".cache", "ember", "kernels")


def compiler() -> str | None:
    """The C compiler's path, or None."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc) or (cc if os.path.isfile(cc) else None)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _version(cc: str) -> str | None:
    if cc not in _compiler_info:
        try:
            out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
            _compiler_info[cc] = out.stdout.splitlines()[0] if out.returncode == 0 and \
                out.stdout else None
        except (OSError, subprocess.SubprocessError):
            _compiler_info[cc] = None
    return _compiler_info[cc]


def _cpu() -> str:
    """The CPU model and its feature flags (what ``-march=native`` compiles for)."""
    found = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k = line.split(":", 1)[0].strip()
                if k in ("model name", "flags", "Features", "CPU part") and k not in found:
                    found[k] = line.split(":", 1)[1].strip()
                if len(found) >= 2:
                    break
    except OSError:
        pass
    return " | ".join(found.values()) or platform.machine() + " " + platform.processor()


def _warn(msg: str) -> None:
    global _warned
    stats["failures"] += 1
    if not _warned:
        _warned = True
        warnings.warn(f"ember.compile: {msg}; compiled regions run through NumPy instead "
                      "(set EMBER_COMPILE_NATIVE=0 to skip code generation)", RuntimeWarning,
                      stacklevel=4)


def key(source: str, cc: str, version: str) -> str:
    h = hashlib.sha256()
    for part in (source, cc, version, " ".join(FLAGS), NATIVE, _cpu(), platform.machine()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def build(source: str) -> Any:
    """The loaded library (``ctypes.CDLL``) of ``source``, from the cache or compiled now; None
    (after one warning per process) when no compiler works."""
    cc = compiler()
    version = _version(cc) if cc else None
    if cc is None or version is None:
        _warn(f"no working C compiler (CC={os.environ.get('CC', '')!r}, cc, gcc, clang)")
        return None
    k = key(source, cc, version)
    d = cache_dir()
    so = os.path.join(d, f"k{k}.so")
    sig = so + ".sha256"
    try:
        with open(sig) as f:
            expected = f.read().strip()
    except OSError:
        expected = None
    if expected is not None and _digest(so) == expected:
        try:
            lib = ctypes.CDLL(so)
            stats["cache_hits"] += 1
            return lib
        except OSError:
            pass  # unloadable: rebuilt below
    try:
        os.makedirs(d, exist_ok=True)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ember-cc-") as tmp:
            src = os.path.join(tmp, f"k{k}.c")  # (a fixed name: identical builds, identical bytes)
            with open(src, "w") as f:
                f.write(source)
            out = os.path.join(tmp, f"k{k}.so")
            r = subprocess.run([cc, *FLAGS, NATIVE, "-o", out, src], capture_output=True,
                               text=True, timeout=300)
            if r.returncode != 0:  # a compiler without -march=native: the portable build
                r = subprocess.run([cc, *FLAGS, "-o", out, src], capture_output=True, text=True,
                                   timeout=300)
            if r.returncode != 0:
                _warn(f"the C compiler {cc} failed: {r.stderr.strip()[:500]}")
                return None
            with open(out, "rb") as f:
                data = f.read()
        _atomic_write(so, data)
        _atomic_write(sig, hashlib.sha256(data).hexdigest().encode())
        stats["builds"] += 1
        stats["build_seconds"] += time.perf_counter() - t0
        return ctypes.CDLL(so)
    except (OSError, subprocess.SubprocessError) as e:
        _warn(f"building generated C failed ({e})")
        return None
