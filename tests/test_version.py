"""``torch.__version__`` under ember: the PyTorch API version, comparing as PyTorch's does."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ember
from ember.torch_version import InvalidVersion, TorchVersion


def test_reports_the_pytorch_api_version():
    v = ember.__version__
    assert isinstance(v, str) and isinstance(v, TorchVersion)
    assert v == "2.13.0+ember" and str(v) == "2.13.0+ember"
    assert ember.version.__version__ is v
    assert ember.version.cuda is None and ember.version.hip is None
    assert isinstance(ember.version.git_version, str)


def test_feature_gates_take_the_new_branch():
    v = ember.__version__
    assert v >= "2.0" and v >= "1.13.1" and v > "2.12.9" and v >= "2.13"
    assert v < "3" and v < "2.14" and not v < "2.13"
    assert v >= (2, 0) and v > (1, 13) and v < (3, 0) and v >= (2, 13, 0)
    assert int(v.split(".")[0]) >= 2
    assert tuple(int(p) for p in v.split("+")[0].split(".")) >= (2, 0)


def test_ember_own_version_matches_pyproject():
    root = Path(__file__).resolve().parent.parent
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert ember.__ember_version__ == meta["project"]["version"]


def test_packaging_parses_it():
    packaging_version = pytest.importorskip("packaging.version")
    parsed = packaging_version.parse(ember.__version__)
    assert parsed.release == (2, 13, 0) and parsed.local == "ember"
    assert parsed >= packaging_version.parse("2.0")


@pytest.mark.parametrize("a,b", [
    ("1.13.1", "2.0"), ("2.0.0a0", "2.0"), ("2.0.0.dev1", "2.0.0a0"), ("2.0.0rc1", "2.0.0"),
    ("2.0", "2.0.post1"), ("2.0.0", "2.0.0+cpu"), ("2.9", "2.10"), ("2.0.0+cpu", "2.0.1"),
    ("1!0.1", "2!0.0"), ("2.1.0b1", "2.1.0rc1"),
])
def test_order_matches_packaging(a, b):
    assert TorchVersion(a) < b and TorchVersion(b) > a
    assert TorchVersion(a) <= b and not TorchVersion(a) >= b
    packaging_version = pytest.importorskip("packaging.version")
    assert packaging_version.Version(a) < packaging_version.Version(b)


def test_equality_and_hash():
    assert TorchVersion("2.0") == "2.0.0" and TorchVersion("2.0") == (2, 0)
    assert TorchVersion("2.0") != "2.0.1"
    assert hash(TorchVersion("2.1")) == hash("2.1")
    assert TorchVersion("2.1") != "not a version"


def test_bad_comparisons():
    with pytest.raises(TypeError):
        ember.__version__ >= 2  # noqa: B015 - PyTorch refuses ints too
    with pytest.raises(InvalidVersion):
        ember.__version__ >= "two"  # noqa: B015


def test_torch_parity():
    torch = pytest.importorskip("torch")
    tv = torch.torch_version.TorchVersion
    for a in ["2.0", "1.13.1", "2.13", "3", "2.13.0", "2.13.1", "2.0.0a0", "2.13.0+cpu"]:
        for b in ["2.13.0+ember", "2.13.0", "1.9"]:
            for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
                assert getattr(TorchVersion(b), op)(a) == getattr(tv(b), op)(a), (b, op, a)
    assert (TorchVersion("2.13.0") >= (2, 0)) == (tv("2.13.0") >= (2, 0))


def test_cli_version_flag():
    out = subprocess.run([sys.executable, "-m", "ember", "--version"], capture_output=True,
                         text=True, check=True)
    first, core = out.stdout.strip().splitlines()
    assert first == f"ember {ember.__ember_version__} (PyTorch 2.13.0 API)"
    assert core.startswith(("core: native (", "core: pure Python ("))  # and why (_native_core)


def test_under_the_torch_name():
    code = ("import torch, torch.version; from torch.torch_version import TorchVersion; "
            "assert torch.__version__ >= '2.0' and torch.version.cuda is None; "
            "assert isinstance(torch.__version__, TorchVersion); print(torch.__version__)")
    out = subprocess.run([sys.executable, "-c",
                          "from ember import _alias; _alias.install(); exec(" + repr(code) + ")"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "2.13.0+ember"
