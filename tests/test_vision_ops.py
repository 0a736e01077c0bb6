"""ember.vision.ops: box utilities against NumPy references written here (and real
torchvision's pure-Python box functions where installed), ``roi_align`` forward against a
plain-Python bilinear-sampling reference and its gradients against finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from devices import host, on
from vision_reference import real_torchvision

import ember
from ember.vision import ops

TV = real_torchvision()
needs_tv = pytest.mark.skipif(TV is None, reason="real torchvision (and torch) not installed")


def _random_boxes(rng: np.random.Generator, n: int, size: float = 50.0,
                  dtype=np.float32) -> np.ndarray:
    xy = rng.uniform(0, size, (n, 2))
    wh = rng.uniform(1, size / 2, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(dtype)


# --- NumPy references -----------------------------------------------------------------------


def ref_area(b: np.ndarray) -> np.ndarray:
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def ref_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a.astype(np.float64)):
        for j, q in enumerate(b.astype(np.float64)):
            w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = w * h
            out[i, j] = inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter)
    return out


def ref_nms(b: np.ndarray, s: np.ndarray, thr: float) -> list[int]:
    order = sorted(range(len(s)), key=lambda i: -s[i])
    iou = ref_iou(b, b)
    keep: list[int] = []
    for i in order:
        if all(iou[i, k] <= thr for k in keep):
            keep.append(i)
    return keep


# --- boxes ------------------------------------------------------------------------------------


def test_box_area_and_iou_match_numpy_and_keep_float32():
    rng = np.random.default_rng(0)
    a, b = _random_boxes(rng, 7), _random_boxes(rng, 5)
    area = ops.box_area(ember.from_numpy(a))
    assert area.dtype == ember.float32
    np.testing.assert_allclose(area.numpy(), ref_area(a), rtol=1e-6)
    iou = ops.box_iou(ember.from_numpy(a), ember.from_numpy(b))
    assert iou.dtype == ember.float32 and tuple(iou.shape) == (7, 5)
    np.testing.assert_allclose(iou.numpy(), ref_iou(a, b), rtol=1e-5, atol=1e-7)
    assert (iou.numpy() > 0).any() and (iou.numpy() == 0).any()  # overlaps and disjoint pairs
    # identical boxes: IoU 1; float64 stays float64
    np.testing.assert_allclose(ops.box_iou(ember.from_numpy(a.astype(np.float64)),
                                           ember.from_numpy(a.astype(np.float64))).numpy().diagonal(), 1.0)


def test_box_iou_and_area_in_other_formats_and_batched():
    rng = np.random.default_rng(1)
    a, b = _random_boxes(rng, 4), _random_boxes(rng, 3)
    want = ref_iou(a, b)
    for fmt in ("xywh", "cxcywh"):
        ca = ops.box_convert(ember.from_numpy(a), "xyxy", fmt)
        cb = ops.box_convert(ember.from_numpy(b), "xyxy", fmt)
        np.testing.assert_allclose(ops.box_iou(ca, cb, fmt=fmt).numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ops.box_area(ca, fmt=fmt).numpy(), ref_area(a), rtol=1e-5)
    batched = ops.box_iou(ember.from_numpy(np.stack([a, a])), ember.from_numpy(np.stack([b, b])))
    assert tuple(batched.shape) == (2, 4, 3)
    np.testing.assert_allclose(batched.numpy()[1], want, rtol=1e-5, atol=1e-7)


def test_integer_boxes_area_stays_integer_and_iou_is_float():
    a = np.array([[0, 0, 4, 2], [1, 1, 3, 5]], dtype=np.int64)
    assert ops.box_area(ember.from_numpy(a)).dtype == ember.int64
    assert ops.box_area(ember.from_numpy(a.astype(np.int16))).dtype == ember.int32
    iou = ops.box_iou(ember.from_numpy(a), ember.from_numpy(a))
    assert iou.dtype == ember.float32
    np.testing.assert_allclose(iou.numpy(), ref_iou(a, a), rtol=1e-6)


def test_box_convert_round_trips_and_matches_the_formulas():
    rng = np.random.default_rng(2)
    a = _random_boxes(rng, 6)
    t = ember.from_numpy(a)
    x1, y1, x2, y2 = a.T
    expect = {"xywh": np.stack([x1, y1, x2 - x1, y2 - y1], 1),
              "cxcywh": np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1)}
    for fmt, want in expect.items():
        got = ops.box_convert(t, "xyxy", fmt)
        assert got.dtype == ember.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-5)
        np.testing.assert_allclose(ops.box_convert(got, fmt, "xyxy").numpy(), a, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(ops.box_convert(ops.box_convert(t, "xyxy", "xywh"), "xywh", "cxcywh").numpy(),
                               expect["cxcywh"], rtol=1e-6, atol=1e-5)
    same = ops.box_convert(t, "xyxy", "xyxy")
    assert same is not t and np.array_equal(same.numpy(), a)


def test_box_errors_name_the_problem():
    t = ember.zeros(3, 4)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(t, "xyxy", "yxyx")
    with pytest.raises(NotImplementedError, match="rotated"):
        ops.box_convert(t, "xyxy", "cxcywhr")
    with pytest.raises(NotImplementedError, match="rotated"):
        ops.box_iou(ember.zeros(3, 5), ember.zeros(2, 5), fmt="cxcywhr")
    with pytest.raises(ValueError, match=r"\[\.\.\., 4\]"):
        ops.box_iou(ember.zeros(3, 3), t)
    with pytest.raises(ValueError, match="Unsupported Bounding Box area"):
        ops.box_area(t, fmt="xyxyxyxy")


def test_clip_and_remove_small_boxes_match_numpy():
    b = np.array([[-5, 2, 30, 40], [10, -1, 12, 3], [0, 0, 100, 100], [3, 3, 3.5, 9]], np.float32)
    clipped = ops.clip_boxes_to_image(ember.from_numpy(b), (20, 25))
    assert clipped.dtype == ember.float32
    want = b.copy()
    want[:, 0::2] = np.clip(want[:, 0::2], 0, 25)
    want[:, 1::2] = np.clip(want[:, 1::2], 0, 20)
    np.testing.assert_array_equal(clipped.numpy(), want)
    keep = ops.remove_small_boxes(ember.from_numpy(b), 2.0)
    assert keep.dtype == ember.int64
    np.testing.assert_array_equal(keep.numpy(), [0, 1, 2])  # the last is 0.5 wide


@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.8])
def test_nms_matches_a_greedy_reference(thr):
    rng = np.random.default_rng(3)
    b = _random_boxes(rng, 60)
    s = rng.permutation(60).astype(np.float32) / 60  # distinct scores: one right answer
    keep = ops.nms(ember.from_numpy(b), ember.from_numpy(s), thr)
    assert keep.dtype == ember.int64
    want = ref_nms(b, s, thr)
    assert keep.numpy().tolist() == want
    assert 1 <= len(want) < 60 or thr == 0.8


def test_nms_edge_cases_and_errors():
    empty = ops.nms(ember.zeros(0, 4), ember.zeros(0), 0.5)
    assert tuple(empty.shape) == (0,) and empty.dtype == ember.int64
    b = ember.tensor([[0.0, 0, 10, 10], [0, 0, 10, 10], [20, 20, 30, 30]])
    # identical boxes (IoU 1) suppress each other; a threshold of 1 keeps them all
    assert ops.nms(b, ember.tensor([0.9, 0.8, 0.7]), 0.5).tolist() == [0, 2]
    assert ops.nms(b, ember.tensor([0.9, 0.8, 0.7]), 1.0).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="one score per box"):
        ops.nms(b, ember.tensor([0.9, 0.8]), 0.5)
    with pytest.raises(ValueError, match=r"\[\.\.\., 4\]"):
        ops.nms(ember.zeros(3, 5), ember.zeros(3), 0.5)


def test_batched_nms_only_suppresses_within_a_category():
    rng = np.random.default_rng(4)
    b = _random_boxes(rng, 40)
    s = rng.permutation(40).astype(np.float32)
    c = rng.integers(0, 3, 40)
    keep = ops.batched_nms(ember.from_numpy(b), ember.from_numpy(s), ember.from_numpy(c), 0.4)
    assert keep.dtype == ember.int64
    want = []
    for cls in range(3):
        idx = np.nonzero(c == cls)[0]
        want += [int(idx[i]) for i in ref_nms(b[idx], s[idx], 0.4)]
    want.sort(key=lambda i: -s[i])
    assert keep.numpy().tolist() == want
    # two identical boxes of different categories both survive
    two = ember.tensor([[0.0, 0, 5, 5], [0, 0, 5, 5]])
    assert ops.batched_nms(two, ember.tensor([0.9, 0.8]), ember.tensor([0, 1]), 0.5).tolist() == [0, 1]
    assert ops.batched_nms(two, ember.tensor([0.9, 0.8]), ember.tensor([1, 1]), 0.5).tolist() == [0]
    assert tuple(ops.batched_nms(ember.zeros(0, 4), ember.zeros(0), ember.zeros(0, dtype=ember.int64),
                                 0.5).shape) == (0,)


def test_box_iou_is_differentiable():
    rng = np.random.default_rng(5)
    a = ember.from_numpy(_random_boxes(rng, 3, dtype=np.float64)).requires_grad_()
    b = ember.from_numpy(_random_boxes(rng, 4, dtype=np.float64)).requires_grad_()
    assert ember.autograd.gradcheck(lambda p, q: ops.box_iou(p, q), (a, b))


@needs_tv
def test_box_functions_match_torchvision():
    import torch

    rng = np.random.default_rng(6)
    a, b = _random_boxes(rng, 9), _random_boxes(rng, 6)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_allclose(ops.box_iou(ea, eb).numpy(), TV.ops.box_iou(ta, tb).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ops.box_area(ea).numpy(), TV.ops.box_area(ta).numpy(), rtol=1e-6)
    for src in ("xyxy", "xywh", "cxcywh"):
        for dst in ("xyxy", "xywh", "cxcywh"):
            np.testing.assert_allclose(ops.box_convert(ea, src, dst).numpy(),
                                       TV.ops.box_convert(ta, src, dst).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(ops.clip_boxes_to_image(ea, (30, 40)).numpy(),
                                  TV.ops.clip_boxes_to_image(ta, (30, 40)).numpy())
    np.testing.assert_array_equal(ops.remove_small_boxes(ea, 10.0).numpy(),
                                  TV.ops.remove_small_boxes(ta, 10.0).numpy())


# --- roi_align --------------------------------------------------------------------------------


def _bilinear(img: np.ndarray, y: float, x: float) -> np.ndarray:
    """torchvision's bilinear sample of img (C, H, W) at (y, x)."""
    _, h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return (hy * hx * img[:, y0, x0] + hy * lx * img[:, y0, x1]
            + ly * hx * img[:, y1, x0] + ly * lx * img[:, y1, x1])


