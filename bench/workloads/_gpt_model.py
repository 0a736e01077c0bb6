"""The benchmark's small GPT (vocab 65, block 64, 4 layers, 4 heads, 128-wide), shared by the
one-process workloads (gpt.py; gpt_manual.py, attention written out) and the data-parallel
one (ddp_gpt.py). Plain PyTorch: under ``ember run`` ``import torch`` is ember."""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, BLOCK, LAYERS, HEADS, EMBD, BATCH = 65, 64, 4, 4, 128, 16


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def heads(self, x):
        """q, k, v as (B, heads, T, C / heads)."""
        B, T, C = x.shape
        return [t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                for t in self.qkv(x).split(C, dim=2)]

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class ManualSelfAttention(CausalSelfAttention):
    """The same attention written out as nanoGPT's and minGPT's fallback path writes it: scores
    q @ k^T scaled, a causal mask by masked_fill(-inf), softmax, then @ v."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__(n_embd, n_head)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, manual: bool = False):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = (ManualSelfAttention if manual else CausalSelfAttention)(n_embd, n_head)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, manual: bool = False):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, EMBD)
        self.pos_emb = nn.Embedding(BLOCK, EMBD)
        self.blocks = nn.Sequential(*[Block(EMBD, HEADS, manual) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(EMBD)
        self.head = nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        logits = self.head(self.ln_f(self.blocks(x)))
        return F.cross_entropy(logits.view(B * T, VOCAB), targets.view(B * T))
