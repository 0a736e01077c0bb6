"""ember.vision.models: torchvision's module layout (state_dict keys and shapes from a fixture
written from torchvision, and against real torchvision where installed), forward outputs equal
to torchvision's with the same weights, initialisation, training, the weights enums (hub cache,
verified downloads from a loopback server, legacy ``pretrained=``) and the ImageClassification
preset."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import http.server
import importlib
import json
import math
import pickle
import threading
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pytest
from vision_reference import real_torchvision

import ember
from ember import hub, nn
from ember.vision import models as M
from ember.vision.transforms._presets import ImageClassification

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "vision_model_keys.json").read_text())
KEYS = FIXTURE["models"]
ALL = sorted(KEYS)
SMALL = ["resnet18", "resnet34", "resnet50", "alexnet", "mobilenet_v2", "squeezenet1_0",
         "squeezenet1_1"]
TV = real_torchvision()
needs_tv = pytest.mark.skipif(TV is None, reason="real torchvision (and torch) not installed")


@pytest.fixture(autouse=True, scope="module")
def _torch_one_thread():
    """PyTorch's thread pool spins against the other processes on a small shared machine
    (float64 depthwise convs took from 0.3 s to 20 s): one thread keeps the reference steady."""
    if TV is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@contextlib.contextmanager
def _no_default_init():
    """Skip Conv2d/Linear's default initialisation: VGG's 100M-weight classifier takes seconds
    to initialise, and where its weights are replaced (by torchvision's init or a checkpoint)
    or only keys and shapes matter, that work is wasted."""
    saved = nn.Linear.reset_parameters, nn.Conv2d.reset_parameters
    nn.Linear.reset_parameters = nn.Conv2d.reset_parameters = lambda self: None
    try:
        yield
    finally:
        nn.Linear.reset_parameters, nn.Conv2d.reset_parameters = saved


def _build(name: str, **kwargs):
    if not name.startswith("vgg"):
        return M.get_model(name, **kwargs)
    kwargs.setdefault("init_weights", False)
    with _no_default_init():
        return M.get_model(name, **kwargs)


# --- layout -----------------------------------------------------------------------------------


def test_fixture_covers_every_registered_model():
    assert M.list_models() == ALL
    assert {"resnet18", "resnet34", "resnet50", "vgg11", "vgg16", "vgg11_bn", "vgg16_bn",
            "alexnet", "mobilenet_v2", "squeezenet1_1"} <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_state_dict_keys_shapes_and_param_count_match_torchvision(name):
    model = _build(name)
    ours = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    assert ours == KEYS[name]["state_dict"]
    assert sum(p.numel() for p in model.parameters()) == KEYS[name]["num_params"]
    # the weights enums' num_params says the same
    for w in M.get_model_weights(name):
        assert w.meta["num_params"] == KEYS[name]["num_params"]
    assert all(v.dtype in (ember.float32, ember.int64) for v in model.state_dict().values())


@needs_tv
@pytest.mark.parametrize("name", ALL)
def test_fixture_still_matches_installed_torchvision(name):
    import torch

    with torch.device("meta"):
        ref = TV.models.get_model(name)
    assert [[k, list(v.shape)] for k, v in ref.state_dict().items()] == KEYS[name]["state_dict"]


def test_model_classes_and_builders_are_exported_like_torchvision():
    for cls in ("ResNet", "BasicBlock", "Bottleneck", "VGG", "AlexNet", "MobileNetV2",
                "SqueezeNet"):
        assert isinstance(getattr(M, cls), type)
    assert isinstance(M.resnet18(), M.ResNet)
    assert isinstance(M.resnet50().layer1[0], M.Bottleneck)
    assert isinstance(M.resnet18().layer1[0], M.BasicBlock)
    assert M.resnet.BasicBlock is M.BasicBlock
    from ember.vision.models.resnet import resnet18

    assert resnet18 is M.resnet18


@needs_tv
def test_public_names_match_torchvision_modules():
    for mod in ("resnet", "vgg", "alexnet", "mobilenetv2", "squeezenet"):
        # (``models.alexnet`` is the builder: the module is reached by its full name)
        theirs = set(importlib.import_module(f"torchvision.models.{mod}").__all__)
        ours = set(importlib.import_module(f"ember.vision.models.{mod}").__all__)
        missing = {n for n in theirs - ours if not n.startswith(("ResNeXt", "Wide_", "resnext", "wide_"))}
        assert not missing, f"{mod}: {sorted(missing)}"


# --- numerics against torchvision -------------------------------------------------------------


def _copy_from_torch(ours, ref) -> None:
    """Load torch module ``ref``'s state_dict into ``ours`` through NumPy."""
    state = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in ref.state_dict().items()}
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