def ref_roi_align(x: np.ndarray, rois: np.ndarray, scale: float, ph: int, pw: int, sr: int,
                  aligned: bool) -> np.ndarray:
    """One bilinear sample at a time, as the definition reads (float64)."""
    x = x.astype(np.float64)
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for k, r in enumerate(rois.astype(np.float64)):
        img = x[int(r[0])]
        sx, sy, ex, ey = (r[1:] * scale - off)
        rw, rh = ex - sx, ey - sy
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sr if sr > 0 else math.ceil(rh / ph)
        gw = sr if sr > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(x.shape[1])
                for iy in range(gh):
                    yy = sy + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = sx + j * bw + (ix + 0.5) * bw / gw
                        acc += _bilinear(img, yy, xx)
                out[k, :, i, j] = acc / count
    return out


def _roi_case(dtype=np.float32):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 9, 11)).astype(dtype)
    boxes0 = np.array([[1.2, 0.5, 7.7, 6.1],      # inside
                       [-3.0, -2.0, 4.0, 5.0],    # over the top-left edge
                       [6.0, 4.0, 14.0, 12.5],    # past the bottom-right edge
                       [2.0, 2.0, 2.4, 2.3]],     # under a pixel
                      dtype=dtype)
    boxes1 = np.array([[0.0, 0.0, 10.0, 8.0], [3.3, 1.1, 9.9, 8.8]], dtype=dtype)
    return x, boxes0, boxes1


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_roi_align_matches_the_bilinear_reference(aligned, sampling_ratio, scale):
    x, b0, b1 = _roi_case()
    rois = np.concatenate([np.c_[np.zeros(len(b0)), b0], np.c_[np.ones(len(b1)), b1]]).astype(np.float32)
    want = ref_roi_align(x, rois, scale, 3, 4, sampling_ratio, aligned)
    got = ops.roi_align(ember.from_numpy(x), ember.from_numpy(rois), (3, 4), scale,
                        sampling_ratio, aligned)
    assert got.dtype == ember.float32 and tuple(got.shape) == (6, 3, 3, 4)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    # a list with one Tensor[L, 4] per image is the same request
    listed = ops.roi_align(ember.from_numpy(x), [ember.from_numpy(b0), ember.from_numpy(b1)],
                           (3, 4), scale, sampling_ratio, aligned)
    np.testing.assert_array_equal(listed.numpy(), got.numpy())


