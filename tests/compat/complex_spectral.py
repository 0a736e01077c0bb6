"""Complex numbers as models use them: a LLaMA-style attention block with complex rotary position
embeddings (precomputed frequencies with torch.polar, view_as_complex, a complex product,
view_as_real), an FNO-style spectral layer (rfft2, complex weights on the low modes, irfft2)
trained a few steps on a synthetic PDE (the heat equation's smoothing), and an STFT round trip.
Written for ember's compatibility corpus: weights come from a fixed formula, so every printed
number is seed independent."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(*shape, scale=1.0, phase=0.0):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + phase) * scale).reshape(shape)


def show(name, t):
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    t = t.double().reshape(-1)
    print(name, tuple(t.shape), " ".join(f"{v:.5g}" for v in t[:6].tolist()),
          f"sum={t.sum().item():.5g}")


# -- rotary embeddings in Meta's reference formulation --------------------------------------------

def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.wv, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        for k, lin in enumerate((self.wq, self.wk, self.wv, self.wo)):
            with torch.no_grad():
                lin.weight.copy_(fill(dim, dim, scale=0.2, phase=k))

    def forward(self, x, freqs_cis):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_heads, self.head_dim)
        q, k = apply_rotary_emb(q, k, freqs_cis)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.full((T, T), float("-inf")).triu(1)
        y = F.softmax(scores + mask, dim=-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


freqs = precompute_freqs_cis(8, 6)
print("freqs_cis", freqs.dtype, tuple(freqs.shape))
show("freqs_cis", freqs)
attn = Attention(16, 2)
x = fill(2, 6, 16, scale=0.5).requires_grad_()
y = attn(x, freqs)
show("attention out", y)
(y ** 2).mean().backward()
show("x.grad", x.grad)
show("wq.grad", attn.wq.weight.grad)


# -- a spectral convolution (FNO) on a synthetic heat equation --------------------------------------

class SpectralConv2d(nn.Module):
    def __init__(self, channels, modes):
        super().__init__()
        self.modes = modes
        scale = 1.0 / (channels * channels)
        w = torch.complex(fill(channels, channels, modes, modes, scale=scale),
                          fill(channels, channels, modes, modes, scale=scale, phase=1.0))
        self.weight = nn.Parameter(w)  # complex64

    def forward(self, x):
        B, C, H, W = x.shape
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(B, C, H, W // 2 + 1, dtype=torch.cfloat)
        m = self.modes
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weight)
        return torch.fft.irfft2(out_ft, s=(H, W))


def heat_step(u, steps=5, alpha=0.2):
    """The target: explicit finite differences of u_t = alpha (u_xx + u_yy), periodic."""
    for _ in range(steps):
        lap = (u.roll(1, -1) + u.roll(-1, -1) + u.roll(1, -2) + u.roll(-1, -2) - 4 * u)
        u = u + alpha * lap
    return u


grid = torch.linspace(0, 2 * math.pi, 16)
u0 = torch.stack([torch.sin(k * grid)[:, None] * torch.cos((k + 1) * grid)[None, :]
                  for k in range(1, 5)]).unsqueeze(1).repeat(1, 2, 1, 1)
target = heat_step(u0)
layer = SpectralConv2d(2, 4)
opt = torch.optim.Adam(layer.parameters(), lr=0.05)
for step in range(20):
    opt.zero_grad()
    loss = F.mse_loss(layer(u0), target)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"fno step {step} loss {loss.item():.6f}")
print("fno weight", layer.weight.dtype, "grad", layer.weight.grad.dtype)
show("fno weight", layer.weight)


# -- an STFT round trip ------------------------------------------------------------------------------

t = torch.arange(800, dtype=torch.float32) / 800
signal = torch.sin(2 * math.pi * 50 * t) + 0.5 * torch.sin(2 * math.pi * 120 * t)
window = torch.hann_window(128)
spec = torch.stft(signal, n_fft=128, hop_length=32, window=window, return_complex=True)
print("stft", spec.dtype, tuple(spec.shape))
show("stft |X|", spec.abs())
peak = spec.abs().mean(dim=1).argmax().item()
print("peak bin", peak, "freqs", [round(f, 2) for f in torch.fft.rfftfreq(128, 1 / 800)[peak - 1:peak + 2].tolist()])
back = torch.istft(spec, n_fft=128, hop_length=32, window=window, length=800)
print("istft max error below 1e-5:", bool((back - signal).abs().max() < 1e-5))
spectrum = torch.fft.fftshift(torch.fft.fft(signal))
show("fftshift(fft)", spectrum.abs())
