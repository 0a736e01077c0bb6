"""The `ember` command: `ember run` behaves like `python SCRIPT` with `import torch` -> ember."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args, cwd=None, check=True):
    out = subprocess.run([sys.executable, "-m", "ember", *args], capture_output=True, text=True,
                         cwd=cwd or ROOT, timeout=300)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_run_argv_main_file_relative_imports(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        from torch.optim.lr_scheduler import StepLR
        from helper_mod import VALUE
        print(torch.__name__, nn.Linear.__module__.split('.')[0], F.relu.__module__.split('.')[0])
        print(sys.argv[1:], __name__, __file__.endswith('train.py'), VALUE + 1)
        print(torch.tensor([1.0, 2.0]).sum().item())
    """))
    out = run("run", str(script), "--epochs", "3").stdout.splitlines()
    assert out[0] == "ember ember ember"
    assert out[1] == "['--epochs', '3'] __main__ True 42"
    assert out[2] == "3.0"


def test_run_exit_codes_and_exceptions(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert run("run", str(script), check=False).returncode == 3
    script.write_text("raise ValueError('boom')\n")
    res = run("run", str(script), check=False)
    assert res.returncode == 1 and "ValueError: boom" in res.stderr


def test_run_module(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("import torch\nprint('ok', torch.ones(2).shape)\n")
    out = subprocess.run([sys.executable, "-m", "ember", "run", "-m", "mypkg.main"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok torch.Size([2])"


def test_missing_api_fails_at_point_of_use_and_report(tmp_path):
    script = tmp_path / "uses_missing.py"
    script.write_text(textwrap.dedent("""
        import torch
        print(hasattr(torch, 'nonexistent_thing'))
        try:
            torch.fft
        except NotImplementedError as e:
            print(e)
        torch.nn.functional.ctc_loss
    """))
    res = run("run", "--report", str(script), check=False)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert lines == ["False", "ember does not implement torch.fft yet"]
    assert "NotImplementedYet: ember does not implement torch.nn.functional.ctc_loss yet" in res.stderr
    assert "torch.fft" in res.stderr.split("--report")[-1]
    assert "torch.nn.functional.ctc_loss" in res.stderr.split("--report")[-1]


def test_help_for_every_subcommand():
    assert "run" in run("--help").stdout and "demo" in run("--help").stdout
    assert "--report" in run("run", "--help").stdout
    demo_help = run("demo", "--help").stdout
    for flag in ("--epochs", "--device", "--seed", "--out"):
        assert flag in demo_help


def test_demo_trains_and_writes_outputs(tmp_path):
    pytest.importorskip("sklearn")
    out = run("demo", "--epochs", "1", "--out", str(tmp_path / "d")).stdout
    assert "test accuracy" in out
    for name in ("curves.png", "predictions.png", "model.pt"):
        assert (tmp_path / "d" / name).exists(), out
        assert f"wrote {tmp_path / 'd' / name}" in out