def test_roi_align_float64_is_exact_and_int_output_size():
    x, b0, _ = _roi_case(np.float64)
    rois = np.c_[np.zeros(len(b0)), b0]
    got = ops.roi_align(ember.from_numpy(x), ember.from_numpy(rois), 2, 1.0, -1, True)
    assert got.dtype == ember.float64 and tuple(got.shape) == (4, 3, 2, 2)
    np.testing.assert_allclose(got.numpy(), ref_roi_align(x, rois, 1.0, 2, 2, -1, True),
                               rtol=1e-12, atol=1e-12)


def test_roi_align_module_empty_boxes_and_batch_routing():
    x, b0, b1 = _roi_case()
    layer = ops.RoIAlign((2, 2), spatial_scale=1.0, sampling_ratio=2, aligned=True)
    assert repr(layer) == "RoIAlign(output_size=(2, 2), spatial_scale=1.0, sampling_ratio=2, aligned=True)"
    out = layer(ember.from_numpy(x), [ember.from_numpy(b0), ember.from_numpy(b1)])
    # the boxes of image 1 pooled from image 1 alone
    alone = layer(ember.from_numpy(x[1:]), [ember.from_numpy(b1)])
    np.testing.assert_array_equal(out.numpy()[4:], alone.numpy())
    empty = ops.roi_align(ember.from_numpy(x), ember.zeros(0, 5), 3)
    assert tuple(empty.shape) == (0, 3, 3, 3) and empty.dtype == ember.float32


