"""``SummaryWriter.add_graph``: the graph ember's op recorder sees, written as TensorBoard's
GraphDef and read back from the event file."""

from __future__ import annotations

import glob
import struct

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytest.importorskip("tensorboardX")

from tensorboardX.crc32c import crc32c  # noqa: E402
from tensorboardX.proto import event_pb2, graph_pb2  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _graphs(logdir) -> list:
    """The GraphDefs in the event file under ``logdir`` (records' checksums verified)."""
    (path,) = glob.glob(str(logdir / "events.out.tfevents.*"))
    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        head = data[i:i + 8]
        (n,) = struct.unpack("<Q", head)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == _masked(crc32c(head))
        body = data[i + 12:i + 12 + n]
        assert struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == _masked(crc32c(body))
        i += 16 + n
        ev = event_pb2.Event.FromString(body)
        if ev.WhichOneof("what") == "graph_def":
            out.append(graph_pb2.GraphDef.FromString(ev.graph_def))
    return out


def _write(tmp_path, model, example, **kw) -> dict:
    with SummaryWriter(log_dir=str(tmp_path)) as w:
        w.add_graph(model, example, **kw)
    (g,) = _graphs(tmp_path)
    return {n.name: n for n in g.node}


def _shapes(node) -> list:
    return [tuple(d.size for d in s.dim) for s in node.attr["_output_shapes"].list.shape]


def _check_edges(nodes: dict) -> None:
    for n in nodes.values():
        for src in n.input:
            assert src.split(":")[0] in nodes, f"{n.name} reads {src}, which is not a node"


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.fc2(self.drop(self.act(self.fc1(x))))


def test_mlp_graph(tmp_path):
    model = MLP()
    nodes = _write(tmp_path, model, ember.randn(5, 4))
    _check_edges(nodes)
    x, out = nodes["input/x"], nodes["output/output.0"]
    assert x.op == "IO Node" and _shapes(x) == [(5, 4)]
    fc1, relu, fc2 = nodes["MLP/Linear[fc1]/addmm"], nodes["MLP/ReLU[act]/relu"], \
        nodes["MLP/Linear[fc2]/addmm"]
    assert (fc1.op, relu.op, fc2.op) == ("aten::addmm", "aten::relu", "aten::addmm")
    assert list(fc1.input) == ["input/x", "MLP/Linear[fc1]/weight", "MLP/Linear[fc1]/bias"]
    assert nodes["MLP/Linear[fc1]/weight"].op == "prim::GetAttr"
    assert _shapes(nodes["MLP/Linear[fc1]/weight"]) == [(8, 4)]
    assert list(relu.input) == ["MLP/Linear[fc1]/addmm"]
    assert list(fc2.input)[0] == "MLP/ReLU[act]/relu"  # dropout is off, as in PyTorch's trace
    assert not any("Dropout" in name for name in nodes)
    assert list(out.input) == ["MLP/Linear[fc2]/addmm"] and _shapes(out) == [(5, 3)]
    assert _shapes(fc1) == [(5, 8)] and fc1.device == "/device:CPU:0"
    assert model.training and model.drop.training  # the modes come back


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4),
                                      nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.head = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.features(x)
        return F.log_softmax(self.head(ember.flatten(x, 1)), dim=1)


def test_cnn_graph(tmp_path):
    model = CNN()
    model.features[1].train(False)  # a mixed mode is restored as it was
    nodes = _write(tmp_path, model, (ember.randn(2, 1, 8, 8),))
    _check_edges(nodes)
    conv = nodes["CNN/Sequential[features]/Conv2d[0]/convolution"]
    assert conv.op == "aten::convolution" and _shapes(conv) == [(2, 4, 8, 8)]
    assert list(conv.input) == ["input/x", "CNN/Sequential[features]/Conv2d[0]/weight",
                                "CNN/Sequential[features]/Conv2d[0]/bias"]
    bn = "CNN/Sequential[features]/BatchNorm2d[1]/"
    assert nodes[bn + "running_var"].op == "prim::GetAttr"  # eval: the running statistics
    assert any(name.startswith(bn) and n.op.startswith("aten::") for name, n in nodes.items())
    relu = nodes["CNN/Sequential[features]/ReLU[2]/relu"]
    assert relu.input[0].startswith(bn)
    pool = nodes["CNN/Sequential[features]/MaxPool2d[3]/max_pool2d_with_indices"]
    assert list(pool.input) == [relu.name]  # the in-place ReLU's output feeds the pooling
    flat = nodes["CNN/view"]
    assert flat.op == "aten::view" and list(flat.input) == [pool.name]
    assert _shapes(flat) == [(2, 64)]
    head = nodes["CNN/Linear[head]/addmm"]
    assert head.input[0] == "CNN/view"
    lsm = nodes["CNN/log_softmax"]
    assert lsm.op == "aten::log_softmax" and list(lsm.input) == [head.name]
    assert list(nodes["output/output.0"].input) == [lsm.name]
    assert model.training and not model.features[1].training


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, tokens: ember.Tensor, scale: ember.Tensor) -> tuple:
        e = self.emb(tokens)
        return e * scale, e.sum()


def test_several_inputs_and_outputs(tmp_path, capsys):
    nodes = _write(tmp_path, TwoInputs(), (ember.tensor([[1, 2, 3]]), ember.tensor(2.0)),
                   verbose=True)
    _check_edges(nodes)
    assert {"input/tokens", "input/scale", "output/output.0", "output/output.1"} <= set(nodes)
    mul = nodes["TwoInputs/mul"]
    assert list(mul.input)[1] == "input/scale"
    assert nodes["TwoInputs/Embedding[emb]/weight"].op == "prim::GetAttr"
    printed = capsys.readouterr().out
    assert "TwoInputs/mul = aten::mul [1x3x4]" in printed


def test_add_graph_needs_an_input(tmp_path):
    with SummaryWriter(log_dir=str(tmp_path)) as w, pytest.raises(TypeError, match="example"):
        w.add_graph(nn.Linear(2, 2))


def test_fake_cuda_graph_names_the_device(tmp_path):
    from ember.testing import fake_cuda

    with fake_cuda():
        model = nn.Linear(3, 2).cuda()
        nodes = _write(tmp_path, model, ember.randn(1, 3, device="cuda"))
    assert nodes["Linear/addmm"].device == "/device:CUDA:0"
