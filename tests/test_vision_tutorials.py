"""The beginner tutorials (examples/vision/): the stand-in data, every program under `ember run`,
and the same programs under PyTorch + torchvision where they are installed.

The data maker writes scikit-learn's digits as FashionMNIST's idx files and CIFAR-10's python
batches; the tests check that layout, that both libraries read it (and refuse the CIFAR files
until told their md5 sums), that each program runs and prints what it should under ember, and
that PyTorch runs the same file to a comparable accuracy, or to the same output where nothing
is random.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import pickletools
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL")
pytest.importorskip("sklearn")

from vision_reference import real_torchvision  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "vision"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"vision_tutorials_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


run_all = _load("run_all")
make_data = _load("make_data")
PROGRAMS = {p.script: p for p in run_all.PROGRAMS}
NEEDS_MATPLOTLIB = {"data_tutorial.py", "cifar10_tutorial.py"}


def _have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


# --- the stand-in data -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tutorial_data") / "data"
    make_data.main(["--out", str(root)])
    return root


def _idx(path: Path) -> np.ndarray:
    raw = path.read_bytes()
    assert raw[:3] == b"\x00\x00\x08", f"{path} is not a uint8 idx file"
    nd = raw[3]
    shape = struct.unpack(f">{nd}I", raw[4:4 + 4 * nd])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * nd).reshape(shape)


def test_make_data_writes_the_real_layout_deterministically(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    make_data.main(["--out", str(a), "--train", "60", "--test", "20", "--seed", "3"])
    make_data.main(["--out", str(b), "--train", "60", "--test", "20", "--seed", "3"])
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), f"{rel} differs between two runs"

    raw = a / "FashionMNIST" / "raw"
    for prefix, n in (("train", 60), ("t10k", 20)):
        images, labels = _idx(raw / f"{prefix}-images-idx3-ubyte"), _idx(raw / f"{prefix}-labels-idx1-ubyte")
        assert images.shape == (n, 28, 28) and labels.shape == (n,)
        assert set(labels) <= set(range(10)) and images.max() > 200 and images[:, 0, :].max() == 0
        for kind in ("images-idx3", "labels-idx1"):
            plain = (raw / f"{prefix}-{kind}-ubyte").read_bytes()
            assert gzip.decompress((raw / f"{prefix}-{kind}-ubyte.gz").read_bytes()) == plain

    note = json.loads((a / "STAND_IN.json").read_text())
    folder = a / "cifar-10-batches-py"
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]
    assert sorted(note["cifar10_md5"]) == sorted(names)
    for name in names:
        data = (folder / name).read_bytes()
        assert note["cifar10_md5"][name] == hashlib.md5(data).hexdigest()
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(data)]
        assert ops[0] == ("PROTO", 2)
        # strings as Python 2 wrote them: byte strings, never Python 3's unicode opcodes
        assert not {"BINUNICODE", "SHORT_BINUNICODE", "BINBYTES", "SHORT_BINBYTES"} & {o for o, _ in ops}
        if name != "batches.meta":
            assert ("GLOBAL", "numpy.core.multiarray _reconstruct") in ops


@pytest.fixture
def cifar_classes(monkeypatch, data_root):
    """Both libraries' CIFAR10 classes (ember's, and torchvision's where installed), and a
    function that points one at the stand-in's md5 sums for this test only."""
    import ember.vision

    md5 = json.loads((data_root / "STAND_IN.json").read_text())["cifar10_md5"]

    def use_stand_in(cls):
        monkeypatch.setattr(cls, "train_list", [[n, md5[n]] for n, _ in cls.train_list])
        monkeypatch.setattr(cls, "test_list", [[n, md5[n]] for n, _ in cls.test_list])
        monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": md5[cls.meta["filename"]]})

    tv = real_torchvision()
    classes = {"ember": ember.vision.datasets.CIFAR10}
    if tv is not None:
        classes["torchvision"] = tv.datasets.CIFAR10
    return classes, use_stand_in


def test_cifar_stand_in_is_refused_until_given_its_md5_sums(cifar_classes, data_root):
    classes, use_stand_in = cifar_classes
    loaded = {}
    for lib, cls in classes.items():
        # the files are not CIFAR-10's, so both libraries refuse them by their md5 sums
        with pytest.raises(RuntimeError, match="Dataset not found or corrupted") as info:
            cls(str(data_root), train=True, download=False)
        if lib == "ember":
            assert "wrong md5" in str(info.value) and "data_batch_1" in str(info.value)
        use_stand_in(cls)
        train = cls(str(data_root), train=True, download=True)  # verified: nothing is fetched
        test = cls(str(data_root), train=False)
        assert len(train) == 4000 and len(test) == 500
        assert train.classes == make_data.CIFAR_CLASSES
        image, label = train[7]
        assert image.mode == "RGB" and image.size == (32, 32) and label == train.targets[7]
        loaded[lib] = (np.asarray(train.data), list(train.targets), np.asarray(test.data))
    if "torchvision" not in loaded:
        pytest.skip("torchvision is not installed: checked ember's side only")
    for got, want in zip(loaded["ember"], loaded["torchvision"], strict=True):
        np.testing.assert_array_equal(got, want)