def test_roi_align_errors_name_the_fix():
    x = ember.zeros(1, 2, 5, 5)
    with pytest.raises(ValueError, match=r"Tensor\[K, 5\]"):
        ops.roi_align(x, ember.zeros(2, 4), 2)
    with pytest.raises(ValueError, match=r"List\[Tensor\[L, 4\]\]"):
        ops.roi_align(x, [ember.zeros(2, 5)], 2)
    with pytest.raises(TypeError, match=r"boxes.to\(input.dtype\)"):
        ops.roi_align(x, ember.zeros(2, 5, dtype=ember.float64), 2)
    with pytest.raises(TypeError, match="floating point"):
        ops.roi_align(ember.zeros(1, 2, 5, 5, dtype=ember.int64), ember.zeros(1, 5, dtype=ember.int64), 2)
    with pytest.raises(ValueError, match=r"image indices must lie in \[0, 1\)"):
        ops.roi_align(x, ember.tensor([[1.0, 0, 0, 2, 2]]), 2)
    with pytest.raises(ValueError, match=r"Tensor\[N, C, H, W\]"):
        ops.roi_align(ember.zeros(2, 5, 5), ember.zeros(1, 5), 2)


@pytest.mark.parametrize("aligned,sampling_ratio", [(False, -1), (True, 2)])
def test_roi_align_gradients_match_finite_differences(aligned, sampling_ratio):
    x, b0, b1 = _roi_case(np.float64)
    xt = ember.from_numpy(x).requires_grad_()
    boxes = [ember.from_numpy(b0), ember.from_numpy(b1)]

    def fn(inp):
        return ops.roi_align(inp, boxes, (2, 3), 1.0, sampling_ratio, aligned)

    assert ember.autograd.gradcheck(fn, (xt,), eps=1e-6, atol=1e-7)
    assert ember.autograd.gradgradcheck(fn, (xt,))


def test_roi_align_backward_float32_and_is_the_adjoint():
    x, b0, b1 = _roi_case()
    xt = ember.from_numpy(x).requires_grad_()
    out = ops.roi_align(xt, [ember.from_numpy(b0), ember.from_numpy(b1)], 3, 0.5, -1, False)
    g = np.random.default_rng(8).standard_normal(out.shape).astype(np.float32)
    out.backward(ember.from_numpy(g))
    assert xt.grad.dtype == ember.float32 and xt.grad.shape == xt.shape
    # <roi_align(x), g> is linear in x, so its gradient dotted with x equals it
    lhs = float((out.detach().numpy().astype(np.float64) * g).sum())
    rhs = float((xt.grad.numpy().astype(np.float64) * x).sum())
    assert abs(lhs - rhs) < 1e-4 * max(1.0, abs(lhs))
    assert np.abs(xt.grad.numpy()).sum() > 0