def _randomise_bn_stats(ref, seed: int) -> None:
    """Non-trivial running statistics and affine parameters, so eval-mode BN is exercised."""
    import torch

    g = torch.Generator().manual_seed(seed)
    for m in ref.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


@needs_tv
@pytest.mark.parametrize("name", SMALL + ["vgg11_bn"])
def test_eval_forward_matches_torchvision_with_its_weights(name):
    import torch

    torch.manual_seed(0)
    kwargs = {"init_weights": False} if name.startswith("vgg") else {}
    ref = TV.models.get_model(name, **kwargs).eval()
    _randomise_bn_stats(ref, 1)
    ours = _build(name).eval()
    _copy_from_torch(ours, ref)
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.from_numpy(x))
    assert got.dtype == ember.float32 and tuple(got.shape) == want.shape == (2, 1000)
    scale = float(np.abs(want).max())
    assert scale > 0
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", SMALL + ["vgg11"])
def test_num_classes_sets_the_output_width(name):
    with _no_default_init() if name.startswith("vgg") else contextlib.nullcontext():
        model = M.get_model(name, num_classes=7).eval()  # VGG's init replaces the default one
    with ember.no_grad():
        y = model(ember.randn(2, 3, 64, 64))
    assert tuple(y.shape) == (2, 7) and y.dtype == ember.float32
    assert bool(ember.isfinite(y).all())


def test_min_sizes_of_the_weights_meta_are_accepted():
    for name, side in (("alexnet", 63), ("squeezenet1_1", 17), ("squeezenet1_0", 21)):
        assert M.get_model_weights(name).DEFAULT.meta["min_size"] == (side, side)
        with ember.no_grad():
            y = M.get_model(name, num_classes=3).eval()(ember.randn(1, 3, side, side))
        assert tuple(y.shape) == (1, 3)


@pytest.mark.parametrize("name,lr", [("resnet18", 0.01), ("squeezenet1_1", 0.005)])
def test_a_few_training_steps_lower_the_loss(name, lr):
    ember.manual_seed(0)
    model = M.get_model(name, num_classes=4)
    for m in model.modules():  # dropout would make one batch's loss noisy
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    model.train()
    x = ember.randn(4, 3, 32, 32)
    y = ember.tensor([0, 1, 2, 3])
    opt = ember.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for step in range(4):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if step == 0:
            for pname, p in model.named_parameters():
                assert p.grad is not None, pname
                assert bool(ember.isfinite(p.grad).all()), pname
            assert all(float(p.grad.abs().sum()) > 0 for p in model.parameters())
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0], losses


@needs_tv
@pytest.mark.parametrize("name,kwargs", [("resnet18", {}), ("mobilenet_v2", {"width_mult": 0.5})])
def test_train_mode_gradients_match_torchvision_in_float64(name, kwargs):
    # float64: in float32, 17 train-mode batch norms over a batch of 4 amplify rounding to
    # ~0.3% in the first layers' gradients of either library
    import torch

    torch.manual_seed(0)
    ref = TV.models.get_model(name, num_classes=4, **kwargs).double().train()
    ours = M.get_model(name, num_classes=4, **kwargs).double().train()
    _copy_from_torch(ours, ref)
    for m in list(ref.modules()) + list(ours.modules()):
        if isinstance(m, torch.nn.Dropout | nn.Dropout):
            m.p = 0.0
    x = np.random.default_rng(0).standard_normal((4, 3, 64, 64))
    y = np.array([0, 1, 2, 3])
    want = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y))
    want.backward()
    got = nn.functional.cross_entropy(ours(ember.from_numpy(x)), ember.from_numpy(y))
    got.backward()
    assert abs(float(got) - want.item()) < 1e-10
    theirs = dict(ref.named_parameters())
    for k, p in ours.named_parameters():
        g, w = p.grad.numpy(), theirs[k].grad.numpy()
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9 * max(np.abs(w).max(), 1.0),
                                   err_msg=k)
    # batch norm's running statistics were updated the same way
    for k, v in ref.state_dict().items():
        if "running" in k:
            np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-10, atol=1e-12)


# --- initialisation -----------------------------------------------------------------------------