def test_fashion_stand_in_reads_the_same_in_both_libraries(data_root):
    import ember.vision

    ours = ember.vision.datasets.FashionMNIST(str(data_root), train=True, download=True)
    assert len(ours) == 4000 and ours.classes[0] == "T-shirt/top"
    want = _idx(data_root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte")
    np.testing.assert_array_equal(ours.data.numpy(), want)
    tv = real_torchvision()
    if tv is None:
        pytest.skip("torchvision is not installed")
    theirs = tv.datasets.FashionMNIST(str(data_root), train=True, download=True)
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    np.testing.assert_array_equal(ours.targets.numpy(), theirs.targets.numpy())


# --- the programs ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def have_pytorch() -> bool:
    return run_all.have_torchvision()


@pytest.fixture(scope="module")
def runs(data_root, tmp_path_factory, have_pytorch):
    """Every program, under ember (with the real torch made unimportable) and, where installed,
    under PyTorch; the two runs of a program go side by side, each in its own folder."""
    base = tmp_path_factory.mktemp("tutorial_runs")
    fake = base / "no_real_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the real torch was imported')\n")
    no_torch = run_all.single_threaded_env({"PYTHONPATH": str(fake.parent)})
    results = {}
    for name, program in PROGRAMS.items():
        if name in NEEDS_MATPLOTLIB and not _have_matplotlib():
            continue
        started = {"ember": run_all.start("ember", program, data_root, base / "ember" / name, no_torch)}
        if have_pytorch:
            started["pytorch"] = run_all.start("pytorch", program, data_root, base / "pytorch" / name)
        for engine, s in started.items():
            results[engine, name] = (run_all.finish(s), base / engine / name)
    return results


def _ember(runs, name):
    if name in NEEDS_MATPLOTLIB and not _have_matplotlib():
        pytest.skip("matplotlib is not installed")
    result, cwd = runs["ember", name]
    assert result.returncode == 0, f"{name} fails under ember run:\n{result.stderr[-3000:]}"
    assert "the real torch was imported" not in result.stderr
    return result.stdout, cwd


def _png_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as img:
        return img.size


