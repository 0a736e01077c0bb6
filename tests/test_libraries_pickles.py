"""Plain tensors' pickles (``pickle.dumps(t)``) between ember and PyTorch (issue 33).

PyTorch pickles a tensor as ``torch._utils._rebuild_tensor_v2(storage, ...)``, the storage as
``torch.storage._load_from_bytes(<the storage in torch.save's legacy format>)``. Under
``ember run`` (where those names resolve to ember's) ember pickles plain tensors the same way, so
each engine unpickles the other's; ``ember.load`` reads that legacy storage format (skorch's
unpickler sends the bytes through ``torch.load(..., map_location=)``). A plain ``import ember``
process keeps ember's own form: ``torch.*`` names would not resolve without the alias.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember._utils import _rebuild_tensor_v2
from ember.serialization import _legacy

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r'''
import io, pickle, sys, torch
path, mode = sys.argv[1], sys.argv[2]
t = torch.arange(6.).reshape(2, 3)
items = {"t": t, "view": t[:, 1:], "bf": torch.ones(3, dtype=torch.bfloat16),
         "i": torch.arange(4), "b": torch.tensor([True, False]),
         "rg": torch.ones(2, requires_grad=True), "p": torch.nn.Parameter(torch.full((2,), 0.5)),
         "e": torch.zeros(0, 3), "s": torch.tensor(3.5), "c": torch.tensor([1 + 2j])}
if mode == "dump":
    open(path, "wb").write(pickle.dumps(items))
else:
    for k, v in pickle.loads(open(path, "rb").read()).items():
        print(k, type(v).__name__, v.dtype, tuple(v.shape), v.requires_grad, v.is_leaf,
              v.detach().to(torch.complex64 if v.is_complex() else torch.float32).tolist())
    # skorch's route: its unpickler sends _load_from_bytes's bytes through torch.load
    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch.storage", "_load_from_bytes"):
                return lambda b: torch.load(io.BytesIO(b), map_location="cpu", weights_only=True)
            return super().find_class(module, name)
    print(Unpickler(open(path, "rb")).load()["view"].tolist())
'''


def _run(args: list[str], script: Path, *rest: str) -> str:
    out = subprocess.run([*args, str(script), *rest], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


EMBER = [sys.executable, "-m", "ember", "run"]


def test_an_ember_pickle_unpickles_on_ember_and_on_pytorch(tmp_path):
    script = tmp_path / "pk.py"
    script.write_text(SCRIPT)
    pkl = tmp_path / "ember.pkl"
    _run(EMBER, script, str(pkl), "dump")
    names = {a for op, a, _ in __import__("pickletools").genops(pkl.read_bytes())
             if isinstance(a, str)}
    assert {"torch._utils", "_rebuild_tensor_v2", "torch.storage", "_load_from_bytes"} <= names
    ours = _run(EMBER, script, str(pkl), "load")
    assert "view Tensor torch.float32 (2, 2) False True [[1.0, 2.0], [4.0, 5.0]]" in ours
    assert "rg Tensor torch.float32 (2,) True True [1.0, 1.0]" in ours
    pytest.importorskip("torch")
    assert _run([sys.executable], script, str(pkl), "load") == ours


def test_a_pytorch_pickle_unpickles_on_ember(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "pk.py"
    script.write_text(SCRIPT)
    pkl = tmp_path / "torch.pkl"
    _run([sys.executable], script, str(pkl), "dump")
    theirs = _run([sys.executable], script, str(pkl), "load")
    assert _run(EMBER, script, str(pkl), "load") == theirs


def test_the_legacy_storage_format_round_trips_and_refuses_anything_else():
    arr = np.arange(5, dtype=np.float32)
    raw = _legacy.storage_bytes(arr, ember.float32)
    st = ember.load(io.BytesIO(raw))  # weights_only: storages only, nothing is imported
    assert type(st).__name__ == "TypedStorage" and st.dtype == ember.float32
    assert st.tolist() == arr.tolist()
    t = _rebuild_tensor_v2(st, 1, (2, 2), (1, 2), True, None)
    assert t.tolist() == [[1.0, 3.0], [2.0, 4.0]] and t.requires_grad and t.dtype == ember.float32
    with pytest.raises(RuntimeError, match="out of bounds"):
        _rebuild_tensor_v2(st, 2, (2, 2), (2, 1), False, None)
    evil = raw.replace(b"ctorch\nFloatStorage\n", b"cos\nsystem\n")
    with pytest.raises(pickle.UnpicklingError, match="names os.system"):
        ember.load(io.BytesIO(evil), weights_only=False)
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        ember.load(io.BytesIO(raw[:-3]))


def test_a_plain_import_keeps_embers_own_form():
    """Without ``ember run`` the pickle names ember's functions (a process without the alias
    could not resolve torch.*), and it round-trips."""
    t = ember.arange(3.0)
    data = pickle.dumps(t)
    assert b"torch._utils" not in data
    assert pickle.loads(data).tolist() == [0.0, 1.0, 2.0]
