"""The benchmark's workloads run a few steps on ember (through `ember run`, as the benchmark runs
them) and report their JSON line; the runner's report and doc writer work. No timing is asserted:
machines are noisy."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ember  # noqa: E402
from bench import floor, runner  # noqa: E402

NAMES = [w.name for w in runner.WORKLOADS]
HAS_SKLEARN = importlib.util.find_spec("sklearn") is not None


def run_workload(name: str, engine: str, tmp_path: Path, *extra: str) -> dict:
    script = str(ROOT / "bench" / "workloads" / f"{name}.py")
    cmd = [sys.executable, script, "--quick", *extra] if engine == "torch" else \
        [sys.executable, "-m", "ember", "run", script, "--quick", *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["workload"] == name and data["engine"] == engine
    assert data["timed_steps"] >= 1 and data["steps_per_s"] > 0
    return data


@pytest.mark.parametrize("name", NAMES)
def test_workload_runs_on_ember(name, tmp_path):
    if name == "demo":
        if not HAS_SKLEARN:
            pytest.skip("the demo needs scikit-learn")
        if not hasattr(ember, "save"):
            pytest.xfail("ember.save (torch.save) is not implemented yet; the demo saves a checkpoint")
    data = run_workload(name, "ember", tmp_path)
    if name == "per_op":
        assert data["ops_per_step"] == 20 and data["us_per_op"] > 0
    if "loss" in data:
        assert data["loss"] == data["loss"]  # not NaN


@pytest.mark.parametrize("name", ["per_op", "sine_regression", "gpt", "gpt_manual"])
def test_compiled_workload_replays(name, tmp_path):
    """--compile wraps the forward in torch.compile; the quick run's steps replay the trace."""
    data = run_workload(name, "ember", tmp_path, "--compile", "--steps", "4")
    assert data["compiled"] is True
    st = data["compile_stats"]
    assert st["compiled"] >= 1 and st["replays"] >= 1, st


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_workload_runs_unchanged_on_pytorch(tmp_path):
    data = run_workload("per_op", "torch", tmp_path)
    assert data["version"].startswith("2.")


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="needs torchvision")
def test_resnet18_runs_on_pytorch_with_real_torchvision(tmp_path):
    data = run_workload("resnet18", "torch", tmp_path)
    assert data["batch"] == 32 and data["loss"] == data["loss"]


def test_conv_floor_matches_the_floor_and_measures():
    from bench import conv_floor

    for name in ("cnn", "resnet18"):
        convs = sum(s.count * floor.gflop([s.gemm()]) for s in conv_floor.CONVS[name])
        linears = floor.gflop([g for g in floor.STEPS[name] if g[0].startswith("fc")])
        assert convs + linears == pytest.approx(floor.gflop(floor.STEPS[name]))
    rows = conv_floor.measure(conv_floor.CONVS["cnn"][:1], ember, min_time=0.0, min_reps=1)
    assert rows[0]["fwd"] > 0 and rows[0]["bwd"] > 0 and rows[0]["floor_bwd"] > 0
    assert "ember fwd / floor" in conv_floor.table("cnn", rows, None)


def test_floor_counts_the_products_of_a_step():
    # MLP: forward x@W^T per layer, backward dW per layer and dX for layers 2 and 3
    b = 128
    expect = 2 * b * (784 * 512 * 2 + 512 * 512 * 3 + 512 * 10 * 3) / 1e9
    assert floor.gflop(floor.STEPS["mlp"]) == pytest.approx(expect)
    assert len(floor._products(floor.STEPS["mlp"], __import__("numpy").random.default_rng(0))) == 8
    m = floor.measure("mlp", min_time=0.0, min_reps=1)
    assert m["ms"] > 0 and m["products"] == 8


def test_runner_quick_run_and_report(tmp_path, monkeypatch):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "per_op", "--engines", "ember",
         "--threads", "1", "--no-floor", "--raw-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:] + out.stdout[-3000:]
    assert "| per_op | step |" in out.stdout
    assert "OPENBLAS_CORETYPE" in out.stdout
    saved = json.loads((tmp_path / "latest.json").read_text())
    assert saved["quick"] and list(saved["by_threads"]) == ["1"]


def test_engine_env_sets_threads_and_unsets_openblas_overrides(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "262144")
    env = runner.engine_env(3)
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "3"
    assert "OPENBLAS_CORETYPE" not in env and "OPENBLAS_L2_SIZE" not in env
    assert runner.machine_info()["openblas_overrides_in_shell"]["OPENBLAS_CORETYPE"] == "Haswell"


