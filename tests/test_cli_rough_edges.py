"""The command line's rough edges (issue 31): launch's help and its failure report, run's help and
``-c``, demo's device choices, progress bars in logs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ember import cli


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return capsys.readouterr().out


def test_launch_help_lists_each_flag_once_with_help_and_no_markup(capsys):
    out = _help(capsys, "launch")
    options = out.split("options:", 1)[1]
    for flag in ("--nproc-per-node", "--nnodes", "--node-rank", "--master-addr",
                 "--master-port", "--rdzv-id", "--standalone", "--hostfile"):
        lines = [ln for ln in options.splitlines() if flag in ln]
        assert len(lines) == 1 and options.count(flag) == 1, (flag, lines)
        assert len(lines[0].split(None, 2)) == 3, lines  # the flag, its metavar, help text
    assert "_per_node" not in out and "``" not in out
    assert "torchrun's interface" in out


def test_launch_still_takes_torchruns_underscore_spellings():
    import argparse

    from ember.distributed import run

    p = argparse.ArgumentParser()
    run.add_arguments(p)
    a = p.parse_args(["--nproc_per_node", "2", "--master_port", "5", "x.py", "--lr", "1"])
    assert (a.nproc_per_node, a.master_port, a.node_rank, a.target, a.args) == (
        2, 5, 0, "x.py", ["--lr", "1"])
    assert p.parse_args(["x.py"]).nproc_per_node == 1


def test_run_help_has_a_description(capsys):
    out = _help(capsys, "run")
    assert "Run a PyTorch script" in out and "-c CODE" in out


def test_run_c_runs_code_as_python_c(tmp_path):
    code = "import sys, torch; print(torch.__name__, torch.ones(2).sum().item(), sys.argv)"
    res = subprocess.run([sys.executable, "-m", "ember", "run", "-c", code, "a", "b"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "torch 2.0 ['-c', 'a', 'b']"
    res = subprocess.run([sys.executable, "-m", "ember", "run", "-c", "raise ValueError('x')"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 1 and 'File "<string>", line 1' in res.stderr
    assert "ValueError: x" in res.stderr


def test_run_without_target_or_code_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run"])
    assert e.value.code == 2
    assert "target (or -c CODE)" in capsys.readouterr().err


def test_demo_device_is_a_choice(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--device", "tpu"])
    assert e.value.code == 2
    assert "invalid choice: 'tpu'" in capsys.readouterr().err


def test_a_failing_launched_process_names_its_rank():
    """end_job (run in a launched process that failed) says which rank failed, not only the
    PID that mpiexec reports."""
    code = "from ember.distributed.run import end_job; end_job(1)"
    env = dict(os.environ, RANK="3", LOCAL_RANK="1", GROUP_RANK="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert "ember launch: rank 3 (local rank 1, node 1, pid " in res.stderr
    assert "failed with exit code 1" in res.stderr


@pytest.mark.skipif(
    not (shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")),
    reason="no mpiexec (pip install 'ember[mpi]')")
def test_launch_names_the_failing_rank(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\nif os.environ['RANK'] == '1':\n    sys.exit(7)\n")
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--nproc-per-node", "2",
                          str(script)], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert "ember launch: rank 1 (local rank 1" in res.stderr, res.stderr


def test_progress_bars_stay_out_of_logs(monkeypatch):
    """With stderr not a terminal (a log file, CI), no bar is drawn."""
    import io

    from ember import hub

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = hub._progress_bar(100, True)
    bar.update(50)
    bar.close()
    assert sys.stderr.getvalue() == ""


def test_demo_progress_stays_out_of_logs(monkeypatch):
    import io

    pytest.importorskip("torch")  # (the demo module imports torch: ember under ember run)
    from ember.demo import digits_cnn

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    items = [1, 2, 3]
    assert digits_cnn.progress(items, "epoch") is items


def test_test_sh_quick_subset_names_existing_files():
    """scripts/test.sh --quick runs a list of test files: each must exist."""
    import re

    root = Path(__file__).resolve().parents[1]
    text = (root / "scripts" / "test.sh").read_text()
    block = re.search(r"QUICK_TESTS=\((.*?)\)", text, re.S)
    assert block is not None
    files = block.group(1).split()
    assert len(files) >= 10
    for f in files:
        assert (root / f).is_file(), f
    assert "--quick" in (root / "README.md").read_text()


def test_pytest_summary_lists_skip_reasons():
    import tomllib

    root = Path(__file__).resolve().parents[1]
    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "s" in cfg["addopts"].split("-r", 1)[1].split()[0]
    assert any("torch" in f for f in cfg["filterwarnings"])
