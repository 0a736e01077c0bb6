"""ember.save / ember.load: PyTorch's checkpoint format both ways, safety, atomicity, interop."""

from __future__ import annotations

import io
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
import zipfile
from collections import Counter, OrderedDict
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import _backend
from ember import serialization as ser
from ember.nn.parameter import Parameter
from ember.serialization import UnsafeCheckpointError, load, save
from ember.serialization import _save as ser_save
from ember.utils.dlpack import from_dlpack, to_dlpack
from helpers import HAVE_ML_DTYPES

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch for parity")
REPO = Path(__file__).resolve().parent.parent

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"]


def _np(t):
    return np.asarray(t._data)


def _same(a, b):
    """Bit-identical ember tensors (dtype, shape, values)."""
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    x, y = _np(a), _np(b)
    assert x.tobytes() == np.ascontiguousarray(y).tobytes() or np.array_equal(x, y)


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **kw)


def _sample(dt: str, shape=(3, 4)):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) * 50
    d = getattr(ember, dt)
    if dt == "bool":
        return ember.tensor(a > 0)
    return ember.tensor(a).to(d)


# ----------------------------------------------------------------------------------------------
# ember -> ember
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_roundtrip_every_dtype(dt):
    if dt == "bfloat16" and not HAVE_ML_DTYPES:
        pytest.skip("bfloat16 needs the bf16 extra (ml_dtypes)")
    t = _sample(dt)
    r = _roundtrip({"t": t, "zero_d": t[1, 2], "empty": t[:0]})
    _same(r["t"], t)
    _same(r["zero_d"], t[1, 2])
    assert r["zero_d"].dim() == 0
    assert tuple(r["empty"].shape) == (0, 4) and r["empty"].dtype == t.dtype


def test_roundtrip_containers_and_scalars():
    od = OrderedDict(a=1, b=2.5)
    od._metadata = OrderedDict({"": {"version": 1}, "0": {"version": 2}})
    obj = {
        "int": 7, "neg": -70000, "big": 2**80, "nbig": -(2**80), "float": 1e-300, "nan": float("nan"),
        "bool": True, "none": None, "str": "héllo\n", "bytes": b"\x00\xff", "ba": bytearray(b"xy"),
        "complex": 1 - 2j, "tuple": (1, (2, 3), ()), "list": [1, [2, [3]]], "set": {1, 2},
        "counter": Counter("aab"), "od": od, "dtype": ember.bfloat16, "dtypes": [ember.float32, ember.bool],
        "device": ember.device("cpu"), "size": ember.Size([2, 3]), "long_list": list(range(2500)),
        "npscalar": np.float32(0.5), 3: "int key", (1, 2): "tuple key",
    }
    r = _roundtrip(obj)
    for k, v in obj.items():
        if k == "nan":
            assert np.isnan(r[k])
        elif k == "npscalar":
            assert r[k] == 0.5 and type(r[k]) is float
        else:
            assert r[k] == v and type(r[k]) is type(v), k
    assert r["od"]._metadata == od._metadata
    assert type(r["size"]) is ember.Size and r["dtype"] is ember.bfloat16


def test_roundtrip_views_share_one_storage():
    base = ember.arange(24, dtype=ember.float32)
    obj = {
        "base": base,
        "view": base[2:14].view(3, 4),
        "t": base[2:14].view(3, 4).t(),
        "step": base[1::3],
        "expand": base[5:6].expand(4, 3),
    }
    buf = io.BytesIO()
    save(obj, buf)
    names = zipfile.ZipFile(buf).namelist()
    assert sum("/data/" in n for n in names) == 1  # one storage for all five views
    buf.seek(0)
    r = load(buf)
    for k, v in obj.items():
        assert np.array_equal(_np(r[k]), _np(v)), k
        assert r[k].stride() == v.stride(), k
    r["base"][5] = 100.0  # they share memory again after loading
    assert float(r["view"][0, 3]) == 100.0 and float(r["expand"][3, 2]) == 100.0
    assert float(r["t"][3, 0]) == 100.0


def test_disjoint_views_of_one_array_are_saved_apart():
    big = ember.zeros(100_000)
    buf = io.BytesIO()
    save({"a": big[:3], "b": big[-3:]}, buf)
    assert len(buf.getvalue()) < 10_000  # not the whole 400 KB array (PyTorch would save it)
    buf.seek(0)
    r = load(buf)
    assert tuple(r["a"].shape) == (3,) and tuple(r["b"].shape) == (3,)


def test_negative_and_odd_strides_are_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    flipped = ember.from_numpy(a[::-1, ::2])  # negative strides: PyTorch can't express them
    rec = np.zeros(3, dtype=[("x", np.int8), ("y", np.float32)])
    rec["y"] = [1, 2, 3]
    odd = ember.from_numpy(rec["y"])  # stride 5 bytes: not a multiple of the item size
    r = _roundtrip([flipped, odd])
    assert np.array_equal(_np(r[0]), a[::-1, ::2])
    assert np.array_equal(_np(r[1]), [1, 2, 3])


def test_same_tensor_twice_stays_one_object():
    t = ember.ones(3)
    lst = [t, t]
    r = _roundtrip({"x": lst, "y": lst})
    assert r["x"] is r["y"] and r["x"][0] is r["x"][1]


def test_recursive_list_roundtrips_and_recursive_tuple_refuses():
    a = [1]
    a.append(a)
    r = _roundtrip(a)
    assert r[1] is r
    t = ([],)
    t[0].append(t)
    with pytest.raises(TypeError, match="contains itself"):
        save(t, io.BytesIO())