@needs_tv
@pytest.mark.parametrize("aligned,sampling_ratio", [(False, -1), (True, -1), (True, 3)])
def test_roi_align_matches_torchvisions_python_roi_align_inside_the_image(aligned, sampling_ratio):
    # torchvision's pure-PyTorch roi_align (its fallback where the compiled op is missing),
    # unwrapped from its lazy torch.compile. It skips the compiled kernels' rule that samples
    # over a pixel outside the map count as zero, so the boxes here stay inside the image.
    import importlib

    import torch

    fallback = importlib.import_module("torchvision.ops.roi_align")._roi_align.__wrapped__
    x, b0, b1 = _roi_case()
    rois = np.concatenate([np.c_[np.zeros(1), b0[:1]], np.c_[np.zeros(1), b0[3:]],
                           np.c_[np.ones(len(b1)), b1]]).astype(np.float32)
    want = fallback(torch.from_numpy(x), torch.from_numpy(rois), 0.75, 3, 2, sampling_ratio,
                    aligned).numpy()
    got = ops.roi_align(ember.from_numpy(x), ember.from_numpy(rois), (3, 2), 0.75,
                        sampling_ratio, aligned)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_roi_align_nan_box_gives_zero_not_a_crash():
    x = ember.ones(1, 1, 4, 4)
    out = ops.roi_align(x, ember.tensor([[0.0, float("nan"), 0, 2, 2]]), 2, sampling_ratio=2)
    assert tuple(out.shape) == (1, 1, 2, 2)
    assert np.array_equal(out.numpy(), np.zeros((1, 1, 2, 2), np.float32))


def test_roi_align_and_nms_stay_on_the_inputs_device(device):  # conftest's device fixture
    x, b0, b1 = _roi_case()
    xt = on(device, x, requires_grad=True)
    out = ops.roi_align(xt, [on(device, b0), on(device, b1)], (3, 2), 1.0, 2, True)
    assert out.device == xt.device and out.dtype == ember.float32
    cpu = ops.roi_align(ember.from_numpy(x), [ember.from_numpy(b0), ember.from_numpy(b1)],
                        (3, 2), 1.0, 2, True)
    np.testing.assert_allclose(host(out), cpu.numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert xt.grad.device == xt.device
    assert np.abs(host(xt.grad)).sum() > 0
    keep = ops.nms(on(device, b0), on(device, np.array([0.1, 0.9, 0.5, 0.3], np.float32)), 0.5)
    assert keep.device == xt.device and keep.dtype == ember.int64


# -- ops.misc blocks: torchvision's constructors, module layout, state_dict keys and outputs ----

def _tv_misc():
    import importlib
    return importlib.import_module("torchvision.ops.misc")


def _load_tv_state(e_mod, t_mod) -> None:
    """Copy torchvision's module state into ember's by state_dict (the keys must agree)."""
    t_state = t_mod.state_dict()
    assert list(e_mod.state_dict()) == list(t_state)
    e_mod.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_state.items()})


def _same_structure(e_mod, t_mod) -> None:
    e_kids = [(n, type(m).__name__) for n, m in e_mod.named_modules()]
    t_kids = [(n, type(m).__name__) for n, m in t_mod.named_modules()]
    assert e_kids == t_kids
    for (_, em), (_, tm) in zip(e_mod.named_modules(), t_mod.named_modules()):
        for attr in ("kernel_size", "stride", "padding", "dilation", "groups", "in_features",
                     "out_features", "p", "inplace", "num_features"):
            if hasattr(tm, attr):
                assert getattr(em, attr) == getattr(tm, attr), (type(tm).__name__, attr)
        if hasattr(tm, "bias") and type(tm).__name__.startswith(("Conv", "Linear")):
            assert (em.bias is None) == (tm.bias is None)


def _compare(e_mod, t_mod, shape, seed=0) -> None:
    import torch
    _same_structure(e_mod, t_mod)
    _load_tv_state(e_mod, t_mod)
    e_mod.eval()
    t_mod.eval()
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ey, ty = e_mod(ex), t_mod(tx)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    ey.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


@needs_tv
@pytest.mark.parametrize("kw", [{}, {"kernel_size": (3, 5), "dilation": 2},
                                {"kernel_size": 3, "dilation": (2, 1), "stride": 2},
                                {"norm_layer": None, "activation_layer": "Hardswish",
                                 "inplace": None},
                                {"groups": 2, "bias": True, "padding": 0},
                                {"kernel_size": 1, "activation_layer": None}])
