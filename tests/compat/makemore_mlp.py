"""makemore-style MLP on names, with a manual backward pass (logprobs[range(n), Yb], batchnorm,
tanh) checked tensor by tensor against autograd. Written for ember's compatibility corpus."""
import torch
import torch.nn.functional as F

words = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper",
         "evelyn", "abigail", "emily", "elizabeth", "mila", "ella", "avery", "sofia", "camila",
         "aria", "scarlett", "victoria", "madison", "luna", "grace", "chloe", "penelope"]
chars = sorted(set("".join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
vocab_size, block_size = len(stoi), 3


def build_dataset(ws):
    X, Y = [], []
    for w in ws:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


Xtr, Ytr = build_dataset(words)
print("dataset", Xtr.shape, Xtr.dtype, Ytr.shape, Ytr.dtype)


def cmp(s, dt, t):
    app = torch.allclose(dt, t.grad, rtol=1e-4, atol=1e-6)
    maxdiff = (dt - t.grad).abs().max().item()
    print(f"{s:15s} | approximate: {str(app):5s} | maxdiff < 1e-6: {maxdiff < 1e-6}")


def fixed(*shape, scale, k):  # a deterministic "random" init both frameworks agree on
    n = torch.arange(torch.Size(shape).numel(), dtype=torch.float32)
    return (torch.sin(n * 0.61 + k) * scale).reshape(shape)


n_embd, n_hidden = 10, 64
C = fixed(vocab_size, n_embd, scale=1.0, k=0)
W1 = fixed(n_embd * block_size, n_hidden, scale=(5 / 3) / (n_embd * block_size) ** 0.5, k=1)
b1 = fixed(n_hidden, scale=0.1, k=2)
W2 = fixed(n_hidden, vocab_size, scale=0.1, k=3)
b2 = fixed(vocab_size, scale=0.1, k=4)
bngain = fixed(1, n_hidden, scale=0.1, k=5) + 1.0
bnbias = fixed(1, n_hidden, scale=0.1, k=6)
parameters = [C, W1, b1, W2, b2, bngain, bnbias]
print("parameters", sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

n = 32
Xb, Yb = Xtr[:n], Ytr[:n]
emb = C[Xb]
embcat = emb.view(emb.shape[0], -1)
hprebn = embcat @ W1 + b1
bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff ** 2
bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
bnvar_inv = (bnvar + 1e-5) ** -0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
h = torch.tanh(hpreact)
logits = h @ W2 + b2
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdims=True)
counts_sum_inv = counts_sum ** -1
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()
for p in parameters:
    p.grad = None
for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits,
          h, hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
    t.retain_grad()
loss.backward()
print(f"loss {loss.item():.5f}")

dlogprobs = torch.zeros_like(logprobs)
dlogprobs[range(n), Yb] = -1.0 / n
dprobs = (1.0 / probs) * dlogprobs
dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
dcounts = counts_sum_inv * dprobs
dcounts_sum = (-counts_sum ** -2) * dcounts_sum_inv
dcounts += torch.ones_like(counts) * dcounts_sum
dnorm_logits = counts * dcounts
dlogits = dnorm_logits.clone()
dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
dh = dlogits @ W2.T
dW2 = h.T @ dlogits
db2 = dlogits.sum(0)
dhpreact = (1.0 - h ** 2) * dh
dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
dbnraw = bngain * dhpreact
dbnbias = dhpreact.sum(0, keepdim=True)
dbndiff = bnvar_inv * dbnraw
dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
dbndiff += (2 * bndiff) * dbndiff2
dhprebn = dbndiff.clone()
dbnmeani = (-dbndiff).sum(0)
dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
dembcat = dhprebn @ W1.T
dW1 = embcat.T @ dhprebn
db1 = dhprebn.sum(0)
demb = dembcat.view(emb.shape)
dC = torch.zeros_like(C)
for k in range(Xb.shape[0]):
    for j in range(Xb.shape[1]):
        dC[Xb[k, j]] += demb[k, j]

for name, d, t in [("logprobs", dlogprobs, logprobs), ("probs", dprobs, probs),
                   ("counts_sum_inv", dcounts_sum_inv, counts_sum_inv),
                   ("counts_sum", dcounts_sum, counts_sum), ("counts", dcounts, counts),
                   ("norm_logits", dnorm_logits, norm_logits), ("logit_maxes", dlogit_maxes, logit_maxes),
                   ("logits", dlogits, logits), ("h", dh, h), ("W2", dW2, W2), ("b2", db2, b2),
                   ("hpreact", dhpreact, hpreact), ("bngain", dbngain, bngain),
                   ("bnbias", dbnbias, bnbias), ("bnraw", dbnraw, bnraw), ("bnvar_inv", dbnvar_inv, bnvar_inv),
                   ("bnvar", dbnvar, bnvar), ("bndiff2", dbndiff2, bndiff2), ("bndiff", dbndiff, bndiff),
                   ("bnmeani", dbnmeani, bnmeani), ("hprebn", dhprebn, hprebn), ("embcat", dembcat, embcat),
                   ("W1", dW1, W1), ("b1", db1, b1), ("emb", demb, emb), ("C", dC, C)]:
    cmp(name, d, t)

# the fused cross-entropy backward in one line, as in the lecture
loss_fast = F.cross_entropy(logits, Yb)
print("F.cross_entropy matches:", abs(loss_fast.item() - loss.item()) < 1e-5)
dlogits = F.softmax(logits, 1)
dlogits[range(n), Yb] -= 1
dlogits /= n
cmp("logits (fast)", dlogits, logits)

# a few steps of training with the manual gradients
lr, losses = 0.1, []
with torch.no_grad():
    for step in range(5):  # noqa: B007
        hpre = C[Xb].view(n, -1) @ W1 + b1
        hp = bngain * (hpre - hpre.mean(0, keepdim=True)) / torch.sqrt(hpre.var(0, keepdim=True) + 1e-5) + bnbias
        logits = torch.tanh(hp) @ W2 + b2
        losses.append(F.cross_entropy(logits, Yb).item())
        dl = F.softmax(logits, 1)
        dl[range(n), Yb] -= 1
        dl /= n
        W2 -= lr * (torch.tanh(hp).T @ dl)
        b2 -= lr * dl.sum(0)
print("losses", " ".join(f"{v:.4f}" for v in losses), "decreasing:", losses[-1] < losses[0])
