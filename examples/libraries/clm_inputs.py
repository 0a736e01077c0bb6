"""Local inputs for Hugging Face's ``run_clm_no_trainer.py`` (docs/libraries/transformers.md),
made offline: a text file, a byte-level BPE tokenizer trained on it with ``tokenizers``, and a
tiny GPT-2 config.

    python examples/libraries/clm_inputs.py DIR     # writes DIR/train.txt, DIR/tok/, DIR/cfg/

The text is Python's own documentation of a few standard modules (``pydoc``), so every machine
makes the same file. Run it with either engine (it uses no tensors).
"""

from __future__ import annotations

import os
import pydoc
import sys

MODULES = ["json", "argparse", "logging", "collections", "itertools", "functools", "pathlib",
           "random"]


def main(out: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, PreTrainedTokenizerFast

    os.makedirs(out, exist_ok=True)
    text: list[str] = []
    for m in MODULES:
        doc = pydoc.render_doc(m, renderer=pydoc.plaintext)
        text += [line.strip() for line in doc.splitlines() if len(line.strip()) > 20][:150]
    path = os.path.join(out, "train.txt")
    with open(path, "w") as f:
        f.write("\n".join(text) + "\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train([path], trainers.BpeTrainer(vocab_size=512, special_tokens=["<|endoftext|>"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                            eos_token="<|endoftext|>", model_max_length=64).save_pretrained(
        os.path.join(out, "tok"))
    GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4, bos_token_id=0,
               eos_token_id=0).save_pretrained(os.path.join(out, "cfg"))
    print(f"{len(text)} lines, {os.path.getsize(path)} bytes -> {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
