"""examples/char_gpt.py on ember: the whole GPT's loss and gradients equal PyTorch's on the same
weights (float64), both attention paths; weight tying; training lowers the loss; sampling,
checkpoints and the script end to end."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "char_gpt.py"
CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"

torch = pytest.importorskip("torch")


def _load(name: str, on_ember: bool):
    """Import examples/char_gpt.py as module ``name``, with ``import torch`` resolving to ember
    (``on_ember``) or to PyTorch. Real torch's modules are put back afterwards."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    if not on_ember:
        spec.loader.exec_module(module)
        return module
    from ember import _alias

    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    _alias.install()
    try:
        spec.loader.exec_module(module)
    finally:
        _alias.uninstall()
        sys.modules.update(saved)
    return module


E = _load("char_gpt_on_ember", on_ember=True)
T = _load("char_gpt_on_torch", on_ember=False)


def test_the_example_module_really_runs_on_ember():
    assert E.torch is ember and E.nn is ember.nn and E.F is ember.nn.functional
    assert T.torch is torch


def _config(mod, flash: bool = True, **kw):
    base = dict(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16, dropout=0.0,
                bias=True, flash=flash)
    base.update(kw)
    return mod.GPTConfig(**base)


def _twin_models(flash: bool = True, **kw):
    torch.manual_seed(0)
    tm = T.GPT(_config(T, flash, **kw)).double()
    em = E.GPT(_config(E, flash, **kw)).double()
    t_sd = tm.state_dict()
    assert list(t_sd) == list(em.state_dict())
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_sd.items()})
    return tm, em


def _batch(vocab=11, B=3, Tn=8, seed=0, ignore=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, (B, Tn))
    y = rng.integers(0, vocab, (B, Tn))
    if ignore:
        y[0, :3] = -1  # ignore_index=-1 positions
    return x, y


