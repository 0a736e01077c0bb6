"""The compatibility corpus: realistic PyTorch programs (tests/compat/, written by us in the style
of popular public ones) run unmodified under PyTorch and under `ember run`, and print the same.

Each program prints seed-independent things (shapes, dtypes, losses from a fixed start, checks as
booleans); lines starting with "~" depend on the random stream and only their text is compared.
The ember side runs with an unimportable `torch` first on PYTHONPATH, so nothing in it (DataLoader
workers included) can reach a real PyTorch. A program that passes only under ember is a defect.
"""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compat.compare import differences

COMPAT = Path(__file__).resolve().parent / "compat"
PROGRAMS = sorted(p.name for p in COMPAT.glob("*.py") if p.name not in ("__init__.py", "compare.py"))


def _have_torch() -> bool:
    try:
        importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _start(cmd, cwd, env=None):
    cwd.mkdir()
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc, timeout=600):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, out, err


@pytest.fixture
def no_real_torch(tmp_path):
    """An environment whose `import torch` (outside the alias) fails loudly."""
    fake = tmp_path / "no_real_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the real torch was imported')\n")
    return {**os.environ, "PYTHONPATH": str(fake.parent)}


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_prints_the_same_under_ember_and_pytorch(name, tmp_path, no_real_torch):
    program = str(COMPAT / name)
    em = _start([sys.executable, "-m", "ember", "run", program], tmp_path / "ember", no_real_torch)
    pt = _start([sys.executable, program], tmp_path / "torch") if _have_torch() else None
    code, ember_out, ember_err = _finish(em)
    if pt is not None:
        torch_code, torch_out, torch_err = _finish(pt)
        assert torch_code == 0, f"{name} fails under PyTorch:\n{torch_err[-3000:]}"
    assert code == 0, f"{name} fails under ember run:\n{ember_err[-3000:]}"
    assert "the real torch was imported" not in ember_err
    assert ember_out.strip(), f"{name} printed nothing"
    if pt is None:
        pytest.skip("PyTorch is not installed: ran the ember side only")
    problems = differences(torch_out, ember_out)
    assert not problems, f"{name}: ember's output differs from PyTorch's:\n" + "\n".join(problems)


def test_micrograd_style_tests_pass_under_ember_run_pytest(tmp_path, no_real_torch):
    out = subprocess.run([sys.executable, "-m", "ember", "run", "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", str(COMPAT / "micrograd_tests.py")],
                         capture_output=True, text=True, cwd=tmp_path, env=no_real_torch, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "3 passed" in out.stdout


def test_comparator():
    assert differences("loss 1.2345 after 3 steps\n", "loss 1.2346 after 3 steps\n") == []
    assert differences("loss 1.2345\n", "loss 1.3345\n")  # a number off by 8%
    assert differences("torch.float32\n", "torch.float64\n")  # numbers inside names are text too
    assert differences("shape (4, 7)\n", "shape (4, 8)\n")
    assert differences("ok True\n", "ok False\n")
    assert differences("a\nb\n", "a\n")
    assert differences("~ loss 0.97 acc 0.5\n", "~ loss 0.12 acc 0.9\n") == []  # masked line
    assert differences("~ loss 0.97\n", "~ cost 0.97\n")  # masked numbers, not masked text
    assert differences("x 1e-3 nan\n", "x 0.001 nan\n") == []
