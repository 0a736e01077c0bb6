"""The library programs of examples/libraries/ under `ember run` (issue 33), each skipped unless
its library is installed in this interpreter's environment (scripts/libraries.sh makes one;
CI's environment has none of them, so these skip there and nothing needs the network)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = {"torchmetrics_loop": ("torchmetrics", "sklearn"), "lightning_fit": ("lightning",),
            "transformers_tiny": ("transformers", "safetensors", "tokenizers"),
            "diffusers_tiny": ("diffusers", "safetensors", "PIL")}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_library_program_runs_on_ember(program, tmp_path):
    missing = [m for m in PROGRAMS[program] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)} (scripts/libraries.sh)")
    proc = subprocess.run(
        [sys.executable, "-m", "ember", "run", str(ROOT / "examples" / "libraries" /
                                                   f"{program}.py")],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert ("largest difference" in last or "done" in last or "checkpoint keys" in last), last