def test_resnet_init_is_kaiming_normal_fan_out_and_unit_batchnorm():
    model = M.resnet50(zero_init_residual=True)
    w = model.layer4[0].conv2.weight.detach().numpy()  # (512, 512, 3, 3)
    assert w.dtype == np.float32
    fan_out = w.shape[0] * w.shape[2] * w.shape[3]
    assert abs(w.std() / math.sqrt(2.0 / fan_out) - 1) < 0.02
    assert abs(w.mean()) < 1e-3
    assert np.all(model.bn1.weight.detach().numpy() == 1)
    assert np.all(model.bn1.bias.detach().numpy() == 0)
    assert np.all(model.layer1[0].bn3.weight.detach().numpy() == 0)  # zero_init_residual
    assert np.all(M.resnet18(zero_init_residual=True).layer2[1].bn2.weight.detach().numpy() == 0)
    assert np.all(M.resnet50().layer1[0].bn3.weight.detach().numpy() == 1)


def test_mobilenet_and_squeezenet_init():
    mb = M.mobilenet_v2()
    lin = mb.classifier[1]
    assert abs(lin.weight.detach().numpy().std() / 0.01 - 1) < 0.02
    assert np.all(lin.bias.detach().numpy() == 0)
    conv = mb.features[18][0].weight.detach().numpy()  # 1x1, 320 -> 1280
    assert abs(conv.std() / math.sqrt(2.0 / conv.shape[0]) - 1) < 0.02
    sq = M.squeezenet1_1()
    final = sq.classifier[1].weight.detach().numpy()
    assert abs(final.std() / 0.01 - 1) < 0.05
    w = sq.features[12].expand3x3.weight.detach().numpy()  # kaiming_uniform_, a=0, fan_in
    bound = math.sqrt(6.0 / (w.shape[1] * 9))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.all(sq.features[12].expand3x3.bias.detach().numpy() == 0)


def test_vgg_init_is_torchvisions():
    ember.manual_seed(0)
    with _no_default_init():  # VGG's own init overwrites every conv and linear layer
        model = M.vgg11_bn()
    lin = model.classifier[6].weight.detach().numpy()
    assert abs(lin.std() / 0.01 - 1) < 0.02
    conv = model.features[0].weight.detach().numpy()
    assert np.all(model.features[0].bias.detach().numpy() == 0)
    assert abs(conv.std() / math.sqrt(2.0 / (64 * 9)) - 1) < 0.1


# --- registry and weights enums -----------------------------------------------------------------


def test_registry_functions():
    assert M.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18", "resnet34",
                                                 "resnet50"]
    assert M.list_models(include=["vgg1?"], exclude="vgg13") == ["vgg11", "vgg16", "vgg19"]
    assert M.list_models(module=M) == ALL
    assert isinstance(M.get_model("ResNet18", num_classes=3), M.ResNet)
    assert M.get_model_weights("resnet50") is M.ResNet50_Weights
    assert M.get_model_weights(M.mobilenet_v2) is M.MobileNet_V2_Weights
    assert M.get_weight("ResNet50_Weights.IMAGENET1K_V2") is M.ResNet50_Weights.DEFAULT
    assert M.get_model_builder("alexnet") is M.alexnet
    with pytest.raises(ValueError, match="Unknown model nope"):
        M.get_model("nope")
    with pytest.raises(ValueError, match="Invalid weight name"):
        M.get_weight("ResNet50_Weights")
    with pytest.raises(ValueError, match="has no member 'V9'"):
        M.get_weight("ResNet50_Weights.V9")


def test_weights_enum_members_and_verify():
    w = M.ResNet18_Weights.IMAGENET1K_V1
    assert M.ResNet18_Weights.DEFAULT is w
    assert repr(w) == "ResNet18_Weights.IMAGENET1K_V1"
    assert w.url == "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    assert len(w.meta["categories"]) == 1000 and w.meta["categories"][0] == "tench"
    assert M.ResNet18_Weights.verify("IMAGENET1K_V1") is w
    assert M.ResNet18_Weights.verify("ResNet18_Weights.IMAGENET1K_V1") is w
    assert M.ResNet18_Weights.verify(None) is None
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received ResNet34_Weights"):
        M.resnet18(weights=M.ResNet34_Weights.DEFAULT)
    with pytest.raises(ValueError, match="expected value 1000 but got 10"):
        M.resnet18(weights="DEFAULT", num_classes=10)  # refused before any download
    # copies compare equal to the member (deepcopy/pickle need Weights.__eq__)
    assert copy.deepcopy(w) is w
    assert pickle.loads(pickle.dumps(w)) is w
    preset = w.transforms()
    assert isinstance(preset, ImageClassification) and preset.crop_size == [224]
    assert M.ResNet50_Weights.IMAGENET1K_V2.transforms().resize_size == [232]


