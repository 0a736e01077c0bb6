"""nanoGPT-style character model: config, DDP detection, a GPT with tied weights, AdamW groups,
warmup + cosine learning rate, gradient clipping, estimate_loss, a checkpoint and sampling.
Written for ember's compatibility corpus; runs under `python` (PyTorch) and `ember run`."""
import inspect
import math
import os
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.distributed import destroy_process_group, init_process_group
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

TEXT = ("The lamp on the hill was lit each night by a keeper who counted ships. "
        "When the fog came in from the sea, she rang the bell and waited for an answer. "
        "Some nights the answer came quickly; other nights it never came at all. ") * 4

# -- config (the globals a configurator would override) --
batch_size, block_size, max_iters, warmup_iters, learning_rate = 4, 16, 6, 2, 1e-2
min_lr, weight_decay, grad_clip, eval_iters = 1e-3, 0.1, 1.0, 2
device, dtype = "cpu", "float32"
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="gloo")
master_process = not ddp
torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type, dtype=ptdtype)

chars = sorted(set(TEXT))
stoi = {ch: i for i, ch in enumerate(chars)}
data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split, it):
    d = train_data if split == "train" else val_data
    ix = torch.tensor([(37 * (it * batch_size + j)) % (len(d) - block_size) for j in range(batch_size)])
    x = torch.stack([d[i:i + block_size] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 65
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
        self.flash = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x, manual=False):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash and not manual:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(config.n_embd, config.bias), CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, config.bias)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits, loss = self.lm_head(x[:, [-1], :]), None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay = [p for n, p in param_dict.items() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": nodecay, "weight_decay": 0.0}]
        print(f"num decayed parameter tensors: {len(decay)}, with {sum(p.numel() for p in decay):,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay)}, with {sum(p.numel() for p in nodecay):,} parameters")
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        extra = dict(fused=True) if fused_available and device_type == "cuda" else dict()
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split, k)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


model = GPT(GPTConfig(vocab_size=len(chars), block_size=block_size))
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
if ddp:
    model = DDP(model)
with torch.no_grad():  # a fixed start, so PyTorch and ember print the same losses
    for i, p in enumerate(model.parameters()):
        w = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i) * 0.05
        p.copy_(w.reshape(p.shape) + (1.0 if p.dim() == 1 and i % 3 == 0 else 0.0))
x0, _ = get_batch("train", 0)
blk = model.transformer.h[0]
h = blk.ln_1(model.transformer.wte(x0))
print("sdpa == manual attention:", torch.allclose(blk.attn(h), blk.attn(h, manual=True), atol=1e-5))
scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
optimizer = model.configure_optimizers(weight_decay, learning_rate, (0.9, 0.95), device_type)
raw_model = model.module if ddp else model
losses = []
X, Y = get_batch("train", 0)
for iter_num in range(max_iters):
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    if iter_num % 3 == 0 and master_process:
        ev = estimate_loss()
        print(f"step {iter_num}: train loss {ev['train']:.4f}, val loss {ev['val']:.4f}")
    with ctx:
        logits, loss = model(X, Y)
    X, Y = get_batch("train", iter_num + 1)
    scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
    print(f"iter {iter_num}: loss {loss.item():.4f}, lr {lr:.5f}, grad norm {norm.item():.4f}")
print("tied:", raw_model.transformer.wte.weight is raw_model.lm_head.weight)
checkpoint = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
              "model_args": dict(n_layer=2, n_head=2, n_embd=32, block_size=block_size,
                                 bias=True, vocab_size=len(chars), dropout=0.0),
              "iter_num": max_iters, "best_val_loss": min(losses), "config": {"dataset": "text"}}
torch.save(checkpoint, "ckpt.pt")
ck = torch.load("ckpt.pt", map_location=device)
model2 = GPT(GPTConfig(**ck["model_args"]))
model2.load_state_dict(ck["model"])
print("reloaded equal:", torch.equal(model2(X)[0], model(X)[0]), ck["iter_num"])
torch.manual_seed(42)
out = model2.generate(torch.zeros((1, 1), dtype=torch.long), max_new_tokens=20, top_k=5)
print("generated", tuple(out.shape), out.dtype, bool(out.max() < len(chars)))
if ddp:
    destroy_process_group()
