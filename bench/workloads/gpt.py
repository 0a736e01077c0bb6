"""A small character-level GPT: vocab 65, block 64, 4 layers, 4 heads, 128-wide embedding,
batch 16, AdamW, gradient clipping at 1.0. Batches are sampled from a synthetic token stream the
way nanoGPT's get_batch does (random offsets, stacked slices). Attention by
F.scaled_dot_product_attention (gpt_manual.py: written out)."""

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from _gpt_model import BATCH, BLOCK, GPT, VOCAB


def main(name: str, doc: str, manual: bool) -> None:
    args = parse_args(doc, steps=20, warmup=3, quick_steps=2, quick_warmup=1)
    torch.manual_seed(args.seed)
    data = torch.randint(0, VOCAB, (200_000,))

    def get_batch():
        ix = torch.randint(len(data) - BLOCK, (BATCH,))
        x = torch.stack([data[i:i + BLOCK] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
        return x, y

    model = GPT(manual)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)

    forward = maybe_compile(torch, model, args)
    timer = StepTimer()
    timer.start()
    for _ in range(args.warmup + args.steps):
        xb, yb = get_batch()
        loss = forward(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        timer.tick()
    report(name, torch, timer, args.warmup, loss=loss.item(), compiled=args.compile,
           params=sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main("gpt", __doc__, manual=False)
