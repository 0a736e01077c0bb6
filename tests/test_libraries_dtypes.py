"""The dtypes libraries name in tables at import (issue 33): float8/float4 and uint16/32/64.

Each exists; uint16/32/64 tensors work (NumPy holds them); the float8/float4 formats are dtype
objects whose tensors raise ``TypeError`` naming the dtype (docs/tensors.md says why), with
``finfo`` as PyTorch's. ml_dtypes stays a declared dependency (bfloat16) but ``import ember``
and everything except bfloat16 work with NumPy alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import ember

FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]
WIDE = ["uint16", "uint32", "uint64"]


@pytest.mark.parametrize("name", [*FLOAT8, "float4_e2m1fn_x2"])
def test_float8_and_float4_exist_and_refuse_tensors_naming_the_dtype(name):
    d = getattr(ember, name)
    assert str(d) == f"torch.{name}" and d.is_floating_point and d.itemsize == 1
    for make in (lambda: ember.zeros(2, dtype=d), lambda: ember.tensor([1.0], dtype=d),
                 lambda: ember.ones(2).to(d), lambda: ember.empty(3, dtype=d)):
        with pytest.raises(TypeError, match=f"torch.{name}"):
            make()


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_finfo_as_pytorch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "resolution"):
        assert getattr(ours, field) == getattr(theirs, field), field


@pytest.mark.parametrize("name", WIDE)
def test_wide_unsigned_tensors_as_pytorch(name):
    torch = pytest.importorskip("torch")
    for m in (ember, torch):
        d = getattr(m, name)
        t = m.tensor([0, 7, 2**16 - 1], dtype=d)
        assert t.dtype == d and t.element_size() == d.itemsize
        assert t.tolist() == [0, 7, 65535] and t.to(m.float32).tolist() == [0.0, 7.0, 65535.0]
        assert m.iinfo(d).max == 2 ** (8 * d.itemsize) - 1


def test_every_dtype_pytorch_names_for_these_libraries_exists():
    torch = pytest.importorskip("torch")
    for name in [*FLOAT8, "float4_e2m1fn_x2", *WIDE, "bfloat16", "complex32", "chalf"]:
        assert str(getattr(ember, name)) == str(getattr(torch, name))


def test_import_ember_with_numpy_alone():
    """ml_dtypes blocked as if not installed: ember imports, trains a step, names every dtype
    (float8's finfo from ember's own table), and only bfloat16 asks for ml_dtypes."""
    code = textwrap.dedent("""
        import sys
        sys.modules["ml_dtypes"] = None
        import ember as torch
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        loss = net(torch.ones(4, 3)).pow(2).mean()
        loss.backward(); opt.step()
        assert torch.finfo(torch.float8_e4m3fn).max == 448.0
        assert torch.tensor([1, 2], dtype=torch.uint32).sum().item() == 3
        try:
            torch.zeros(1, dtype=torch.float8_e5m2)
        except TypeError as e:
            assert "torch.float8_e5m2" in str(e)
        try:
            torch.zeros(1, dtype=torch.bfloat16)
        except RuntimeError as e:
            assert "ml_dtypes" in str(e)
        print("ok", loss.dtype, "ml_dtypes" in sys.modules and sys.modules["ml_dtypes"] is not None)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok torch.float32 False"
