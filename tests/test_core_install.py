"""ember on a core install: NumPy and ml_dtypes, nothing else (scripts/test.sh runs this file, and a
few others, in `.venv-core`, where `EMBER_CORE_ONLY=1`). In the full test environment it runs too,
without the check on what is installed."""

from __future__ import annotations

import importlib.util
import io
import os

import numpy as np
import pytest

import ember as torch
from helpers import HAVE_ML_DTYPES

OPTIONAL = ("torch", "scipy", "cupy", "mpi4py", "safetensors", "tqdm", "matplotlib", "sklearn",
            "tensorboardX", "PIL")


@pytest.mark.skipif(os.environ.get("EMBER_CORE_ONLY") != "1", reason="checks a core-only install")
def test_only_the_core_dependencies_are_installed():
    present = [m for m in OPTIONAL if importlib.util.find_spec(m) is not None]
    assert not present, f"a core-only environment has optional packages: {present}"


def test_a_training_loop_on_the_core():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16,
                                         shuffle=True)
    first = None
    for _ in range(30):
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
    assert loss.item() < first / 10
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_bfloat16_without_its_extra_says_what_to_install():
    """The core install is NumPy alone; bfloat16 tensors need the bf16 extra (ml_dtypes). The
    dtype and its finfo exist either way (libraries build dtype tables at import)."""
    if HAVE_ML_DTYPES:
        pytest.skip("ml_dtypes is installed here: the core-only step runs this")
    assert torch.bfloat16.itemsize == 2 and torch.bfloat16.is_floating_point
    with pytest.raises(RuntimeError, match=r"ember\[bf16\]"):
        torch.ones(4, dtype=torch.bfloat16)
    assert torch.ones(2, dtype=torch.float16).numpy().dtype == np.float16


def test_half_types_on_the_core():
    if not HAVE_ML_DTYPES:
        pytest.skip("bfloat16 needs the bf16 extra (ml_dtypes)")
    b = torch.ones(4, dtype=torch.bfloat16) * 3
    assert b.dtype is torch.bfloat16 and b.numpy().dtype.name == "bfloat16"
    assert torch.finfo(torch.bfloat16).eps == 0.0078125
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.nn.Linear(4, 2)(torch.ones(3, 4))
    assert out.dtype is torch.bfloat16
    assert torch.zeros(2, dtype=torch.uint16).numpy().dtype == np.uint16