def test_parameter_and_requires_grad_roundtrip():
    p = Parameter(ember.randn(2, 3))
    frozen = Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.randn(3, requires_grad=True)
    ints = Parameter(ember.arange(3), requires_grad=False)
    r = _roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "ints": ints})
    assert type(r["p"]) is Parameter and r["p"].requires_grad
    assert type(r["frozen"]) is Parameter and not r["frozen"].requires_grad
    assert type(r["leaf"]) is ember.Tensor and r["leaf"].requires_grad and r["leaf"].is_leaf
    assert type(r["ints"]) is Parameter and r["ints"].dtype == ember.int64
    _same(r["p"].detach(), p.detach())


def test_module_and_optimizer_state_roundtrip(tmp_path):
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x = ember.randn(5, 2, 6, 6)
    model(x).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    ck = load(path)
    model2 = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    model2.load_state_dict(ck["model"])
    opt2 = ember.optim.Adam(model2.parameters(), lr=1e-3)
    opt2.load_state_dict(ck["opt"])
    model.eval()
    model2.eval()
    assert np.array_equal(_np(model(x).detach()), _np(model2(x).detach()))
    assert ck["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert ck["model"]._metadata == model.state_dict()._metadata


def test_save_pickles_other_objects_as_torch_does():
    """Objects beyond tensors and plain values are pickled (as torch.save does); the default
    weights_only load refuses them, weights_only=False rebuilds them."""
    from collections import defaultdict

    for obj in ({"a": np.arange(3.0)}, defaultdict(int, a=1), frozenset([1, 2])):
        buf = io.BytesIO()
        save(obj, buf)
        buf.seek(0)
        with pytest.raises(UnsafeCheckpointError, match="weights_only=False"):
            load(buf)
        buf.seek(0)
        r = load(buf, weights_only=False)
        assert type(r) is type(obj)
        if isinstance(obj, dict) and "a" in obj and isinstance(obj["a"], np.ndarray):
            np.testing.assert_array_equal(r["a"], obj["a"])
        else:
            assert r == obj

    class Thing:  # a local class cannot be pickled, by torch.save either
        pass

    with pytest.raises((pickle.PicklingError, AttributeError)):
        save({"a": [1, Thing()]}, io.BytesIO())
    with pytest.raises(ValueError, match="protocol 2"):
        save({}, io.BytesIO(), pickle_protocol=4)
    with pytest.raises(ValueError, match="zip"):
        save({}, io.BytesIO(), _use_new_zipfile_serialization=False)
    with pytest.raises(TypeError, match="path or a binary file"):
        save({}, 42)


def test_members_are_64_byte_aligned_and_archive_named_after_file(tmp_path):
    path = tmp_path / "my_model.pt"
    save({"a": ember.ones(3), "b": ember.ones(5, dtype=ember.float64), "c": ember.tensor(1)}, path)
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names[0] == "my_model/data.pkl"
        for info in zf.infolist():
            n, m = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
            assert info.compress_type == zipfile.ZIP_STORED
        assert zf.read("my_model/byteorder") == b"little"
        assert zf.read("my_model/version") == b"3\n"
        assert zf.read("my_model/.format_version") == b"1"
        assert zf.read("my_model/.storage_alignment") == b"64"
        assert len(zf.read("my_model/.data/serialization_id")) == 40
        assert zf.testzip() is None
    buf = io.BytesIO()
    save({"a": ember.ones(3), "b": ember.ones(5, dtype=ember.float64), "c": ember.tensor(1)}, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


def test_zip64_records(monkeypatch, tmp_path):
    monkeypatch.setattr(ser_save, "_ZIP64_LIMIT", 100)  # force zip64 for every member past byte 100
    t = ember.arange(1000, dtype=ember.float32)
    path = tmp_path / "z64.pt"
    save({"t": t, "s": "x"}, path)
    raw = path.read_bytes()
    assert b"PK\x06\x06" in raw and b"PK\x06\x07" in raw
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    r = load(path)
    _same(r["t"], t)
    if torch is not None:
        assert torch.equal(torch.load(path)["t"], torch.arange(1000, dtype=torch.float32))


def test_file_objects_and_streams(tmp_path):
    t = ember.randn(4, 4)
    buf = io.BytesIO()
    buf.write(b"")
    save(t, buf)
    raw = buf.getvalue()

    class Stream(io.RawIOBase):  # not seekable
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    _same(load(Stream(raw)), t)
    _same(load(io.BufferedReader(Stream(raw))), t)
    with open(tmp_path / "f.pt", "wb") as fh:
        save(t, fh)
    with open(tmp_path / "f.pt", "rb") as fh:
        _same(load(fh), t)
    _same(load(str(tmp_path / "f.pt")), t)
    with pytest.raises(TypeError, match="path or a binary file"):
        load(12)


# ----------------------------------------------------------------------------------------------
# map_location, mmap
# ----------------------------------------------------------------------------------------------


def _cuda_checkpoint() -> bytes:
    """A checkpoint whose storages say 'cuda:0' (written from fake CUDA arrays)."""
    cpu = ember.arange(6, dtype=ember.float32)
    fake = ember.Tensor._make(_np(cpu).view(_backend.FakeCudaArray))
    assert fake.device == ember.device("cuda:0")
    buf = io.BytesIO()
    save({"w": fake, "v": ember.Tensor._make(_np(cpu)[2:].view(_backend.FakeCudaArray)),
          "c": ember.ones(2)}, buf)
    return buf.getvalue()


def test_cuda_checkpoint_needs_map_location_without_cuda():
    raw = _cuda_checkpoint()
    pkl = zipfile.ZipFile(io.BytesIO(raw)).read("archive/data.pkl")
    assert b"cuda:0" in pkl and b"cpu" in pkl
    if not _backend.cuda_available():
        with pytest.raises(RuntimeError, match="map_location") as e:
            load(io.BytesIO(raw))
        assert not isinstance(e.value, UnsafeCheckpointError)
    for ml in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage):
        r = load(io.BytesIO(raw), map_location=ml)
        assert r["w"].device == ember.device("cpu") and r["c"].device == ember.device("cpu")
        assert np.array_equal(_np(r["w"]), np.arange(6))
        assert np.shares_memory(_np(r["w"]), _np(r["v"]))
    if torch is not None:
        r = torch.load(io.BytesIO(raw), map_location="cpu")
        assert torch.equal(r["v"], torch.arange(2, 6, dtype=torch.float32))
        assert r["v"].storage_offset() == 2


def test_map_location_callable_gets_storage_and_location():
    seen = []

    def ml(storage, loc):
        seen.append((loc, tuple(storage.shape), storage.dtype))
        return None

    r = _roundtrip({"a": ember.ones(3), "b": ember.arange(4)}, map_location=ml)
    assert sorted(seen) == [("cpu", (3,), ember.float32), ("cpu", (4,), ember.int64)]
    assert r["a"].device == ember.device("cpu")
    with pytest.raises(RuntimeError, match="must return"):
        _roundtrip({"a": ember.ones(3)}, map_location=lambda s, loc: 3)
    with pytest.raises(RuntimeError):
        _roundtrip({"a": ember.ones(3)}, map_location="mps")


def test_mmap(tmp_path):
    t = ember.randn(64, 64)
    path = tmp_path / "m.pt"
    save({"t": t, "v": t[3:5]}, path)
    r = load(path, mmap=True)
    _same(r["t"], t)
    base = _np(r["t"])
    owners = []
    while base is not None:
        owners.append(type(base))
        base = getattr(base, "base", None)
    assert any(o is np.memmap or o.__name__ == "mmap" for o in owners)
    r["t"][0, 0] = 123.0  # copy-on-write: the file is unchanged
    assert float(r["v"][0, 0]) == float(t[3, 0])
    assert float(load(path)["t"][0, 0]) == float(t[0, 0])
    with pytest.raises(ValueError, match="file path"):
        load(io.BytesIO(path.read_bytes()), mmap=True)


# ----------------------------------------------------------------------------------------------
# PyTorch parity, both ways
# ----------------------------------------------------------------------------------------------


def _torch_dtype(name):
    return getattr(torch, name)


@needs_torch
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_ember_to_torch_every_dtype(dt):
    t = _sample(dt)
    buf = io.BytesIO()
    save({"t": t, "0d": t[0, 1], "nc": t.t(), "e": t[:0]}, buf)
    buf.seek(0)
    r = torch.load(buf, weights_only=True)
    ref = torch.from_numpy(_np(t).astype(np.float64) if dt == "bfloat16" else _np(t).copy())
    if dt == "bfloat16":
        ref = ref.to(torch.bfloat16)
    assert r["t"].dtype == _torch_dtype(dt)
    assert torch.equal(r["t"], ref)
    assert torch.equal(r["0d"], ref[0, 1]) and r["0d"].dim() == 0
    assert torch.equal(r["nc"], ref.t()) and r["nc"].stride() == (1, 4)
    assert r["e"].shape == (0, 4)
    assert r["nc"].untyped_storage().data_ptr() == r["t"].untyped_storage().data_ptr()


@needs_torch
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_torch_to_ember_every_dtype(dt):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 4, generator=g) * 50)
    x = x > 0 if dt == "bool" else x.to(_torch_dtype(dt))
    buf = io.BytesIO()
    torch.save({"x": x, "0d": x[1, 2], "nc": x.t(), "step": x[:, ::2], "e": x[:0]}, buf)
    buf.seek(0)
    r = load(buf)
    ref = x.float().numpy() if dt == "bfloat16" else x.numpy()
    assert r["x"].dtype == getattr(ember, dt)
    got = _np(r["x"]).astype(np.float32) if dt == "bfloat16" else _np(r["x"])
    assert np.array_equal(got, ref)
    assert r["0d"].dim() == 0 and r["nc"].stride() == (1, 4) and r["step"].stride() == (4, 2)
    assert np.shares_memory(_np(r["x"]), _np(r["step"]))
    assert tuple(r["e"].shape) == (0, 4)