def _meta_equal(a: dict, b: dict) -> bool:
    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v
    return norm(a) == norm(b)


@needs_tv
@pytest.mark.parametrize("name", ALL)
def test_weights_enums_match_torchvision(name):
    ours, theirs = M.get_model_weights(name), TV.models.get_model_weights(name)
    assert ours.__name__ == theirs.__name__
    assert list(ours.__members__) == list(theirs.__members__)
    assert ours.DEFAULT.name == theirs.DEFAULT.name
    for a, b in zip(ours, theirs):
        assert a.url == b.url
        assert _meta_equal(a.meta, b.meta)
        assert a.transforms.keywords == b.transforms.keywords
        assert repr(a.transforms()) == repr(b.transforms())


# --- loading weights: cache, download, legacy interface -----------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: _Quiet(*a, directory=str(root), **k))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture()
def hub_dir(tmp_path, monkeypatch):
    d = tmp_path / "hub"
    monkeypatch.setattr(hub, "_hub_dir", str(d))
    return d


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("no download expected: the file is in the hub cache")
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _random_squeezenet_state() -> dict:
    ember.manual_seed(3)
    return M.squeezenet1_1().state_dict()


def _same_state(model, state) -> bool:
    return all(np.array_equal(model.state_dict()[k].numpy(), v.numpy()) for k, v in state.items())


def test_weights_load_from_the_hub_cache_without_network(hub_dir, monkeypatch):
    state = _random_squeezenet_state()
    (hub_dir / "checkpoints").mkdir(parents=True)
    ember.save(state, hub_dir / "checkpoints" / "squeezenet1_1-b8a52dc0.pth")
    _no_network(monkeypatch)
    for weights in (M.SqueezeNet1_1_Weights.IMAGENET1K_V1, "DEFAULT",
                    "SqueezeNet1_1_Weights.IMAGENET1K_V1"):
        model = M.squeezenet1_1(weights=weights)
        assert _same_state(model, state)
    assert _same_state(M.get_model("squeezenet1_1", weights="DEFAULT"), state)


def test_legacy_pretrained_maps_to_the_default_weights_with_warnings(hub_dir, monkeypatch):
    state = _random_squeezenet_state()
    (hub_dir / "checkpoints").mkdir(parents=True)
    ember.save(state, hub_dir / "checkpoints" / "squeezenet1_1-b8a52dc0.pth")
    _no_network(monkeypatch)
    with pytest.warns(UserWarning) as rec:
        model = M.squeezenet1_1(pretrained=True)
    messages = [str(r.message) for r in rec]
    assert "The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, please use 'weights' instead." in messages
    assert any("equivalent to passing `weights=SqueezeNet1_1_Weights.IMAGENET1K_V1`" in m
               and "`weights=SqueezeNet1_1_Weights.DEFAULT`" in m for m in messages)
    assert _same_state(model, state)
    with pytest.warns(UserWarning) as rec:
        model = M.squeezenet1_1(True)
    assert any("Using 'weights' as positional parameter" in str(r.message) for r in rec)
    assert _same_state(model, state)
    with pytest.warns(UserWarning) as rec:
        fresh = M.squeezenet1_1(pretrained=False)
    assert any("equivalent to passing `weights=None`" in str(r.message) for r in rec)
    assert not _same_state(fresh, state)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M.squeezenet1_1(weights=None)  # the new interface warns about nothing


@needs_tv
def test_a_torch_saved_torchvision_checkpoint_in_the_cache_loads_and_predicts_the_same(
        hub_dir, monkeypatch):
    import torch

    torch.manual_seed(0)
    ref = TV.models.squeezenet1_1().eval()
    (hub_dir / "checkpoints").mkdir(parents=True)
    torch.save(ref.state_dict(), hub_dir / "checkpoints" / "squeezenet1_1-b8a52dc0.pth")
    _no_network(monkeypatch)
    ours = M.squeezenet1_1(weights=M.SqueezeNet1_1_Weights.DEFAULT).eval()
    x = np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def _serve_checkpoint(root: Path, state: dict, prefix: str | None = None) -> str:
    tmp = root / "upload.pth"
    ember.save(state, tmp)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    name = f"squeezenet1_1-{prefix or digest[:8]}.pth"
    tmp.rename(root / name)
    return name


