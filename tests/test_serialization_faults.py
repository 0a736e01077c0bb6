"""Checkpoint faults and hostile input (issue 10): temp-file permissions and stale temp files,
duplicate zip records, corruption under ``mmap=True``, reader objects smuggled through tensor
state, and safetensors dtypes ember cannot hold. PyTorch's behaviour is the reference where it
has one."""

from __future__ import annotations

import io
import os
import stat
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import serialization as ser
from ember.nn.parameter import Parameter
from ember.serialization import UnsafeCheckpointError, load, save
from ember.serialization import _atomic as ser_atomic

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch for parity")


# ----------------------------------------------------------------------------------------------
# 1. temporary files: created private, stale ones cleaned up
# ----------------------------------------------------------------------------------------------


def _record_creation_modes(monkeypatch):
    """Wrap os.open: the mode each temp file has the instant it exists."""
    seen = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *a, **kw):
        fd = real_open(path, flags, mode, *a, **kw)
        if str(path).endswith(".tmp"):
            seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    monkeypatch.setattr(os, "open", spy)
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_temp_file_is_never_more_open_than_the_checkpoint(tmp_path, monkeypatch):
    old = os.umask(0o022)
    try:
        path = tmp_path / "ckpt.pt"
        save({"v": 1}, path)
        os.chmod(path, 0o600)  # a private checkpoint
        modes = _record_creation_modes(monkeypatch)
        save({"v": 2}, path)
        assert modes == [0o600]  # not 0o644 first and narrowed afterwards
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        os.chmod(path, 0o640)  # wider than the umask allows: kept exactly
        save({"v": 3}, path)
        assert modes[-1] & ~0o640 == 0
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
        os.umask(0o077)  # a new file: the umask decides, as for open()
        save({"v": 4}, tmp_path / "new.pt")
        assert modes[-1] == 0o600
        assert stat.S_IMODE(os.stat(tmp_path / "new.pt").st_mode) == 0o600
        assert load(path)["v"] == 3
    finally:
        os.umask(old)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path):
    host = ser_atomic._host_tag()
    dead = _dead_pid()
    names = {
        "stale": f".ckpt.pt.ember-{host}-{dead}-0123456789ab.tmp",
        "live (this process)": f".ckpt.pt.ember-{host}-{os.getpid()}-0123456789ab.tmp",
        "live (parent)": f".ckpt.pt.ember-{host}-{os.getppid()}-0123456789ab.tmp",
        "other host": f".ckpt.pt.ember-{'0' * 8 if host != '0' * 8 else '1' * 8}-{dead}-0123456789ab.tmp",
        "other file": f".other.pt.ember-{host}-{dead}-0123456789ab.tmp",
        "not ours": ".ckpt.pt.0123456789ab.tmp",
        "prefix only": f".ckpt.pt.ember-{host}-{dead}-0123456789ab.tmp.keep",
    }
    for n in names.values():
        (tmp_path / n).write_bytes(b"partial")
    link = tmp_path / f".ckpt.pt.ember-{host}-{dead}-ba9876543210.tmp"
    link.symlink_to(tmp_path / "target")
    (tmp_path / "target").write_bytes(b"keep me")
    save({"v": 1}, tmp_path / "ckpt.pt")
    left = {p.name for p in tmp_path.iterdir()}
    assert names["stale"] not in left
    for what, n in names.items():
        if what != "stale":
            assert n in left, what
    assert link.is_symlink() and (tmp_path / "target").read_bytes() == b"keep me"
    assert load(tmp_path / "ckpt.pt")["v"] == 1


def test_temp_names_are_recognisable():
    n = ser_atomic._temp_name("ckpt.pt")
    assert n.startswith(".ckpt.pt.ember-") and n.endswith(".tmp")
    assert f"-{os.getpid()}-" in n


# ----------------------------------------------------------------------------------------------
# 2. duplicate zip records
# ----------------------------------------------------------------------------------------------


