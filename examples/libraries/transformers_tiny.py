"""Hugging Face transformers: tiny GPT-2, BERT and LLaMA models built from configs (no
download): forward, loss, backward, AdamW steps, greedy and sampled generate, and a
save_pretrained/from_pretrained round trip through safetensors.

Runs on PyTorch and on ember (`ember run`) unchanged. `--save DIR` also writes the trained GPT-2
to DIR and `--load DIR` loads one (to cross-check checkpoints between the two engines).
"""

import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from configs: nothing to download

import torch
import transformers
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)

transformers.logging.set_verbosity_error()
V = 64


def train(model, batches, steps=5, lr=3e-3):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    model.train()
    for i in range(steps):
        out = model(**batches[i % len(batches)])
        opt.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(round(out.loss.item(), 4))
    model.eval()
    return losses


def lm_batches(seed):
    g = torch.Generator().manual_seed(seed)
    # a learnable pattern: each row counts up from a random start (mod V)
    starts = torch.randint(0, V, (4, 1), generator=g)
    ids = (starts + torch.arange(12)) % V
    return [{"input_ids": ids, "labels": ids, "attention_mask": torch.ones_like(ids)}]


def causal_lm(name, model):
    batches = lm_batches(1)
    losses = train(model, batches, steps=8)
    prompt = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        greedy = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
        torch.manual_seed(0)
        sampled = model.generate(prompt, max_new_tokens=6, do_sample=True, top_k=5,
                                 pad_token_id=0)
    print(f"{name:6s} params {sum(p.numel() for p in model.parameters())} losses {losses}")
    print(f"{name:6s} greedy {greedy[0].tolist()} sampled {sampled.shape[1]} tokens")
    return greedy


def roundtrip(model, cls, batch):
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d)
        files = sorted(os.listdir(d))
        again = cls.from_pretrained(d, use_kernels=False)  # no hub kernels offline
    with torch.no_grad():
        a, b = model(**batch).logits, again(**batch).logits
    print(f"  save/load {files}: max |diff| {(a - b).abs().max().item():.2e}")


def main():
    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=V,
                                      n_positions=32, bos_token_id=0, eos_token_id=1))
    greedy = causal_lm("gpt2", gpt2)
    roundtrip(gpt2, GPT2LMHeadModel, {"input_ids": greedy})

    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=V,
                                         max_position_embeddings=64, bos_token_id=0,
                                         eos_token_id=1, pad_token_id=0))
    greedy = causal_lm("llama", llama)
    roundtrip(llama, LlamaForCausalLM, {"input_ids": greedy})

    torch.manual_seed(0)
    bert = BertForSequenceClassification(BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        vocab_size=V, max_position_embeddings=32, num_labels=3))
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(2, V, (6, 10), generator=g)
    mask = torch.ones_like(ids)
    mask[:, 8:] = 0  # padding at the end of each row
    labels = ids[:, 0] % 3
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    losses = train(bert, [batch], steps=8)
    with torch.no_grad():
        pred = bert(input_ids=ids, attention_mask=mask).logits.argmax(-1)
    print(f"bert   params {sum(p.numel() for p in bert.parameters())} losses {losses}")
    print(f"bert   predictions {pred.tolist()} labels {labels.tolist()}")
    roundtrip(bert, BertForSequenceClassification, {"input_ids": ids, "attention_mask": mask})

    if "--save" in sys.argv:
        gpt2.save_pretrained(sys.argv[sys.argv.index("--save") + 1])
    if "--load" in sys.argv:
        other = GPT2LMHeadModel.from_pretrained(sys.argv[sys.argv.index("--load") + 1],
                                                use_kernels=False)
        with torch.no_grad():
            d = (other(greedy).logits - gpt2(greedy).logits).abs().max().item()
        print(f"loaded the other engine's GPT-2: max |logit diff| vs this run's {d:.2e}")
    print(f"transformers {transformers.__version__}: done")


if __name__ == "__main__":
    main()
