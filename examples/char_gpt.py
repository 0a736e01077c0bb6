"""A character-level GPT trained on Shakespeare: nanoGPT-style, plain PyTorch.

The same file runs on PyTorch and on ember:

    python examples/prepare_shakespeare.py     # once: writes data/shakespeare.txt (from the package index)
    ember run examples/char_gpt.py             # train on ember (NumPy / CuPy)
    python examples/char_gpt.py                # train on PyTorch

The model: token + position embeddings, ``n_layer`` pre-norm blocks of causal self-attention and
a GELU MLP, a final LayerNorm and a language-model head tied to the token embedding. Training:
AdamW with two parameter groups (weight decay on matrices only), cosine learning rate with
warmup, gradient clipping, optional gradient accumulation and mixed precision. It reports train
and validation loss (nats per character) with a progress bar, keeps the best checkpoint in
``--out/ckpt.pt`` and ends by sampling text.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional
    tqdm = None


# ---------------------------------------------------------------------------------------------
# the model


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True  # biases in Linear layers and LayerNorms
    flash: bool = True  # F.scaled_dot_product_attention when available, else explicit softmax


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = config.flash and hasattr(F, "scaled_dot_product_attention")
        if not self.flash:
            # causal mask: position t attends to positions <= t
            mask = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer("bias", mask.view(1, 1, config.block_size, config.block_size),
                                 persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0.0,
                is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # weight tying: one Parameter
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():  # GPT-2's scaled init of residual projections
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding: bool = True) -> int:
        n_params = sum(p.numel() for p in self.parameters())  # the tied weight counts once
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} > block size {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])  # sampling needs the last position only
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: tuple[float, float], device_type: str):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        # matrices (Linear weights, embeddings) decay; biases and LayerNorm weights do not
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        extra_args = dict(fused=True) if fused_available and device_type == "cuda" else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None) -> torch.Tensor:
        for _ in range(max_new_tokens):
            block = self.config.block_size
            idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# ---------------------------------------------------------------------------------------------
# data


def prepare_data(text_path: str, out_dir: str) -> list[str]:
    """Encode the text as uint16 character ids: ``train.bin`` (first 90%), ``val.bin`` (rest).
    Returns the vocabulary (sorted characters)."""
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    n = int(0.9 * len(ids))
    os.makedirs(out_dir, exist_ok=True)
    ids[:n].tofile(os.path.join(out_dir, "train.bin"))
    ids[n:].tofile(os.path.join(out_dir, "val.bin"))
    return chars


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a character-level GPT on Shakespeare.")
    p.add_argument("--data", default="data/shakespeare.txt",
                   help="a text file (default data/shakespeare.txt, made by "
                        "examples/prepare_shakespeare.py)")
    p.add_argument("--out", default="runs/char_gpt", help="checkpoint and data folder")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                   help="autocast dtype (default: bfloat16/float16 on CUDA, float32 on CPU)")
    p.add_argument("--max-iters", type=int, default=1000)
    p.add_argument("--time-limit", type=float, default=0.0,
                   help="stop (and evaluate) after this many minutes (0: no limit)")
    p.add_argument("--eval-interval", type=int, default=100)
    p.add_argument("--eval-iters", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--no-bias", action="store_true", help="no biases in Linear/LayerNorm")
    p.add_argument("--no-flash", action="store_true",
                   help="explicit masked softmax instead of F.scaled_dot_product_attention")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0 disables clipping")
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--init-from", default="scratch", choices=["scratch", "resume"])
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--sample-chars", type=int, default=300, help="characters sampled at the end")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# training


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if not os.path.exists(args.data):
        sys.exit(f"no text at {args.data}: run `python examples/prepare_shakespeare.py` once, "
                 "or pass --data PATH to any text file")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = args.device
    device_type = "cuda" if "cuda" in device else "cpu"
    dtype = args.dtype or ("float32" if device_type == "cpu" else
                           "bfloat16" if torch.cuda.is_bf16_supported() else "float16")
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16}[dtype]
    ctx = nullcontext() if dtype == "float32" else torch.amp.autocast(device_type=device_type,
                                                                        dtype=ptdtype)
    scaler = torch.amp.GradScaler(device_type, enabled=(dtype == "float16"))

    chars = prepare_data(args.data, args.out)
    itos = dict(enumerate(chars))
    stoi = {c: i for i, c in itos.items()}

    def get_batch(split: str) -> tuple[torch.Tensor, torch.Tensor]:
        # a fresh memmap each batch, as nanoGPT does (avoids a memory leak with long runs)
        data = np.memmap(os.path.join(args.out, f"{split}.bin"), dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - args.block_size, (args.batch_size,))
        x = torch.stack([torch.from_numpy((data[i:i + args.block_size]).astype(np.int64))
                         for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + args.block_size]).astype(np.int64))
                         for i in ix])
        if device_type == "cuda":
            return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(
                device, non_blocking=True)
        return x.to(device), y.to(device)

    ckpt_path = os.path.join(args.out, "ckpt.pt")
    iter_num, best_val_loss, checkpoint = 0, 1e9, None
    config = GPTConfig(block_size=args.block_size, vocab_size=len(chars), n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd, dropout=args.dropout,
                       bias=not args.no_bias, flash=not args.no_flash)
    if args.init_from == "resume":
        checkpoint = torch.load(ckpt_path, map_location=device)
        config = GPTConfig(**checkpoint["model_args"])
        iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    model = GPT(config)
    if checkpoint is not None:
        state_dict = checkpoint["model"]
        for k in list(state_dict):  # checkpoints of compiled models carry this prefix
            if k.startswith("_orig_mod."):
                state_dict[k[len("_orig_mod."):]] = state_dict.pop(k)
        model.load_state_dict(state_dict)
    model.to(device)
    print(f"number of parameters: {model.get_num_params() / 1e6:.2f}M; vocabulary "
          f"{len(chars)} characters; device {device}, dtype {dtype}")

    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, args.beta2),
                                           device_type)
    if checkpoint is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    checkpoint = None
    raw_model = model
    if args.compile:
        model = torch.compile(model)

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(args.eval_iters)
            for k in range(args.eval_iters):
                X, Y = get_batch(split)
                with ctx:
                    _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    def get_lr(it: int) -> float:
        # linear warmup, then cosine decay to min_lr at max_iters
        if it < args.warmup_iters:
            return args.lr * (it + 1) / (args.warmup_iters + 1)
        if it > args.max_iters:
            return args.min_lr
        ratio = (it - args.warmup_iters) / max(1, args.max_iters - args.warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
        return args.min_lr + coeff * (args.lr - args.min_lr)

    history = []
    t0 = time.time()

    def evaluate(it: int) -> None:
        nonlocal best_val_loss
        losses = estimate_loss()
        elapsed = time.time() - t0
        history.append({"iter": it, "train": losses["train"], "val": losses["val"],
                        "time": elapsed})
        msg = (f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}, "
               f"{elapsed:.1f}s")
        if tqdm is not None and not args.no_progress:
            tqdm.write(msg)
        else:
            print(msg, flush=True)
        if losses["val"] < best_val_loss:
            best_val_loss = losses["val"]
            torch.save({
                "model": raw_model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "model_args": asdict(config),
                "iter_num": it,
                "best_val_loss": best_val_loss,
                "config": vars(args),
                "vocab": chars,
            }, ckpt_path)

    steps = range(iter_num, args.max_iters)
    pbar = tqdm(steps, desc="training", dynamic_ncols=True) if (
        tqdm is not None and not args.no_progress) else None
    X, Y = get_batch("train")
    it = iter_num
    for it in pbar if pbar is not None else steps:
        lr = get_lr(it)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if it % args.eval_interval == 0:
            evaluate(it)
            if pbar is not None:
                pbar.set_postfix(train=f"{history[-1]['train']:.3f}",
                                 val=f"{history[-1]['val']:.3f}")
        if args.time_limit and time.time() - t0 > 60 * args.time_limit:
            break
        for _ in range(args.grad_accum):
            with ctx:
                _, loss = model(X, Y)
                loss = loss / args.grad_accum  # the mean over micro-batches
            X, Y = get_batch("train")  # fetch the next batch while this one's graph is alive
            scaler.scale(loss).backward()
        if args.grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if pbar is not None:
            pbar.set_description(f"training (loss {loss.item() * args.grad_accum:.3f})",
                                 refresh=False)
        it += 1
    if pbar is not None:
        pbar.close()
    evaluate(it)

    model.eval()
    context = torch.tensor([[stoi["\n"] if "\n" in stoi else 0]], dtype=torch.long,
                           device=device)
    with ctx:
        out = raw_model.generate(context, args.sample_chars, temperature=args.temperature,
                                 top_k=args.top_k)
    print("-" * 40)
    print("".join(itos[i] for i in out[0].tolist()))
    print("-" * 40)
    return {"history": history, "best_val_loss": best_val_loss, "iters": it,
            "time": time.time() - t0}


if __name__ == "__main__":
    main()