def test_quickstart_under_ember(runs, data_root):
    out, cwd = _ember(runs, "quickstart_tutorial.py")
    assert "Shape of X [N, C, H, W]: torch.Size([64, 1, 28, 28])" in out
    assert "Shape of y: torch.Size([64]) torch.int64" in out
    assert "Using cpu device" in out
    assert out.count("Test Error:") == 5 and "Done!" in out
    assert run_all.accuracy(PROGRAMS["quickstart_tutorial.py"], out) >= 80
    assert "Saved PyTorch Model State to model.pth" in out and (cwd / "model.pth").is_file()
    first_label = _idx(data_root / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte")[0]
    actual = make_data.FASHION_CLASSES[first_label]
    assert re.search(rf'^Predicted: "[^"]+", Actual: "{re.escape(actual)}"$', out, re.M)


def test_tensors_under_ember(runs):
    out, _ = _ember(runs, "tensorqs_tutorial.py")
    for line in ("First row: tensor([1., 1., 1., 1.])", "Last column: tensor([1., 1., 1., 1.])",
                 "y1 == y2 == y3: True", "z1 == z2 == z3: True", "12.0 <class 'float'>",
                 "Shape of tensor: torch.Size([3, 4])", "Device tensor is stored on: cpu"):
        assert line in out.splitlines(), line
    # the NumPy bridge: t.add_ shows in n, np.add(out=n) shows in t
    assert "t: tensor([2., 2., 2., 2., 2.])\nn: [2. 2. 2. 2. 2.]" in out
    assert "t: tensor([2., 2., 2., 2., 2.], dtype=torch.float64)\nn: [2. 2. 2. 2. 2.]" in out
    assert "tensor([[6., 5., 6., 6.]," in out  # after add_(5) with column 1 zeroed


def test_datasets_and_dataloaders_under_ember(runs):
    out, cwd = _ember(runs, "data_tutorial.py")
    assert "Number of datapoints: 4000" in out
    assert "custom dataset: 20 items; item 3 is (1, 28, 28) torch.float32 with label 3" in out
    assert "same pixels as the dataset: True" in out
    assert "Feature batch shape: torch.Size([64, 1, 28, 28])" in out
    assert "Labels batch shape: torch.Size([64])" in out
    assert re.search(r"^Label: \d$", out, re.M)
    assert "one pass over train_dataloader gives 4000 of 4000 images in 63 batches" in out
    assert _png_size(cwd / "fashion_samples.png") == (800, 800)
    assert len(list((cwd / "custom_images").glob("*.png"))) == 20


def test_transforms_under_ember(runs):
    out, _ = _ember(runs, "transforms_tutorial.py")
    assert "image: Tensor (1, 28, 28) torch.float32, values 0.0..1.0" in out
    assert "raw pixels were torch.uint8 0..255" in out
    assert "target: tensor([0., 0., 0., 1., 0., 0., 0., 0., 0., 0.])" in out  # item 0 is a 3
    assert "batch: images (64, 1, 28, 28), targets (64, 10) torch.float32" in out
    assert "every row is one-hot: True" in out and "rows agree with the labels: True" in out


def test_build_model_under_ember(runs):
    out, _ = _ember(runs, "buildmodel_tutorial.py")
    assert "(linear_relu_stack): Sequential(" in out and "(0): Linear(in_features=784, out_features=512, bias=True)" in out
    assert re.search(r"^Predicted class: tensor\(\[\d\]\)$", out, re.M)
    for line in ("torch.Size([3, 28, 28])", "torch.Size([3, 784])", "torch.Size([3, 20])",
                 "Probabilities sum to 1: True"):
        assert line in out.splitlines(), line
    assert "grad_fn=<AddmmBackward0>" in out and "grad_fn=<ReluBackward0>" in out
    assert "Layer: linear_relu_stack.0.weight | Size: torch.Size([512, 784]) | Values : " in out
    assert out.count("Layer: ") == 6


def test_autograd_under_ember(runs):
    out, _ = _ember(runs, "autogradqs_tutorial.py")
    assert re.search(r"Gradient function for z = <AddBackward0 object at 0x[0-9a-f]+>", out)
    assert re.search(r"Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object", out)
    assert "w.grad matches the formula: True" in out and "b.grad matches the formula: True" in out
    assert "\nTrue\nFalse\nFalse\n" in out  # requires_grad: tracked, under no_grad, detached
    first = ("tensor([[4., 2., 2., 2., 2.],\n        [2., 4., 2., 2., 2.],\n"
             "        [2., 2., 4., 2., 2.],\n        [2., 2., 2., 4., 2.]])")
    second = first.replace("4.", "8.").replace("2.", "4.")
    assert f"First call\n{first}\n\nSecond call\n{second}\n\nCall after zeroing gradients\n{first}" in out


def test_optimization_under_ember(runs):
    out, _ = _ember(runs, "optimization_tutorial.py")
    assert out.count("Epoch ") == 10 and "Done!" in out
    assert "loss: " in out and "[   64/ 4000]" in out
    assert run_all.accuracy(PROGRAMS["optimization_tutorial.py"], out) >= 85


def test_save_and_load_under_ember(runs):
    out, cwd = _ember(runs, "saveloadrun_tutorial.py")
    assert "weights reloaded, same outputs: True" in out
    assert "whole model reloaded (SqueezeNet), same outputs: True" in out
    assert (cwd / "model_weights.pth").is_file() and (cwd / "model.pth").is_file()


def test_training_a_classifier_under_ember(runs):
    out, cwd = _ember(runs, "cifar10_tutorial.py")
    assert "Checking the CIFAR-10 files against the stand-in's md5 sums" in out
    assert re.search(r"^\[2,  1000\] loss: \d\.\d{3}$", out, re.M) and "Finished Training" in out
    assert re.search(r"^GroundTruth:  (\w+ *){4}$", out, re.M)
    assert re.search(r"^Predicted:  (\w+ *){4}$", out, re.M)
    assert run_all.accuracy(PROGRAMS["cifar10_tutorial.py"], out) >= 60
    per_class = re.findall(r"^Accuracy for class: (\w+) +is ([\d.]+) %$", out, re.M)
    assert [c for c, _ in per_class] == ["plane", "car", "bird", "cat", "deer", "dog", "frog",
                                         "horse", "ship", "truck"]
    assert out.rstrip().endswith("cpu")
    assert (cwd / "cifar_net.pth").is_file()
    # make_grid of 4 images, 2 pixels of padding: 4 * 34 + 2 wide, drawn into a matplotlib figure
    assert _png_size(cwd / "cifar_train_batch.png") == (640, 480)


# --- the same programs under PyTorch ---------------------------------------------------------

def _masked(text: str) -> str:
    """The output with every number and object address replaced, and whitespace runs made one
    space: what a run prints, less the random values (ember's generator is not PyTorch's)."""
    text = re.sub(r"0x[0-9a-f]+", "ADDR", text)
    text = re.sub(r"-?\d+(\.\d*)?(e[-+]?\d+)?", "#", text)
    return re.sub(r"([\[(]) ", r"\1", " ".join(text.split()))  # (sign padding: "[ #" and "[#")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_pytorch_runs_the_same_program_alike(runs, have_pytorch, name):
    ours, _ = _ember(runs, name)
    if not have_pytorch:
        pytest.skip("PyTorch or torchvision is not installed: ran the ember side only")
    result, _ = runs["pytorch", name]
    assert result.returncode == 0, f"{name} fails under PyTorch:\n{result.stderr[-3000:]}"
    program = PROGRAMS[name]
    if program.accuracy is None:
        assert _masked(ours) == _masked(result.stdout)
        return
    ours_acc, theirs_acc = run_all.accuracy(program, ours), run_all.accuracy(program, result.stdout)
    # different random initial weights (and shuffles): comparable, not equal
    bar, spread = (60, 15) if name == "cifar10_tutorial.py" else (80, 5)
    assert theirs_acc >= bar, f"PyTorch reached {theirs_acc}%"
    assert abs(ours_acc - theirs_acc) <= spread, f"ember {ours_acc}%, PyTorch {theirs_acc}%"
    assert len(ours.splitlines()) == len(result.stdout.splitlines())


def test_checkpoints_load_across_libraries(runs, have_pytorch):
    """ember's state_dict files load in PyTorch with weights_only=True, and PyTorch's in ember."""
    import ember

    _ember(runs, "quickstart_tutorial.py")
    if not have_pytorch:
        pytest.skip("PyTorch is not installed")
    import torch

    checked = 0
    for name, file in (("quickstart_tutorial.py", "model.pth"), ("cifar10_tutorial.py", "cifar_net.pth"),
                       ("saveloadrun_tutorial.py", "model_weights.pth")):
        if ("ember", name) not in runs or runs["pytorch", name][0].returncode != 0:
            continue
        ours_path, theirs_path = runs["ember", name][1] / file, runs["pytorch", name][1] / file
        in_torch = torch.load(ours_path, weights_only=True)
        in_ember = ember.load(theirs_path, weights_only=True)
        theirs = torch.load(theirs_path, weights_only=True)
        assert list(in_torch) == list(theirs) == list(in_ember)
        for key, value in in_torch.items():
            assert value.shape == theirs[key].shape and value.dtype == theirs[key].dtype, key
            np.testing.assert_array_equal(in_ember[key].numpy(), theirs[key].numpy())
        checked += 1
    assert checked >= 2


def _globals_named(path: Path) -> set[str]:
    import zipfile

    with zipfile.ZipFile(path) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    return {str(arg) for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}


def test_whole_model_files_name_torchvision_classes_and_load_across_libraries(tmp_path):
    """torch.save(model) of a torchvision model: ember's file names the class as torchvision's
    (torchvision.models.squeezenet.SqueezeNet, not torch.vision...), so PyTorch loads it, and
    ember loads PyTorch's file into ember.vision's class, with or without `ember run`."""
    import ember
    import ember.vision

    ember.manual_seed(0)
    ours = ember.vision.models.squeezenet1_1().eval()
    x = ember.rand(1, 3, 64, 64)
    with ember.no_grad():
        expected = ours(x).numpy()
    path = tmp_path / "ember_model.pth"
    ember.save(ours, path)
    named = _globals_named(path)
    assert "torchvision.models.squeezenet SqueezeNet" in named
    assert "torchvision.models.squeezenet Fire" in named
    assert not any(n.startswith("torch.vision") for n in named)
    again = ember.load(path, weights_only=False)
    assert type(again) is ember.vision.models.SqueezeNet
    with ember.no_grad():
        np.testing.assert_array_equal(again(x).numpy(), expected)

    tv = real_torchvision()
    if tv is None:
        pytest.skip("PyTorch or torchvision is not installed")
    import torch

    theirs = torch.load(path, weights_only=False)
    assert type(theirs) is tv.models.SqueezeNet
    with torch.no_grad():
        np.testing.assert_allclose(theirs(torch.from_numpy(x.numpy())).numpy(), expected,
                                   rtol=1e-5, atol=1e-6)
    torch_path = tmp_path / "torch_model.pth"
    torch.save(theirs, torch_path)
    back = ember.load(torch_path, weights_only=False)
    assert type(back) is ember.vision.models.SqueezeNet  # not the real torchvision's class
    with ember.no_grad():
        np.testing.assert_allclose(back(x).numpy(), expected, rtol=1e-5, atol=1e-6)