@pytest.mark.parametrize("flash", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_gpt_loss_and_all_gradients_equal_torch(flash, bias):
    tm, em = _twin_models(flash, bias=bias)
    x, y = _batch(ignore=True)
    t_logits, t_loss = tm(torch.tensor(x), torch.tensor(y))
    e_logits, e_loss = em(ember.tensor(x), ember.tensor(y))
    np.testing.assert_allclose(e_logits.detach().numpy(), t_logits.detach().numpy(), atol=1e-6,
                               rtol=0)
    assert abs(e_loss.item() - t_loss.item()) < 1e-6
    t_loss.backward()
    e_loss.backward()
    e_params = dict(em.named_parameters())
    t_params = dict(tm.named_parameters())
    assert list(e_params) == list(t_params)  # the tied weight is listed once
    for name, tp in t_params.items():
        eg = e_params[name].grad
        assert eg is not None, name
        np.testing.assert_allclose(eg.numpy(), tp.grad.numpy(), atol=1e-6, rtol=0,
                                   err_msg=name)


def test_flash_and_explicit_attention_agree_on_ember():
    _, em_flash = _twin_models(True)
    _, em_plain = _twin_models(False)
    x, y = _batch(seed=3)
    a = em_flash(ember.tensor(x), ember.tensor(y))[1]
    b = em_plain(ember.tensor(x), ember.tensor(y))[1]
    assert abs(a.item() - b.item()) < 1e-12
    # the explicit path uses the registered causal mask; it is not saved (persistent=False)
    blk = em_plain.transformer.h[0].attn
    assert not blk.flash and tuple(blk.bias.shape) == (1, 1, 8, 8)
    assert "transformer.h.0.attn.bias" not in em_plain.state_dict()
    assert em_flash.transformer.h[0].attn.flash


def test_weight_tying_one_parameter_summed_gradient_shared_in_state_dict():
    _, em = _twin_models()
    wte, head = em.transformer.wte.weight, em.lm_head.weight
    assert wte is head
    params = list(em.parameters())
    assert sum(p is wte for p in params) == 1
    n = sum(p.numel() for p in em.parameters())
    assert em.get_num_params(non_embedding=False) == n
    # PyTorch's state_dict lists both names, as detached views of the same storage
    sd = em.state_dict()
    assert "transformer.wte.weight" in sd and "lm_head.weight" in sd
    assert np.shares_memory(sd["transformer.wte.weight"].numpy(), sd["lm_head.weight"].numpy())
    # the gradient is the sum of the embedding's and the head's contributions
    x, y = _batch(seed=4)
    _, loss = em(ember.tensor(x), ember.tensor(y))
    loss.backward()
    total = wte.grad.numpy().copy()
    em.zero_grad()
    em.lm_head.weight = ember.nn.Parameter(wte.detach().clone())  # untie
    _, loss = em(ember.tensor(x), ember.tensor(y))
    loss.backward()
    np.testing.assert_allclose(total, wte.grad.numpy() + em.lm_head.weight.grad.numpy(),
                               atol=1e-12)


def test_optimizer_groups_and_training_lowers_the_loss():
    ember.manual_seed(0)
    em = E.GPT(_config(E, n_embd=32, block_size=16, vocab_size=20))
    opt = em.configure_optimizers(0.1, 3e-3, (0.9, 0.99), "cpu")
    decay, nodecay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and nodecay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() < 2 for p in nodecay["params"])
    n_all = len(list(em.parameters()))
    assert len(decay["params"]) + len(nodecay["params"]) == n_all
    # a learnable sequence: each token is the previous one plus one (mod 20)
    start = ember.randint(0, 20, (8, 1))
    seq = (start + ember.arange(17)) % 20
    x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    losses = []
    for it in range(30):
        for g in opt.param_groups:
            g["lr"] = 3e-3 * min(1.0, (it + 1) / 5)
        _, loss = em(x, y)
        loss.backward()
        ember.nn.utils.clip_grad_norm_(em.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    assert losses[0] > 2.5  # about log(20) at the start
    assert losses[-1] < 0.5 * losses[0]


def test_generate_samples_tokens_in_range_without_graph():
    _, em = _twin_models()
    em.eval()
    ctx = ember.zeros((2, 1), dtype=ember.int64)
    out = em.generate(ctx, 20, temperature=0.8, top_k=3)  # longer than block_size (8)
    assert tuple(out.shape) == (2, 21) and out.dtype == ember.int64
    assert 0 <= int(out.min()) and int(out.max()) < 11
    assert not out.requires_grad
    greedy = em.generate(ctx, 5, top_k=1)
    again = em.generate(ctx, 5, top_k=1)
    np.testing.assert_array_equal(greedy.numpy(), again.numpy())  # top-1 is deterministic


def test_compiled_model_and_autocast_context_run_the_gpt():
    _, em = _twin_models()
    x, y = _batch()
    compiled = ember.compile(em) if hasattr(ember, "compile") else __import__(
        "ember._compile", fromlist=["compile"]).compile(em)
    a = compiled(ember.tensor(x), ember.tensor(y))[1]
    b = em(ember.tensor(x), ember.tensor(y))[1]
    assert a.item() == b.item()
    assert all(k.startswith("_orig_mod.") for k in compiled.state_dict())
    with ember.amp.autocast(device_type="cpu", dtype=ember.bfloat16):
        _, loss = em(ember.tensor(x), ember.tensor(y))
    loss.backward()
    assert np.isfinite(loss.item())


def test_prepare_data_and_memmap_batches(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("hello world\n" * 50)
    chars = E.prepare_data(str(text), str(tmp_path / "out"))
    assert chars == sorted(set("hello world\n"))
    train = np.memmap(tmp_path / "out" / "train.bin", dtype=np.uint16, mode="r")
    val = np.memmap(tmp_path / "out" / "val.bin", dtype=np.uint16, mode="r")
    assert len(train) + len(val) == 600 and len(train) == 540
    batch = ember.from_numpy(train[3:10].astype(np.int64))
    assert batch.dtype == ember.int64
    moved = batch.pin_memory().to("cpu", non_blocking=True)
    np.testing.assert_array_equal(moved.numpy(), train[3:10])


def _run_script(runner: list[str], tmp_path: Path, text: Path, *extra: str):
    cmd = [*runner, str(EXAMPLE), "--data", str(text), "--out", str(tmp_path / "run"),
           "--max-iters", "30", "--eval-interval", "15", "--eval-iters", "2", "--n-layer", "1",
           "--n-embd", "32", "--block-size", "16", "--batch-size", "4", "--sample-chars", "40",
           "--no-progress", "--grad-accum", "2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.skipif(not hasattr(ember, "save"), reason="needs ember.save (serialization)")
def test_ember_run_char_gpt_end_to_end_and_resume(tmp_path):
    text = tmp_path / "corpus.txt"
    source = CORPUS.read_text()[:20000] if CORPUS.exists() else "To be, or not to be.\n" * 900
    text.write_text(source)
    out = _run_script([sys.executable, "-m", "ember", "run"], tmp_path, text)
    assert out.returncode == 0, out.stderr
    assert "step 0: train loss" in out.stdout and "step 30:" in out.stdout
    assert (tmp_path / "run" / "ckpt.pt").exists()
    ckpt = ember.load(tmp_path / "run" / "ckpt.pt")
    assert {"model", "optimizer", "model_args", "iter_num", "best_val_loss"} <= set(ckpt)
    # resume from the checkpoint and train further
    out = _run_script([sys.executable, "-m", "ember", "run"], tmp_path, text,
                      "--init-from", "resume", "--max-iters", "40")
    assert out.returncode == 0, out.stderr
    assert "step 40:" in out.stdout


def test_tied_weight_is_saved_once_and_loads_shared(tmp_path):
    _, em = _twin_models(vocab_size=500, n_embd=64)
    path = tmp_path / "sd.pt"
    ember.save(em.state_dict(), path)
    n_floats = sum(v.numel() for k, v in em.state_dict().items() if k != "lm_head.weight")
    assert path.stat().st_size < 8 * n_floats + 64 * 1024  # float64: one copy of the tied weight
    sd = ember.load(path)
    assert np.shares_memory(sd["transformer.wte.weight"].numpy(), sd["lm_head.weight"].numpy())
    t_sd = torch.load(path)  # PyTorch reads it, tied storage included
    assert t_sd["lm_head.weight"].data_ptr() == t_sd["transformer.wte.weight"].data_ptr()