def test_download_from_a_loopback_server_is_hash_checked_and_cached(server, hub_dir,
                                                                     monkeypatch):
    root, base = server
    state = _random_squeezenet_state()
    name = _serve_checkpoint(root, state)
    monkeypatch.setattr(M.SqueezeNet1_1_Weights.IMAGENET1K_V1.value, "url", f"{base}/{name}")
    model = M.squeezenet1_1(weights="DEFAULT", progress=False)
    assert _same_state(model, state)
    assert (hub_dir / "checkpoints" / name).is_file()
    _no_network(monkeypatch)  # the second time it comes from the cache
    assert _same_state(M.squeezenet1_1(weights="DEFAULT", progress=False), state)


def test_a_download_whose_hash_does_not_match_its_name_is_refused(server, hub_dir, monkeypatch):
    root, base = server
    name = _serve_checkpoint(root, _random_squeezenet_state(), prefix="00000000")
    monkeypatch.setattr(M.SqueezeNet1_1_Weights.IMAGENET1K_V1.value, "url", f"{base}/{name}")
    with pytest.raises(RuntimeError, match="invalid hash value"):
        M.squeezenet1_1(weights="DEFAULT", progress=False)
    assert list((hub_dir / "checkpoints").iterdir()) == []


# --- the ImageClassification preset ---------------------------------------------------------------


def _pil_image(h: int, w: int):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(4)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def test_preset_on_pil_equals_a_pillow_numpy_reference():
    Image = pytest.importorskip("PIL.Image")
    img = _pil_image(300, 400)
    out = M.ResNet18_Weights.DEFAULT.transforms()(img)
    assert out.dtype == ember.float32 and tuple(out.shape) == (3, 224, 224)
    # the reference: Pillow's bilinear resize of the shorter side to 256, central crop, /255,
    # then per-channel normalisation
    small = img.resize((341, 256), Image.BILINEAR)
    top, left = round((256 - 224) / 2), round((341 - 224) / 2)
    crop = np.asarray(small, dtype=np.float32)[top:top + 224, left:left + 224] / 255
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32)
    want = ((crop - mean) / std).transpose(2, 0, 1)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-5)


def test_preset_repr_and_describe():
    p = ImageClassification(crop_size=224, resize_size=232)
    assert repr(p) == ("ImageClassification(\n    crop_size=[224]\n    resize_size=[232]\n"
                       "    mean=[0.485, 0.456, 0.406]\n    std=[0.229, 0.224, 0.225]\n"
                       "    interpolation=InterpolationMode.BILINEAR\n)")
    assert "resize_size=[232]" in p.describe() and "crop_size=[224]" in p.describe()
    with pytest.raises(TypeError):
        ImageClassification(224)  # keyword-only, as in torchvision


@needs_tv
def test_preset_matches_torchvision_on_pil_and_tensors():
    import torch

    ours = M.ResNet50_Weights.IMAGENET1K_V2.transforms()
    theirs = TV.models.ResNet50_Weights.IMAGENET1K_V2.transforms()
    assert repr(ours) == repr(theirs) and ours.describe() == theirs.describe()
    img = _pil_image(300, 280)
    np.testing.assert_allclose(ours(img).numpy(), theirs(img).numpy(), atol=1e-5)
    rng = np.random.default_rng(5)
    xf = rng.random((2, 3, 250, 300), dtype=np.float32)
    got = ours(ember.from_numpy(xf))
    assert got.dtype == ember.float32 and tuple(got.shape) == (2, 3, 224, 224)
    np.testing.assert_allclose(got.numpy(), theirs(torch.from_numpy(xf)).numpy(), atol=2e-4)
    xu = rng.integers(0, 256, (3, 250, 300), dtype=np.uint8)
    got = ours(ember.from_numpy(xu))
    assert got.dtype == ember.float32
    # PyTorch resizes uint8 images with fixed-point weights: a pixel may differ by one level
    one_level = 1 / 255 / 0.224
    diff = np.abs(got.numpy() - theirs(torch.from_numpy(xu)).numpy())
    assert diff.max() <= one_level + 1e-5 and (diff > 1e-5).mean() < 0.01