def _with_duplicate_storage(first: bytes, second: bytes) -> bytes:
    buf = io.BytesIO()
    save({"w": ember.tensor(np.frombuffer(first, np.float32).copy())}, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(out, "w") as zf:
            for info in src.infolist():
                zf.writestr(info.filename, src.read(info.filename))
                if info.filename.endswith("/data/0"):
                    zf.writestr(info.filename, second)
    return out.getvalue()


def test_duplicate_records_are_refused():
    good = np.arange(4, dtype=np.float32).tobytes()
    evil = np.full(4, 666, np.float32).tobytes()
    raw = _with_duplicate_storage(good, evil)
    with pytest.raises(UnsafeCheckpointError, match=r"duplicate records \['archive/data/0'\]"):
        load(io.BytesIO(raw))
    with pytest.raises(UnsafeCheckpointError, match="duplicate"):
        load(io.BytesIO(raw), weights_only=False)


def test_local_header_name_must_match_the_directory():
    buf = io.BytesIO()
    save({"w": ember.ones(4)}, buf)
    raw = bytearray(buf.getvalue())
    i = raw.index(b"archive/data/0")  # the first occurrence is the local header's
    raw[i:i + 14] = b"archive/data/9"
    with pytest.raises(UnsafeCheckpointError, match="local header names"):
        load(io.BytesIO(bytes(raw)))


# ----------------------------------------------------------------------------------------------
# 3. mmap verifies the CRC too
# ----------------------------------------------------------------------------------------------


def test_mmap_refuses_a_corrupted_storage(tmp_path):
    path = tmp_path / "m.pt"
    save({"w": ember.arange(64.0)}, path)
    raw = bytearray(path.read_bytes())
    i = raw.index(np.arange(64.0, dtype=np.float32).tobytes()) + 40
    raw[i] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(UnsafeCheckpointError, match="CRC"):
        load(path, mmap=True)
    with pytest.raises(UnsafeCheckpointError, match="CRC"):
        load(path)


def test_corruption_fuzz_mmap_and_read_agree(tmp_path):
    """800 one-byte corruptions of a small file (half inside the storages' bytes): with and
    without mmap, each either loads the exact original values or is refused (never silently
    different weights)."""
    src = tmp_path / "src.pt"
    ref = {"w": ember.arange(48.0).reshape(6, 8), "b": ember.arange(5, dtype=ember.int64)}
    save(ref, src)
    raw = src.read_bytes()
    rng = np.random.default_rng(1)
    path = tmp_path / "c.pt"
    spans = []
    for arr in (np.arange(48, dtype=np.float32), np.arange(5, dtype=np.int64)):
        start = raw.index(arr.tobytes())
        spans.append((start, start + arr.nbytes))
    outcomes = {"refused": 0, "equal": 0}
    for n in range(800):
        data = bytearray(raw)
        if n % 2:
            lo, hi = spans[n // 2 % 2]
            i = int(rng.integers(lo, hi))
        else:
            i = int(rng.integers(len(data)))
        data[i] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(data))
        for mm in (True, False):
            try:
                r = load(path, mmap=mm)
            except (UnsafeCheckpointError, RuntimeError, ValueError, TypeError, OSError):
                outcomes["refused"] += 1
                continue
            assert set(r) == set(ref), (i, mm)
            for k in ref:
                assert r[k].dtype == ref[k].dtype and tuple(r[k].shape) == tuple(ref[k].shape)
                assert np.array_equal(np.asarray(r[k]._data), np.asarray(ref[k]._data)), (i, mm)
            outcomes["equal"] += 1
    assert outcomes["refused"] > 800  # every storage byte matters, and most others


# ----------------------------------------------------------------------------------------------
# 4. reader internals cannot reach the result through tensor state
# ----------------------------------------------------------------------------------------------


def _u(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _zip(pkl: bytes, storages: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", b"little")
        for k, v in storages.items():
            zf.writestr(f"archive/data/{k}", v)
    return buf.getvalue()


PID0 = b"(" + _u("storage") + _g("torch", "FloatStorage") + _u("0") + _u("cpu") + b"K\x04tQ"
ARGS = b"(" + PID0 + b"K\x00K\x04\x85K\x01\x85\x89" + _g("collections", "OrderedDict") + b")Rt"


def _from_type_expr(state: bytes) -> bytes:
    """_rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, args, <state>)"""
    return (_g("torch._tensor", "_rebuild_from_type_v2") + b"("
            + _g("torch._utils", "_rebuild_tensor_v2") + _g("torch", "Tensor") + ARGS + state
            + b"tR")


def _from_type(state: bytes) -> bytes:
    return b"\x80\x02" + _from_type_expr(state) + b"."


def _param_with_state(state: bytes) -> bytes:
    return (b"\x80\x02" + _g("torch._utils", "_rebuild_parameter_with_state") + b"("
            + _g("torch._utils", "_rebuild_tensor_v2") + ARGS + b"R\x88"
            + _g("collections", "OrderedDict") + b")R" + state + b"tR.")


STATES = {
    "a storage as an attribute": b"}" + _u("x") + PID0 + b"s",
    "a storage type as an attribute": b"}" + _u("x") + _g("torch", "FloatStorage") + b"s",
    "a rebuild function as an attribute": b"}" + _u("x") + _g("torch._utils", "_rebuild_tensor_v2") + b"s",
    "a storage inside a list attribute": b"}" + _u("x") + b"]" + PID0 + b"as",
    "a storage inside a nested dict": b"}" + _u("x") + b"}" + _u("y") + PID0 + b"ss",
    "the torch.Tensor marker": b"}" + _u("x") + _g("torch", "Tensor") + b"s",
    "ember's gradient slot": b"}" + _u("_grad") + b"Ns",
    "ember's version slot": b"}" + _u("_version") + b"]s",
    "ember's base slot": b"}" + _u("_base") + b"Ns",
    "a slot": b"}" + _u("_data") + b"Ns",
    "a dunder": b"}" + _u("__class__") + b"Ns",
}


@pytest.mark.parametrize("what", sorted(STATES))
@pytest.mark.parametrize("kind", ["tensor", "parameter"])
def test_reader_objects_never_reach_the_result(what, kind):
    build = _from_type if kind == "tensor" else _param_with_state
    raw = _zip(build(STATES[what]), {"0": bytes(16)})
    with pytest.raises(UnsafeCheckpointError):
        load(io.BytesIO(raw))


def test_plain_tensor_state_loads():
    raw = _zip(_from_type(b"}" + _u("note") + _u("hi") + b"s"), {"0": bytes(16)})
    t = load(io.BytesIO(raw))
    assert type(t) is ember.Tensor and t.note == "hi"
    raw = _zip(_param_with_state(b"}" + _u("note") + _u("hi") + b"s"), {"0": bytes(16)})
    p = load(io.BytesIO(raw))
    assert isinstance(p, Parameter) and p.note == "hi"


@needs_torch
def test_tensor_attributes_roundtrip_with_torch():
    t = ember.ones(2)
    t.note = "x"
    p = Parameter(ember.zeros(3))
    p.tag = {"lr": 0.5}
    buf = io.BytesIO()
    save({"t": t, "p": p}, buf)
    buf.seek(0)
    r = torch.load(buf)  # weights_only=True in torch too
    assert r["t"].note == "x" and r["p"].tag == {"lr": 0.5}
    assert isinstance(r["p"], torch.nn.Parameter)
    tt = torch.ones(2)
    tt.note = "y"
    buf = io.BytesIO()
    torch.save({"t": tt}, buf)
    buf.seek(0)
    assert load(buf)["t"].note == "y"


def test_internals_cannot_reach_allowlisted_code():
    """An allowlisted class gets only rebuilt values as arguments and state."""
    calls = []

    class Box:
        def __init__(self, *args):
            calls.append(args)

        def __setstate__(self, state):
            calls.append(state)

    Box.__module__, Box.__qualname__ = "mymod", "Box"
    pkl_newobj = b"\x80\x02" + _g("mymod", "Box") + b")\x81"
    cases = {
        "REDUCE with a storage": b"\x80\x02" + _g("mymod", "Box") + b"(" + PID0 + b"tR.",
        "NEWOBJ with a storage": b"\x80\x02" + _g("mymod", "Box") + b"(" + PID0 + b"t\x81.",
        "BUILD with a storage": pkl_newobj + b"}" + _u("s") + PID0 + b"sb.",
        "REDUCE with a tensor holding a storage": b"\x80\x02" + _g("mymod", "Box") + b"("
        + _from_type_expr(b"}" + _u("s") + PID0 + b"s") + b"tR.",
        "REDUCE with a state dict holding a storage in _metadata": b"\x80\x02" + _g("mymod", "Box")
        + b"(" + _g("collections", "OrderedDict") + b")R}" + _u("m") + PID0 + b"sbtR.",
        "BUILD with a rebuild function": pkl_newobj + b"}" + _u("f") + _g("torch._utils", "_rebuild_tensor_v2") + b"sb.",
    }
    with ser.safe_globals([Box]):
        for what, pkl in cases.items():
            with pytest.raises(UnsafeCheckpointError):
                load(io.BytesIO(_zip(pkl, {"0": bytes(16)})))
            assert calls == [], what
        ok = load(io.BytesIO(_zip(pkl_newobj + b"}" + _u("n") + b"K\x05sb.", {})))
    assert type(ok) is Box and calls == [{"n": 5}]


# ----------------------------------------------------------------------------------------------
# 5. safetensors dtypes ember cannot hold
# ----------------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("dt,code", [("float8_e4m3fn", "F8_E4M3"),  # (C64: tests/test_complex.py)
                                     ("float8_e5m2", "F8_E5M2"), ("uint16", "U16")])
def test_safetensors_refuses_dtypes_ember_lacks(tmp_path, dt, code):
    stt = pytest.importorskip("safetensors.torch")
    from ember.utils import safetensors as est

    f = tmp_path / "m.safetensors"
    stt.save_file({"ok": torch.ones(2), "layer.w": torch.ones(2, dtype=getattr(torch, dt))}, f)
    for loader in (lambda: est.load_file(f), lambda: est.load(Path(f).read_bytes())):
        with pytest.raises(TypeError) as e:
            loader()
        msg = str(e.value)
        assert "'layer.w'" in msg and code in msg and "BF16, F32, F64" in msg