def test_conv2d_norm_activation_as_torchvision(kw):
    import torch
    tkw = {k: getattr(torch.nn, v) if k == "activation_layer" and v else v
           for k, v in kw.items()}
    ekw = {k: getattr(ember.nn, v) if k == "activation_layer" and v else v
           for k, v in kw.items()}
    _compare(ops.Conv2dNormActivation(4, 6, **ekw), _tv_misc().Conv2dNormActivation(4, 6, **tkw),
             (2, 4, 9, 8))


@needs_tv
@pytest.mark.parametrize("kw", [{}, {"kernel_size": (3, 1, 5), "dilation": 2},
                                {"stride": (1, 2, 2), "padding": "same"},
                                {"norm_layer": None}])
def test_conv3d_norm_activation_as_torchvision(kw):
    if kw.get("padding") == "same":  # PyTorch refuses padding='same' with stride > 1
        kw = {"padding": "same"}
    _compare(ops.Conv3dNormActivation(2, 3, **kw), _tv_misc().Conv3dNormActivation(2, 3, **kw),
             (2, 2, 5, 6, 7))


def test_conv_norm_activation_base_warns_and_defaults():
    from ember.vision.ops.misc import ConvNormActivation
    with pytest.warns(UserWarning, match="Don't use ConvNormActivation directly"):
        m = ConvNormActivation(3, 4)
    assert isinstance(m[0], ember.nn.Conv2d) and m[0].bias is None and m.out_channels == 4
    m3 = ops.Conv3dNormActivation(3, 4, kernel_size=(3, 1, 5))
    assert isinstance(m3[1], ember.nn.BatchNorm3d) and m3[0].padding == (1, 0, 2)
    assert m3[2].inplace is True


@needs_tv
@pytest.mark.parametrize("kw", [{}, {"norm_layer": "LayerNorm", "dropout": 0.2},
                                {"inplace": False, "bias": False},
                                {"activation_layer": "GELU"}])
def test_mlp_as_torchvision(kw):
    import torch
    def build(m, kw=kw):
        return {k: getattr(m.nn, v) if k in ("norm_layer", "activation_layer") else v
                for k, v in kw.items()}
    for hidden in ([8, 5, 3], [3]):
        _compare(ops.MLP(6, hidden, **build(ember)), _tv_misc().MLP(6, hidden, **build(torch)),
                 (4, 6))


def test_mlp_errors_and_dropout_in_training():
    with pytest.raises(IndexError):
        ops.MLP(4, [])
    with pytest.raises(TypeError, match="activation_layer"):
        ops.MLP(4, [8, 3], activation_layer=None)
    m = ops.MLP(4, [3], activation_layer=None)  # no activation is built for one layer
    assert [type(c).__name__ for c in m] == ["Linear", "Dropout"]
    m = ops.MLP(4, [8, 3], dropout=0.5, inplace=True)
    assert m[2].p == 0.5 and m[2].inplace and m[1].inplace and m[4].p == 0.5


@needs_tv
@pytest.mark.parametrize("kw", [{}, {"activation": "SiLU", "scale_activation": "Hardsigmoid"}])
def test_squeeze_excitation_as_torchvision(kw):
    import torch
    ekw = {k: getattr(ember.nn, v) for k, v in kw.items()}
    tkw = {k: getattr(torch.nn, v) for k, v in kw.items()}
    _compare(ops.SqueezeExcitation(8, 3, **ekw), _tv_misc().SqueezeExcitation(8, 3, **tkw),
             (2, 8, 5, 4))


@needs_tv
def test_permute_as_torchvision():
    _compare(ops.Permute([0, 2, 3, 1]), _tv_misc().Permute([0, 2, 3, 1]), (2, 3, 4, 5))
    assert ops.Permute([1, 0]).dims == [1, 0]
    assert not ops.Permute([1, 0]).state_dict()


@needs_tv
def test_misc_names_as_torchvision():
    tv_misc = _tv_misc()
    for name in ("Conv2dNormActivation", "Conv3dNormActivation", "FrozenBatchNorm2d", "MLP",
                 "Permute", "SqueezeExcitation"):
        assert hasattr(ops, name) and name in ops.__all__
        assert name in TV.ops.__dict__ and hasattr(tv_misc, name)
    from ember.vision.ops import misc
    assert issubclass(misc.Conv3dNormActivation, misc.ConvNormActivation)
