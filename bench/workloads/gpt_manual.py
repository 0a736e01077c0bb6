"""The benchmark's GPT (gpt.py) with its attention written out as nanoGPT's and minGPT's
fallback writes it: q @ k^T scaled, masked_fill(-inf) by a causal mask, softmax, @ v."""

from gpt import main

main("gpt_manual", __doc__, manual=True)
