"""bfloat16 where the bf16 extra (ml_dtypes) is installed, and its clear refusal where not, and PyTorch's limited-support unsigned types (uint16/32/64)."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from helpers import HAVE_ML_DTYPES


def torch_or_skip():
    return pytest.importorskip("torch")

WIDE = ("uint16", "uint32", "uint64")
OTHERS = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")


def _dt(lib, name):
    return getattr(lib, name)


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs the bf16 extra (ml_dtypes)")
def test_bfloat16_is_real():
    assert ember.zeros(2, dtype=ember.bfloat16).dtype is ember.bfloat16
    assert ember.ones(2).to(ember.bfloat16).dtype is ember.bfloat16
    assert ember.finfo(ember.bfloat16).eps == 0.0078125
    assert ember.tensor([1.0], dtype=ember.bfloat16).numpy().dtype.name == "bfloat16"


def test_bfloat16_without_ml_dtypes_raises_never_substitutes():
    # ml_dtypes blocked as if it were not installed: bfloat16 must raise, not become float64/32
    code = textwrap.dedent("""
        import sys
        sys.modules["ml_dtypes"] = None
        import ember as torch
        for make in (lambda: torch.zeros(2, dtype=torch.bfloat16),
                     lambda: torch.ones(2).to(torch.bfloat16),
                     lambda: torch.finfo(torch.bfloat16)):
            try:
                r = make()
            except RuntimeError as e:
                assert "ml_dtypes" in str(e), e
            else:
                raise SystemExit(f"substituted: {r!r}")
        assert torch.zeros(2).dtype is torch.float32
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("name", WIDE)
def test_wide_unsigned_basics(name):
    dt = getattr(ember, name)
    assert repr(dt) == f"torch.{name}"
    assert not dt.is_signed and not dt.is_floating_point
    assert dt.itemsize == np.dtype(name).itemsize
    t = ember.tensor([3, 1, 2], dtype=dt)
    assert t.dtype is dt and t.numpy().dtype == np.dtype(name)
    assert repr(t) == f"tensor([3, 1, 2], dtype=torch.{name})"
    assert ember.from_numpy(np.arange(3, dtype=name)).dtype is dt
    assert ember.cat([t, t]).dtype is dt
    assert ember.sort(t).values.tolist() == [1, 2, 3]
    assert (t == 1).tolist() == [False, True, False]
    assert t.to(ember.float32).dtype is ember.float32
    assert ember.iinfo(dt).max == np.iinfo(name).max
    assert t.type() == f"torch.U{name[1:].capitalize().replace('int', 'Int')}Tensor"


@pytest.mark.parametrize("name", WIDE)
def test_wide_unsigned_promotion_matches_torch(name):
    torch = torch_or_skip()
    for other in (*OTHERS, *WIDE):
        try:
            want = str(torch.promote_types(_dt(torch, name), _dt(torch, other)))
        except RuntimeError as e:
            assert "Promotion for uint16, uint32, uint64 types is not supported" in str(e)
            with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
                ember.promote_types(_dt(ember, name), _dt(ember, other))
            continue
        assert str(ember.promote_types(_dt(ember, name), _dt(ember, other))) == want, other
    a, b = ember.tensor([1, 2], dtype=_dt(ember, name)), ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="Promotion"):
        a + b
    assert str(ember.result_type(a, 5)) == str(torch.result_type(
        torch.tensor([1, 2], dtype=_dt(torch, name)), 5))
    assert (a * 2.5).dtype is ember.float32


@pytest.mark.parametrize("name", WIDE)
def test_wide_unsigned_checkpoints_both_ways(name):
    torch = torch_or_skip()
    buf = io.BytesIO()
    ember.save({"a": ember.tensor([[1, 2], [3, 4]], dtype=_dt(ember, name)).t(),
                "f": ember.ones(2)}, buf)
    buf.seek(0)
    got = torch.load(buf)
    assert got["a"].dtype == _dt(torch, name) and got["a"].tolist() == [[1, 3], [2, 4]]
    buf = io.BytesIO()
    torch.save([torch.tensor([7, 8, 9], dtype=_dt(torch, name))], buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back[0].dtype is _dt(ember, name) and back[0].tolist() == [7, 8, 9]