@needs_torch
def test_torch_views_offsets_expand_and_parameters():
    base = torch.arange(30, dtype=torch.float32)
    obj = {
        "base": base, "mid": base[7:19].view(3, 4), "t": base[7:19].view(3, 4).t(),
        "exp": base[3:4].expand(5, 2), "diag": base[:25].view(5, 5).diagonal(),
        "param": torch.nn.Parameter(torch.ones(2, 2)),
        "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
        "leaf": torch.zeros(3, requires_grad=True),
    }
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    r = load(buf)
    for k in ("base", "mid", "t", "exp", "diag"):
        assert np.array_equal(_np(r[k]), obj[k].numpy()), k
        assert r[k].stride() == obj[k].stride(), k
        assert np.shares_memory(_np(r[k]), _np(r["base"]))
    assert type(r["param"]) is Parameter and r["param"].requires_grad
    assert type(r["frozen"]) is Parameter and not r["frozen"].requires_grad
    assert r["leaf"].requires_grad and type(r["leaf"]) is ember.Tensor


@needs_torch
def test_torch_module_state_dicts_load_into_ember_modules():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 2))
    tm(torch.randn(2, 3, 5, 5))  # updates BatchNorm running stats
    tm.eval()
    buf = io.BytesIO()
    torch.save(tm.state_dict(), buf)
    buf.seek(0)
    sd = load(buf)
    assert list(sd) == list(tm.state_dict())
    assert sd._metadata == tm.state_dict()._metadata
    em = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                       nn.Linear(4 * 5 * 5, 2))
    em.load_state_dict(sd)
    em.eval()
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 5)).astype(np.float32)
    want = tm(torch.from_numpy(x)).detach().numpy()
    got = _np(em(ember.from_numpy(x)).detach())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # and back: ember's state dict into a fresh torch module
    buf = io.BytesIO()
    save(em.state_dict(), buf)
    buf.seek(0)
    tm2 = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 2))
    tm2.load_state_dict(torch.load(buf, weights_only=True))
    tm2.eval()
    np.testing.assert_array_equal(tm2(torch.from_numpy(x)).detach().numpy(), want)


