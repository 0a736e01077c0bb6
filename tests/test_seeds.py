"""The seeds' programs, verbatim (examples/seeds/), run on ember via `ember run` and land where
their seed documents."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "examples" / "seeds"


def ember_run(name: str, epilogue: str | None = None) -> str:
    if epilogue is None:
        cmd = [sys.executable, "-m", "ember", "run", str(SEEDS / name)]
    else:
        code = (
            "import runpy, ember._alias as a; a.install(); "
            f"g = runpy.run_path({str(SEEDS / name)!r}, run_name='__main__'); import torch; {epilogue}"
        )
        cmd = [sys.executable, "-c", code]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def floats(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]


def test_seed_autograd():
    out = ember_run("000_autograd.py").splitlines()
    assert out[0] == "tensor(12.) tensor(4.)"
    assert out[1].startswith("<AddBackward0 object at 0x")


def test_seed_accumulation():
    assert ember_run("000_accumulation.py").splitlines() == ["tensor(3.)", "tensor(6.)"]


def test_seed_tensors_and_devices():
    assert ember_run("000_tensors_devices.py", "print(tuple(g['c'].shape))").strip() == "(3, 2)"


def test_seed_tensor_attributes():
    out = ember_run("002_tensor_attributes.py").splitlines()
    assert out == ["torch.Size([2, 2])", "torch.float32", "cpu"]


def test_seed_linear_regression_lands_near_3_and_2():
    w, b = floats(ember_run("000_linear_regression.py"))
    assert abs(w - 3) < 0.1 and abs(b - 2) < 0.1


def test_seed_complete_model_lands_near_2_and_1():
    w, b = floats(ember_run("002_complete_model.py"))
    assert abs(w - 2) < 0.1 and abs(b - 1) < 0.1


def test_seed_classifier_above_85_percent():
    lines = ember_run("000_classifier.py").splitlines()
    assert len(lines) == 5
    accs = [float(line.split()[1]) for line in lines]
    assert accs[-1] > 0.85


def test_seed_sine_regression_near_noise_floor():
    mse = float(ember_run(
        "003_canonical_loop.py",
        "print(((g['model'](g['X']) - g['Y']) ** 2).mean().item())",
    ))
    assert mse < 0.015  # within 50% of the noise floor 0.01


@pytest.mark.parametrize("name", sorted(p.name for p in SEEDS.glob("*.py")))
def test_every_seed_program_runs_on_ember(name):
    ember_run(name)


def test_seed_inspect_objects():
    out = ember_run("002_inspect_objects.py").splitlines()
    assert out == ["cpu", "cpu", "torch.float32 torch.Size([64, 1])"]


def test_seed_inspect_grad_prints_a_gradient():
    out = ember_run("002_inspect_grad.py")
    assert out.startswith("tensor([[") and out.rstrip().endswith("]])")


def test_seed_numpy_engine_prints_what_the_seed_documents():
    seed_text = (ROOT.parent / "shared" / "seeds" / "003_8c868e238b6de56d.txt")
    expected = [
        "epoch   1: training MSE 0.3872", "epoch  10: training MSE 0.3726",
        "epoch  50: training MSE 0.1327", "epoch 100: training MSE 0.0332",
        "epoch 300: training MSE 0.0127", "noise floor (variance of the added noise): 0.0100",
    ]
    if seed_text.exists():
        assert all(line in seed_text.read_text() for line in expected)
    assert ember_run("003_numpy_engine.py").splitlines() == expected