def fake_results() -> dict:
    def run(engine, sps, wall, rss, **extra):
        return {"engine": engine, "steps_per_s": sps, "wall_s": wall, "rss_mib": rss,
                "unit": "step", **extra}

    section = {
        "probe": {"torch": {"engine": "torch", "version": "2.13", "numpy": "2"},
                  "ember": {"engine": "ember", "version": "0.1", "numpy": "2"}},
        "floor": {"mlp": {"ms": 10.0, "gflop": 0.4}},
        "workloads": {
            "sine_regression": {"torch": [run("torch", 1000, 2.0, 300)] * 3,
                                "ember": [run("ember", 3000, 0.5, 60)] * 3},
            "mlp": {"torch": [run("torch", 50, 3.0, 320)],
                    "ember": [run("ember", 40, 1.0, 80)]},
            "per_op": {"torch": [run("torch", 100, 2.0, 300, us_per_op=10.0)],
                       "ember": [run("ember", 50, 0.4, 40, us_per_op=20.0)]},
            "cnn": {"torch": [run("torch", 10, 3.0, 300)],
                    "ember": [{"engine": "ember", "error": "boom", "wall_s": 1, "rss_mib": 1}]},
        },
    }
    return {"date": "today", "quick": False, "runs": 3, "engines": ["torch", "ember"],
            "load_before": "0.10 0.10 0.10", "load_after": "0.10 0.10 0.10",
            "machine": {"cpu": "CPU", "logical_cpus": 2, "usable_cpus": 2, "mem_gib": 1,
                        "os": "os", "python": "3.11", "ember_commit": "abc",
                        "openblas_overrides_in_shell": {"OPENBLAS_CORETYPE": None,
                                                        "OPENBLAS_L2_SIZE": None}},
            "by_threads": {"1": section}}


def test_report_ratios_targets_and_failures():
    text = runner.render(fake_results())
    row = next(line for line in text.splitlines() if line.startswith("| sine_regression |"))
    assert "3.00x" in row and "0.25x" in row  # throughput ratio, wall ratio
    assert "| sine_regression: throughput >= 2.0x | 3.00x | yes |" in text
    assert "| sine_regression: whole-process wall <= 0.3x | 0.25x | yes |" in text
    assert "| mlp: throughput >= 1.1x | 0.80x | no |" in text
    assert "| mlp: step within 1.3x of the BLAS floor | 2.50x | no |" in text  # 25 ms over 10
    assert "| sine_regression: peak RSS <= 0.5x | 0.20x | yes |" in text
    assert "us per op" in text and "target >= 1.25x) | 0.50x | no |" in text
    assert "failed: boom" in text
    assert "cnn: throughput >= 1.0x (run failed or skipped)" in text


def test_report_with_compiled_rows():
    res = fake_results()
    sec = res["by_threads"]["1"]
    res["engines"] = ["torch", "ember", "compiled"]
    sec["probe"]["compiled"] = sec["probe"]["ember"]
    stats = {"compiled": 1, "replays": 40, "compile_seconds": 0.5}
    sec["workloads"]["sine_regression"]["compiled"] = [
        {"engine": "ember", "steps_per_s": 4500, "wall_s": 0.6, "rss_mib": 61, "unit": "step",
         "compiled": True, "compile_stats": stats}]
    sec["workloads"]["mlp"]["compiled"] = [
        {"engine": "ember", "steps_per_s": 45, "wall_s": 1.0, "rss_mib": 80, "unit": "step",
         "compiled": True, "compile_stats": {"compiled": 0, "replays": 0,
                                             "last_reason": "a graph break"}}]
    text = runner.render(res)
    assert "ratio ember compiled/PyTorch" in text
    row = next(line for line in text.splitlines() if line.startswith("| sine_regression |"))
    assert "4.50x" in row and "3.00x" in row
    assert "| sine_regression: compiled >= 4.0x eager PyTorch | 4.50x | yes |" in text
    assert "| mlp: compiled >= 1.2x eager PyTorch | 0.90x | no |" in text
    assert "mlp: ran eagerly (a graph break)" in text
    assert "sine_regression: 1 graph(s) compiled in 500 ms, 40 replays" in text


def test_write_doc_keeps_other_sections(tmp_path, monkeypatch):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nintro\n\n## GPT on Shakespeare\n\ntheirs\n")
    monkeypatch.setattr(runner, "DOC", doc)
    runner.write_doc("first\n")
    text = doc.read_text()
    assert text.index("first") < text.index("## GPT on Shakespeare") and "theirs" in text
    runner.write_doc("second\n")
    text = doc.read_text()
    assert "first" not in text and text.count(runner.BEGIN) == 1
    assert text.index("second") < text.index("## GPT on Shakespeare") and "theirs" in text
    assert "intro" in text


def test_op_timer_reports_ms_per_op_class(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "bench.profile", "mlp", "--tool", "ops", "--steps", "2"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:] + out.stdout[-3000:]
    assert "Linear.forward" in out.stdout and "Linear.backward" in out.stdout
    assert "Adam._update" in out.stdout  # the MLP trains with AdamW


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux /proc needed")
def test_memory_sweep_child_and_render():
    """The op-table memory sweep's ember process measures the ops it is given (a number per
    op, or the error an op raised), and the table marks ops above the target."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLOC_MMAP_THRESHOLD_="131072")
    out = subprocess.run([sys.executable, "-m", "ember", "run", str(ROOT / "bench" /
                          "memory_sweep.py"), "--child", "--only", "exp,mm"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(res) == {"exp", "mm"} and all(isinstance(v, float) for v in res.values())
    assert 8 <= res["exp"] <= 64  # the 16 MB result and its 16 MB gradient, give or take
    from bench import memory_sweep
    table = memory_sweep.render({"torch": {"exp": 32.0, "mm": 64.0},
                                 "ember": {"exp": 32.0, "mm": 200.0}})
    assert "| `exp` | 32 MB | 32 MB | 1.00x | yes |" in table
    assert "| `mm` | 64 MB | 200 MB | 3.12x | **no** |" in table and "1 above the target" in table
