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
        print(torch.__name__, torch.__spec__.name, nn.Linear.__module__.split('.')[0],
              F.relu.__module__.split('.')[0])
        print(sys.argv[1:], __name__, __file__.endswith('train.py'), VALUE + 1)
        print(torch.tensor([1.0, 2.0]).sum().item())
    """))
    out = run("run", str(script), "--epochs", "3").stdout.splitlines()
    # named torch, as PyTorch's, and its names report PyTorch's __module__; ember underneath
    assert out[0] == "torch ember torch torch"
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
            torch.quantize_per_tensor
        except NotImplementedError as e:
            print(e)
        torch.nn.functional.grouped_mm
    """))
    res = run("run", "--report", str(script), check=False)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert lines == ["False", "ember does not implement torch.quantize_per_tensor yet"]
    assert "NotImplementedYet: ember does not implement torch.nn.functional.grouped_mm yet" in res.stderr
    assert "torch.quantize_per_tensor" in res.stderr.split("--report")[-1]
    assert "torch.nn.functional.grouped_mm" in res.stderr.split("--report")[-1]


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


def python(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env=env)


def ember(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "ember", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env=env)


def test_run_module_puts_cwd_first_like_python_m(tmp_path):
    # micrograd-style: tests in a package import the project from the current directory
    (tmp_path / "mylib.py").write_text("NAME = 'from cwd'\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "t.py").write_text(
        "import os, sys\nimport mylib\nprint(mylib.NAME, sys.path[0] == os.getcwd())\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    ref = python("-m", "tests.t", cwd=tmp_path, env=env)
    out = ember("run", "-m", "tests.t", cwd=tmp_path, env=env)
    assert ref.returncode == 0, ref.stderr
    assert out.returncode == 0, out.stderr
    assert out.stdout == ref.stdout == "from cwd True\n"


def test_main_module_file_argv_and_path_like_python(tmp_path):
    (tmp_path / "sub").mkdir()
    script = tmp_path / "sub" / "s.py"
    script.write_text("import sys\nprint(__file__, sys.argv, sys.path[0], __name__, __spec__,"
                      " sys.modules['__main__'].__file__)\nprint(sys.path[1:3])\n")
    ref = python("sub/s.py", "x", cwd=tmp_path)
    out = ember("run", "sub/s.py", "x", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ref.stdout  # sys.path too: the launcher's directory is not left on it
    assert f"{tmp_path}/sub/s.py ['sub/s.py', 'x'] {tmp_path}/sub" in out.stdout
    console = Path(sys.executable).with_name("ember")  # the installed `ember` script
    if console.exists():
        out = subprocess.run([str(console), "run", "sub/s.py", "x"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
        assert out.stdout == ref.stdout, out.stderr


@pytest.mark.parametrize("body, code, err", [
    ("sys.exit('stopping: no data')", 1, "stopping: no data\n"),
    ("sys.exit(None)", 0, ""),
    ("sys.exit()", 0, ""),
    ("sys.exit(3)", 3, ""),
    ("raise SystemExit(['a', 1])", 1, "['a', 1]\n"),
])
def test_sys_exit_like_python(tmp_path, body, code, err):
    script = tmp_path / "e.py"
    script.write_text(f"import sys\nprint('before')\n{body}\n")
    ref = python(str(script))
    out = ember("run", str(script))
    assert (ref.returncode, ref.stderr, ref.stdout) == (code, err, "before\n")
    assert (out.returncode, out.stderr, out.stdout) == (code, err, "before\n")


def test_traceback_starts_at_user_code(tmp_path):
    (tmp_path / "helper.py").write_text("def f(x):\n    return 1 / x\n")
    script = tmp_path / "boom.py"
    script.write_text("import torch\nfrom helper import f\n\ndef main():\n    f(0)\n\nmain()\n")
    out = ember("run", str(script))
    assert out.returncode == 1
    assert "cli.py" not in out.stderr and "runpy" not in out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == f'  File "{script}", line 7, in <module>'
    assert lines[-1] == "ZeroDivisionError: division by zero"
    # the same text python prints (the script imports nothing torch-specific that fails)
    script.write_text(script.read_text().replace("import torch\n", "import os\n"))
    assert ember("run", str(script)).stderr == python(str(script)).stderr
    # and for -m, python's own runpy frames are not shown either
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("raise KeyError('k')\n")
    out = ember("run", "-m", "pkg.m", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.splitlines()[1] == f'  File "{pkg / "m.py"}", line 1, in <module>'
    assert "runpy" not in out.stderr and "cli.py" not in out.stderr


def test_exception_chain_and_excepthook_kept(tmp_path):
    script = tmp_path / "c.py"
    script.write_text(textwrap.dedent("""
        import sys
        def hook(t, v, tb):
            print('hook saw', t.__name__, tb.tb_frame.f_code.co_filename == __file__)
        if len(sys.argv) > 1:
            sys.excepthook = hook
        try:
            {}['k']
        except KeyError as e:
            raise ValueError('wrapped') from e
    """))
    ref, out = python(str(script)), ember("run", str(script))
    assert out.returncode == ref.returncode == 1
    assert out.stderr == ref.stderr and "The above exception was the direct cause" in out.stderr
    out = ember("run", str(script), "hook")
    assert out.returncode == 1 and out.stdout == "hook saw ValueError True\n"


def test_syntax_error_like_python(tmp_path):
    script = tmp_path / "syn.py"
    script.write_text("x = 1\ndef (\n")
    ref, out = python(str(script)), ember("run", str(script))
    assert out.returncode == ref.returncode == 1
    assert out.stderr == ref.stderr and "Traceback" not in out.stderr


def test_missing_script_and_module_messages(tmp_path):
    ref = python("missing.py", cwd=tmp_path)
    out = ember("run", "missing.py", cwd=tmp_path)
    assert out.returncode == ref.returncode == 2
    message = f"can't open file '{tmp_path / 'missing.py'}': [Errno 2] No such file or directory\n"
    assert ref.stderr == f"{sys.executable}: {message}"
    assert out.stderr == f"ember: {message}"
    out = ember("run", "-m", "no_such_module_here", cwd=tmp_path)
    assert (out.returncode, out.stderr) == (1, "ember: No module named no_such_module_here\n")
    (tmp_path / "emptydir").mkdir()
    out = ember("run", "emptydir", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr == "ember: can't find '__main__' module in 'emptydir'\n"
    (tmp_path / "emptydir" / "__main__.py").write_text(
        "import sys, torch\nprint(torch.__name__, torch.__spec__.name, sys.argv)\n")
    out = ember("run", "emptydir", "a", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (0, "torch ember ['emptydir', 'a']\n"), out.stderr


def test_report_lists_what_ended_the_run(tmp_path):
    script = tmp_path / "r.py"
    script.write_text("import torch\nprint(torch.ones(1).item())\nimport torch.no_such_submodule\n")
    out = ember("run", "--report", str(script))
    assert out.returncode == 1 and out.stdout == "1.0\n"
    assert "ModuleNotFoundError: ember does not implement torch.no_such_submodule yet" in out.stderr
    # the traceback ends at the user's import line, as Python's own ModuleNotFoundError does
    assert out.stderr.splitlines()[:3] == [
        "Traceback (most recent call last):", f'  File "{script}", line 3, in <module>',
        "    import torch.no_such_submodule"]
    assert "_alias.py" not in out.stderr
    report = out.stderr.split("ember run --report")[-1]
    assert "no PyTorch API" not in report and "  torch.no_such_submodule" in report.splitlines()
    assert report.splitlines()[-1] == (
        "The run ended early (ModuleNotFoundError: ember does not implement "
        "torch.no_such_submodule yet (looked for ember.no_such_submodule)); code after that point "
        "was not checked.")
    # a run that dies on another package says so rather than giving a clean bill
    script.write_text("import torch\nimport a_dependency_that_is_not_installed\n")
    out = ember("run", "--report", str(script))
    assert out.returncode == 1
    assert out.stderr.splitlines()[-2:] == [
        "ember run --report: the run used no PyTorch API that ember lacks.",
        "The run ended early (ModuleNotFoundError: No module named "
        "'a_dependency_that_is_not_installed'); code after that point was not checked."]
    # `from torch.x import name` where the module exists but the name does not
    script.write_text("from torch.utils.data.sampler import NoSuchSampler\n")
    out = ember("run", "--report", str(script))
    assert out.returncode == 1
    assert "  torch.utils.data.sampler.NoSuchSampler" in out.stderr.splitlines()
    # a module probed and caught is listed too, and the run goes on
    script.write_text("try:\n    import torch.no_such_submodule\n"
                      "except ImportError:\n    print('no such submodule')\n")
    out = ember("run", "--report", str(script))
    assert out.returncode == 0 and out.stdout == "no such submodule\n"
    assert "  torch.no_such_submodule" in out.stderr.splitlines() and "ended early" not in out.stderr


SPAWN_SCRIPT = """
import sys
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


if __name__ == "__main__":
    dl = DataLoader(Squares(), batch_size=4, num_workers=2, multiprocessing_context=sys.argv[1])
    print([b.flatten().tolist() for b in dl], torch.__spec__.name)  # (ember's, underneath)
"""


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_spawned_dataloader_workers_get_the_alias(tmp_path, context):
    # a `torch` that cannot be imported shadows any real one: the workers must get ember
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('real torch imported')\n")
    script = tmp_path / "workers.py"
    script.write_text(SPAWN_SCRIPT)
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "fake")}
    out = ember("run", str(script), context, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[[0.0, 1.0, 4.0, 9.0], [16.0, 25.0, 36.0, 49.0]] ember\n"
    assert "real torch imported" not in out.stderr


def test_keyboard_interrupt_and_main_module_pickling(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent("""
        import inspect, pickle, sys
        class Config:
            lr = 0.1
        def f():
            return 1
        back = pickle.loads(pickle.dumps(Config()))
        print(type(back).__module__, back.lr, inspect.getsource(f).split()[1])
        if len(sys.argv) > 1:
            raise KeyboardInterrupt
    """))
    ref, out = python(str(script)), ember("run", str(script))
    assert out.returncode == 0 and out.stdout == ref.stdout == "__main__ 0.1 f():\n"
    out = ember("run", str(script), "stop")
    assert out.returncode == 130
    assert out.stderr.splitlines()[-1] == "KeyboardInterrupt"
    assert f'File "{script}", line 10, in <module>' in out.stderr


def test_children_hook_pickles_an_installer_and_uninstalls():
    import multiprocessing.spawn as spawn

    from ember import _alias

    original = spawn.get_preparation_data
    _alias.install_for_children()
    try:
        assert spawn.get_preparation_data is not original
        data = spawn.get_preparation_data("worker")
        assert data["name"] == "worker" and _alias._PREP_KEY in data
        # what the child unpickles: a call to the installer, carrying nothing else
        reduced = data[_alias._PREP_KEY].__reduce__()
        assert reduced == (_alias._install_in_child, ())
        _alias.install_for_children()  # idempotent: wraps once
        assert spawn.get_preparation_data._ember_original is original
    finally:
        _alias._uninstall_for_children()
    assert spawn.get_preparation_data is original