@needs_torch
def test_optimizer_state_dicts_both_ways():
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    topt = torch.optim.Adam(tm.parameters(), lr=0.1)
    tm(torch.randn(4, 3)).sum().backward()
    topt.step()
    buf = io.BytesIO()
    torch.save({"opt": topt.state_dict(), "epoch": 3, "nested": [{"a": (torch.ones(1), 2)}]}, buf)
    buf.seek(0)
    r = load(buf)
    tsd = topt.state_dict()
    assert r["opt"]["param_groups"] == tsd["param_groups"]
    for i, st in tsd["state"].items():
        for k, v in st.items():
            assert np.array_equal(_np(r["opt"]["state"][i][k]), v.numpy()), k
    assert r["epoch"] == 3 and float(r["nested"][0]["a"][0][0]) == 1.0
    em = nn.Linear(3, 2)
    eopt = ember.optim.Adam(em.parameters(), lr=0.1)
    eopt.load_state_dict(r["opt"])
    # ember -> torch
    em(ember.randn(4, 3)).sum().backward()
    eopt.step()
    buf = io.BytesIO()
    save(eopt.state_dict(), buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=True)
    assert back["param_groups"][0]["lr"] == 0.1
    assert set(back["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    topt2 = torch.optim.Adam(torch.nn.Linear(3, 2).parameters(), lr=0.1)
    topt2.load_state_dict(back)


@needs_torch
def test_torch_save_of_unsupported_dtype_is_refused_clearly():
    # (uint16/32/64 load since issue 24: tests/test_dtypes_core.py; complex since issue 32:
    # tests/test_complex.py)
    for x, word in ((torch.zeros(2, dtype=torch.float8_e4m3fn), "float8_e4m3fn"),):
        buf = io.BytesIO()
        torch.save({"x": x}, buf)
        buf.seek(0)
        with pytest.raises(UnsafeCheckpointError, match=word):
            load(buf)


@needs_torch
def test_ember_containers_and_values_load_in_torch():
    od = OrderedDict(w=ember.ones(2))
    od._metadata = OrderedDict({"": {"version": 1}})
    obj = {"dtype": ember.bfloat16, "bool_dtype": ember.bool, "dev": ember.device("cpu"),
           "size": ember.Size([2, 3]), "bytes": b"\x00\xff", "ba": bytearray(b"ab"), "set": {1, 2},
           "complex": 1 + 2j, "counter": Counter("aab"), "od": od, "big": -(2**70), "none": None,
           "nested": [(1, 2.5, "s"), {"k": [ember.zeros(1)]}], "i32": 2**31 - 1, "m": 65535}
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    r = torch.load(buf, weights_only=True)
    assert r["dtype"] is torch.bfloat16 and r["bool_dtype"] is torch.bool
    assert r["dev"] == torch.device("cpu") and r["size"] == torch.Size([2, 3])
    assert type(r["size"]) is torch.Size
    for k in ("bytes", "ba", "set", "complex", "counter", "big", "none", "i32", "m"):
        assert r[k] == obj[k] and type(r[k]) is type(obj[k]), k
    assert type(r["od"]) is OrderedDict and r["od"]._metadata == od._metadata
    assert r["nested"][0] == (1, 2.5, "s") and torch.equal(r["nested"][1]["k"][0], torch.zeros(1))


@needs_torch
def test_torch_tensor_and_parameter_attributes():
    t = torch.ones(2)
    t.note = "hi"
    p = torch.nn.Parameter(torch.ones(2))
    p.tag = 3
    buf = io.BytesIO()
    torch.save({"t": t, "p": p}, buf)
    buf.seek(0)
    r = load(buf)
    assert r["t"].note == "hi" and type(r["t"]) is ember.Tensor
    assert r["p"].tag == 3 and type(r["p"]) is Parameter and r["p"].requires_grad


def test_ember_never_imports_torch_for_checkpoints(tmp_path):
    code = (
        "import sys, io, ember\n"
        "from ember.serialization import save, load\n"
        "b = io.BytesIO(); save({'w': ember.ones(3)}, b); b.seek(0); load(b)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr


@needs_torch
def test_torch_legacy_format_is_refused(tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"a": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(UnsafeCheckpointError, match="legacy"):
        load(path)


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs the bf16 extra (ml_dtypes)")
def test_bfloat16_without_ml_dtypes(monkeypatch):
    buf = io.BytesIO()
    save({"h": ember.ones(2, dtype=ember.bfloat16)}, buf)
    monkeypatch.setattr(ember.bfloat16, "np", None)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="ml_dtypes"):
        load(buf)


# ----------------------------------------------------------------------------------------------
# malicious and malformed files: one error type, nothing executed
# ----------------------------------------------------------------------------------------------


def _u(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _i(n: int) -> bytes:
    return b"J" + struct.pack("<i", n)


P2 = b"\x80\x02"


def _zip(pkl: bytes, storages: dict[str, bytes] | None = None, prefix: str = "archive",
         method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        zf.writestr(f"{prefix}/data.pkl", pkl)
        zf.writestr(f"{prefix}/byteorder", b"little")
        for k, v in (storages or {}).items():
            zf.writestr(f"{prefix}/data/{k}", v)
        zf.writestr(f"{prefix}/version", b"3\n")
    return buf.getvalue()


def _pid(numel: int, key: str = "0", stype: str = "FloatStorage", loc: str = "cpu") -> bytes:
    return b"(" + _u("storage") + _g("torch", stype) + _u(key) + _u(loc) + _i(numel) + b"tQ"


def _tensor_pkl(numel: int, offset: int, size: tuple, stride: tuple, key: str = "0",
                stype: str = "FloatStorage", rg: bool = False) -> bytes:
    def tup(xs):
        return b"(" + b"".join(_i(x) for x in xs) + b"t"

    return (P2 + _g("torch._utils", "_rebuild_tensor_v2") + b"(" + _pid(numel, key, stype)
            + _i(offset) + tup(size) + tup(stride) + (b"\x88" if rg else b"\x89")
            + _g("collections", "OrderedDict") + b")R" + b"tR.")


def _malicious(canary: Path) -> dict[str, bytes]:
    cmd = f"touch {canary}"
    f16 = bytes(16)
    return {
        "REDUCE os.system": _zip(P2 + _g("os", "system") + b"(" + _u(cmd) + b"tR."),
        "REDUCE posix.system": _zip(P2 + _g("posix", "system") + _u(cmd) + b"\x85R."),
        "builtins.eval": _zip(P2 + _g("builtins", "eval") + _u(f"open('{canary}','w')") + b"\x85R."),
        "__builtin__.getattr": _zip(P2 + _g("__builtin__", "getattr") + b"."),
        "subprocess.Popen": _zip(P2 + _g("subprocess", "Popen") + b"(" + _u("touch") + _u(str(canary)) + b"l\x85R."),
        "smuggled in a state dict": _zip(
            P2 + _g("collections", "OrderedDict") + b")R(" + _u("w") + _g("os", "system")
            + _u(cmd) + b"\x85R" + b"u."),
        "GLOBAL attribute path": _zip(P2 + _g("torch._utils", "_rebuild_tensor_v2.__globals__") + b"."),
        "GLOBAL allowed name, wrong module": _zip(P2 + _g("os", "OrderedDict") + b")R."),
        "GLOBAL bad bytes": _zip(P2 + b"cos\xff\nsystem\n."),
        "GLOBAL no newline": _zip(P2 + b"c" + b"o" * 300),
        "STACK_GLOBAL": _zip(P2 + _u("os") + _u("system") + b"\x93" + _u(cmd) + b"\x85R."),
        "INST": _zip(P2 + b"(" + _u(cmd) + b"ios\nsystem\n."),
        "OBJ": _zip(P2 + b"(" + _g("os", "system") + _u(cmd) + b"o."),
        "NEWOBJ": _zip(P2 + _g("collections", "OrderedDict") + b")\x81."),
        "protocol-4 pickle": _zip(pickle.dumps({"a": 1}, protocol=4)),
        "protocol-0 pickle": _zip(pickle.dumps({"a": 1}, protocol=0)),
        "protocol-4 bare file": pickle.dumps(OrderedDict(a=1), protocol=4),
        "pickle with os.system, bare": pickle.dumps(_Evil(cmd), protocol=2),
        "REDUCE on a dtype": _zip(P2 + _g("torch", "float32") + b")R."),
        "REDUCE on a storage type": _zip(P2 + _g("torch", "FloatStorage") + b")R."),
        "OrderedDict with args": _zip(P2 + _g("collections", "OrderedDict") + b"]\x85R."),
        "BUILD on a list": _zip(P2 + b"]}" + _u("append") + b"Nsb."),
        "BUILD shadowing a method": _zip(P2 + _g("collections", "OrderedDict") + b")R}" + _u("keys") + b"Nsb."),
        "BUILD dunder": _zip(P2 + _g("collections", "OrderedDict") + b")R}" + _u("__class__") + b"Nsb."),
        "SETITEM on a list": _zip(P2 + b"]" + _u("k") + b"Ns."),
        "APPEND on a dict": _zip(P2 + b"}Na."),
        "storage type as a value": _zip(P2 + b"}" + _u("k") + _g("torch", "FloatStorage") + b"s."),
        "rebuild function as a value": _zip(P2 + _g("torch._utils", "_rebuild_tensor_v2") + b"."),
        "bare storage": _zip(P2 + _pid(4) + b".", {"0": f16}),
        "persistent id not a tuple": _zip(P2 + _u("0") + b"Q.", {"0": f16}),
        "persistent id of another kind": _zip(P2 + b"(" + _u("module") + _g("torch", "FloatStorage") + _u("0") + _u("cpu") + _i(4) + b"tQ.", {"0": f16}),
        "huge storage size": _zip(_tensor_pkl(2**31 - 1, 0, (4,), (1,)), {"0": f16}),
        "huge storage size (LONG1)": _zip(P2 + _g("torch._utils", "_rebuild_tensor_v2") + b"(" + b"(" + _u("storage") + _g("torch", "FloatStorage") + _u("0") + _u("cpu") + b"\x8a\x08" + (2**62).to_bytes(8, "little") + b"tQ" + _i(0) + b"(" + _i(4) + b"t(" + _i(1) + b"t\x89NtR.", {"0": f16}),
        "storage smaller than declared": _zip(_tensor_pkl(4, 0, (4,), (1,)), {"0": bytes(12)}),
        "out-of-bounds view (offset)": _zip(_tensor_pkl(4, 2, (3,), (1,)), {"0": f16}),
        "out-of-bounds view (stride)": _zip(_tensor_pkl(4, 0, (2, 2), (3, 1)), {"0": f16}),
        "out-of-bounds view (huge stride)": _zip(_tensor_pkl(4, 0, (2,), (2**30,)), {"0": f16}),
        "zero-stride memory bomb": _zip(_tensor_pkl(4, 0, (2**20, 2**20), (0, 0)), {"0": f16}),
        "negative stride": _zip(_tensor_pkl(4, 3, (4,), (-1,)), {"0": f16}),
        "negative offset": _zip(_tensor_pkl(4, -1, (1,), (1,)), {"0": f16}),
        "negative size": _zip(_tensor_pkl(4, 0, (-1,), (1,)), {"0": f16}),
        "size/stride length mismatch": _zip(_tensor_pkl(4, 0, (2, 2), (1,)), {"0": f16}),
        "65 dimensions": _zip(_tensor_pkl(4, 0, (1,) * 65, (1,) * 65), {"0": f16}),
        "empty tensor far offset": _zip(_tensor_pkl(4, 10, (0,), (1,)), {"0": f16}),
        "int tensor requiring grad": _zip(_tensor_pkl(2, 0, (2,), (1,), stype="LongStorage", rg=True), {"0": f16}),
        "storage key path traversal": _zip(_tensor_pkl(4, 0, (4,), (1,), key="../../x"), {"0": f16}),
        "missing storage record": _zip(_tensor_pkl(4, 0, (4,), (1,), key="7"), {"0": f16}),
        "unknown storage type": _zip(_tensor_pkl(4, 0, (4,), (1,), stype="QInt8Storage"), {"0": f16}),
        "bad location": _zip(P2 + _g("torch._utils", "_rebuild_tensor_v2") + b"(" + _pid(4, loc="cpu; rm -rf /") + _i(0) + b"(" + _i(4) + b"t(" + _i(1) + b"t\x89NtR.", {"0": f16}),
        "compressed storage": _zip(_tensor_pkl(4, 0, (4,), (1,)), {"0": f16}, method=zipfile.ZIP_DEFLATED),
        "two data.pkl": _two_pickles(),
        "no data.pkl": _no_pickle(),
        "no STOP": _zip(P2 + b"N"),
        "empty pickle": _zip(b""),
        "STOP on empty stack": _zip(P2 + b"."),
        "BINGET of unset memo": _zip(P2 + b"h\x05."),
        "TUPLE without MARK": _zip(P2 + b"Nt."),
        "unhashable dict key": _zip(P2 + b"}]Ns."),
        "truncated BINUNICODE": _zip(P2 + b"X\xff\xff\xff\x7fabc"),
        "empty file": b"",
        "text file": b"hello, I am not a checkpoint\n",
        "random bytes": np.random.default_rng(0).bytes(4096),
        "zip header only": b"PK\x03\x04" + bytes(100),
    }


class _Evil:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def _two_pickles() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/data.pkl", P2 + b"N.")
        zf.writestr("b/data.pkl", P2 + b"N.")
    return buf.getvalue()


def _no_pickle() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/version", b"3\n")
    return buf.getvalue()


def test_malicious_files_raise_one_error_and_run_nothing(tmp_path):
    canary = tmp_path / "canary"
    cases = _malicious(canary)
    for name, raw in cases.items():
        path = tmp_path / "evil.pt"
        path.write_bytes(raw)
        for f in (path, io.BytesIO(raw)):
            with pytest.raises(UnsafeCheckpointError) as e:
                load(f)
            assert str(e.value), name
        assert not canary.exists(), f"{name} executed code"
    # the error names what it refused
    msgs = {}
    for name in ("REDUCE os.system", "STACK_GLOBAL", "INST", "protocol-4 pickle", "huge storage size",
                 "out-of-bounds view (offset)", "protocol-4 bare file", "text file",
                 "compressed storage", "storage type as a value"):
        with pytest.raises(UnsafeCheckpointError) as e:
            load(io.BytesIO(cases[name]))
        msgs[name] = str(e.value)
    assert "os.system" in msgs["REDUCE os.system"]
    assert "STACK_GLOBAL" in msgs["STACK_GLOBAL"] and "INST" in msgs["INST"]
    assert "protocol 4" in msgs["protocol-4 pickle"]
    assert "holds 16 bytes" in msgs["huge storage size"]
    assert "out of bounds" in msgs["out-of-bounds view (offset)"]
    assert "bare pickle" in msgs["protocol-4 bare file"]
    assert "not a PyTorch checkpoint" in msgs["text file"]
    assert "compressed" in msgs["compressed storage"]
    assert "FloatStorage" in msgs["storage type as a value"]
    # the error is an UnpicklingError and a RuntimeError, like torch's
    assert issubclass(UnsafeCheckpointError, pickle.UnpicklingError)
    assert issubclass(UnsafeCheckpointError, RuntimeError)


def test_safe_globals_widen_the_allowlist_only_inside_the_block():
    from collections import defaultdict

    raw = _zip(P2 + _g("collections", "defaultdict") + b")R.")
    with ser.safe_globals([defaultdict]):
        assert ser.get_safe_globals() == [defaultdict]
        assert type(load(io.BytesIO(raw))) is defaultdict
    assert ser.get_safe_globals() == []
    with pytest.raises(UnsafeCheckpointError, match="add_safe_globals.*collections.defaultdict"):
        load(io.BytesIO(raw))


def test_the_payload_is_real(tmp_path):
    """The same bytes given to pickle.load do run the command: the canary test can fail."""
    canary = tmp_path / "canary"
    raw = _malicious(canary)["REDUCE os.system"]
    pkl = zipfile.ZipFile(io.BytesIO(raw)).read("archive/data.pkl")
    with pytest.raises(UnsafeCheckpointError):
        load(io.BytesIO(raw))
    assert not canary.exists()
    pickle.loads(pkl)  # noqa: S301 - deliberately unsafe, to prove the payload works
    assert canary.exists()


def test_truncated_archives(tmp_path):
    sd = {"w": ember.randn(20, 20), "b": ember.randn(20), "n": 3}
    buf = io.BytesIO()
    save(sd, buf)
    raw = buf.getvalue()
    for cut in list(range(0, len(raw), max(1, len(raw) // 150))) + [len(raw) - 1, len(raw) - 22]:
        with pytest.raises(UnsafeCheckpointError):
            load(io.BytesIO(raw[:cut]))


def test_corrupted_storage_bytes_fail_the_crc():
    buf = io.BytesIO()
    save({"w": ember.zeros(64)}, buf)
    raw = bytearray(buf.getvalue())
    i = raw.index(b"archive/data/0") + 200  # inside the storage's bytes
    raw[i] ^= 0xFF
    with pytest.raises(UnsafeCheckpointError, match="CRC"):
        load(io.BytesIO(bytes(raw)))


# ----------------------------------------------------------------------------------------------
# mutation fuzz
# ----------------------------------------------------------------------------------------------

_INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, ord("("), ord("t"), ord("R"), ord("Q"), ord("c"), ord("."),
                ord("h"), ord("q"), ord("u"), ord("b"), 0x85, 0x86, 0x87, 0x93, ord("i")]


def _mutate(rng: np.random.Generator, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        if not b:
            break
        kind = int(rng.integers(7))
        i = int(rng.integers(len(b)))
        if kind == 0:
            b[i] = int(rng.integers(256))
        elif kind == 1:
            b[i] = _INTERESTING[int(rng.integers(len(_INTERESTING)))]
        elif kind == 2:
            del b[i:i + int(rng.integers(1, 9))]
        elif kind == 3:
            b[i:i] = rng.bytes(int(rng.integers(1, 9)))
        elif kind == 4:
            j = int(rng.integers(len(b)))
            b[i:i] = b[j:j + int(rng.integers(1, 17))]
        elif kind == 5:
            del b[i:]
        else:  # change a small integer argument
            b[i] = (b[i] + int(rng.integers(-3, 4))) % 256
    return bytes(b)


def _touch_all(obj, seen=None):
    """Read every byte of every tensor (an out-of-bounds view would crash or fail here)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ember.Tensor):
        np.asarray(obj._data).copy()
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _touch_all(k, seen)
            _touch_all(v, seen)
    elif isinstance(obj, list | tuple | set):
        for v in obj:
            _touch_all(v, seen)


def _fuzz_bases() -> list[bytes]:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = ember.optim.Adam(model.parameters())
    model(ember.randn(5, 3)).sum().backward()
    opt.step()
    t = ember.arange(12.0)
    bases = []
    for obj in ({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 2},
                {"v": t[2:10].view(2, 4).t(), "base": t, "h": ember.ones(2, dtype=ember.bfloat16),
                 "p": Parameter(ember.ones(2)), "s": {1, 2}, "b": b"xy", "d": ember.float16,
                 "dev": ember.device("cpu"), "size": ember.Size([1, 2])}):
        buf = io.BytesIO()
        save(obj, buf)
        bases.append(buf.getvalue())
    if torch is not None:
        tm = torch.nn.Linear(3, 2)
        base = torch.arange(10.0)
        buf = io.BytesIO()
        torch.save({"sd": tm.state_dict(), "v": base[1:7].view(2, 3).t(), "base": base,
                    "p": torch.nn.Parameter(torch.ones(2))}, buf)
        bases.append(buf.getvalue())
    return bases


def _split(raw: bytes) -> tuple[str, bytes, dict[str, bytes], dict[str, bytes]]:
    zf = zipfile.ZipFile(io.BytesIO(raw))
    pkl_name = next(n for n in zf.namelist() if n.endswith("/data.pkl"))
    prefix = pkl_name.split("/")[0]
    storages = {n.split("/")[-1]: zf.read(n) for n in zf.namelist() if "/data/" in n}
    return prefix, zf.read(pkl_name), storages, {}


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs the bf16 extra (ml_dtypes)")
def test_mutation_fuzz_only_loads_or_refuses():
    rng = np.random.default_rng(20240613)
    bases = _fuzz_bases()
    outcomes = Counter()
    deadline = time.monotonic() + 40
    cases = 0
    for base in bases:
        prefix, pkl, storages, _ = _split(base)
        for n in range(1500):
            if n % 3 == 0:
                raw = _mutate(rng, base)  # anywhere in the archive
            else:  # inside the pickle, with a valid archive around it (the CRC is right)
                raw = _zip(_mutate(rng, pkl), storages, prefix)
            try:
                obj = load(io.BytesIO(raw))
            except UnsafeCheckpointError:
                outcomes["refused"] += 1
            else:
                _touch_all(obj)
                outcomes["loaded"] += 1
            cases += 1
            if time.monotonic() > deadline:
                break
    assert cases >= 3000 or time.monotonic() > deadline
    assert outcomes["refused"] > 100 and outcomes["loaded"] > 50, outcomes


# ----------------------------------------------------------------------------------------------
# atomic writes
# ----------------------------------------------------------------------------------------------


def test_save_replaces_atomically_and_leaves_no_temp_files(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save({"v": 1}, path)
    os.chmod(path, 0o600)
    save({"v": 2, "t": ember.ones(3)}, path)
    assert load(path)["v"] == 2
    assert (os.stat(path).st_mode & 0o777) == 0o600  # an existing file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(ser_save, "_write_archive", boom)
    with pytest.raises(OSError, match="disk full"):
        save({"v": 3}, path)
    monkeypatch.undo()
    assert load(path)["v"] == 2  # the old checkpoint is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]  # temp file cleaned up
    with pytest.raises(RuntimeError, match="Parent directory"):
        save({}, tmp_path / "missing" / "x.pt")
    link = tmp_path / "latest.pt"
    link.symlink_to(path)
    save({"v": 4}, link)
    assert link.is_symlink() and load(path)["v"] == 4


_KILL_CHILD = r"""
import sys, ember
from ember.serialization import save
big = {f"w{i}": ember.full((1_000_000,), float(i)) for i in range(48)}
print("ready", flush=True)
while True:
    save(big, sys.argv[1])
"""


def test_kill_during_save_leaves_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    v1 = {"step": 1, "w": ember.arange(10.0)}
    save(v1, path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(path)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"ready", child.stderr.read().decode()
        deadline = time.monotonic() + 60
        tmp = None
        while time.monotonic() < deadline:
            tmps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
            if tmps and tmps[0].stat().st_size > 8_000_000:  # well inside a 192 MB write
                tmp = tmps[0]
                break
            time.sleep(0.002)
        assert tmp is not None, "the child never started writing"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    r = load(path)  # intact: the previous checkpoint, or a complete new one
    if r.get("step") == 1:
        assert np.array_equal(_np(r["w"]), np.arange(10.0))
    else:  # pragma: no cover - the child finished a whole save before the kill
        assert float(r["w47"][0]) == 47.0
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers  # killed mid-write: the partial temp file is all that was lost
    with pytest.raises(UnsafeCheckpointError):
        load(leftovers[0])
    # the next save to the same path removes what the dead writer left behind
    save({"step": 2}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]
    assert load(path)["step"] == 2


# ----------------------------------------------------------------------------------------------
# interop: NumPy, DLPack, safetensors
# ----------------------------------------------------------------------------------------------


def test_from_numpy_and_numpy_share_memory():
    a = np.arange(6, dtype=np.float32)
    t = ember.from_numpy(a)
    t[0] = 10.0
    assert a[0] == 10.0
    n = t.numpy()
    n[1] = 20.0
    assert float(t[1]) == 20.0 and np.shares_memory(n, a)


def test_from_dlpack_numpy_zero_copy():
    a = np.arange(6.0).reshape(2, 3)
    t = from_dlpack(a)
    assert t.dtype == ember.float64 and tuple(t.shape) == (2, 3)
    t[0, 0] = 5.0
    assert a[0, 0] == 5.0
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    assert from_dlpack(t) is t
    cap = to_dlpack(ember.arange(3))
    assert from_dlpack(cap).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="__dlpack__"):
        from_dlpack([1, 2])
    with pytest.raises(RuntimeError, match="detach"):
        ember.ones(2, requires_grad=True).__dlpack__()


@needs_torch
def test_from_dlpack_torch_zero_copy():
    x = torch.arange(6.0).reshape(2, 3)
    t = from_dlpack(x)
    assert t.data_ptr() == x.data_ptr()
    t[1, 1] = -1.0
    assert float(x[1, 1]) == -1.0
    e = ember.arange(4.0)
    y = torch.from_dlpack(e)
    assert y.data_ptr() == e.data_ptr()
    y[0] = 7.0
    assert float(e[0]) == 7.0
    assert from_dlpack(x.__dlpack__()).data_ptr() == x.data_ptr()
    assert from_dlpack(torch.tensor([True, False])).dtype == ember.bool
    with pytest.raises(RuntimeError, match="bfloat16"):
        from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="uint16"):
        from_dlpack(torch.ones(2, dtype=torch.uint16))


def test_safetensors_roundtrip(tmp_path):
    pytest.importorskip("safetensors")
    from ember.utils.safetensors import load as st_load
    from ember.utils.safetensors import load_file, save_file
    from ember.utils.safetensors import save as st_save

    sd = {dt: _sample(dt) for dt in ALL_DTYPES}
    sd["nc"] = ember.arange(6.0).reshape(2, 3).t()
    path = tmp_path / "m.safetensors"
    save_file(sd, path, metadata={"format": "pt"})
    for r in (load_file(path), st_load(st_save(sd))):
        for k, v in sd.items():
            _same(r[k], v)
        r["float32"][0, 0] = 1.0  # writable
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.safetensors"]
    with pytest.raises(TypeError, match="tensors only"):
        save_file({"a": 1}, path)
    if torch is not None:
        import safetensors.torch as stt

        back = stt.load_file(str(path))
        assert back["bfloat16"].dtype == torch.bfloat16
        assert torch.equal(back["nc"], torch.arange(6.0).reshape(2, 3).t())
        stt.save_file({"w": torch.arange(4.0), "h": torch.ones(2, dtype=torch.bfloat16)},
                      str(tmp_path / "t.safetensors"))
        r = load_file(tmp_path / "t.safetensors")
        assert r["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and r["h"].dtype == ember.bfloat16


def test_safetensors_missing_package_message(monkeypatch):
    from ember.utils import safetensors as est

    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        est.save({"a": ember.ones(2)})
