"""Put every ops room in the project's order: within each section of a file (a ``# ----`` rule
and its title), the public functions first, then their op classes, then private helpers.

    python scripts/order_rooms.py src/ember/ops/reduction.py ...   # rewrite these files
    python scripts/order_rooms.py --check src/ember/ops            # list files out of order

Only whole top-level statements move, each with the comment block right above it; constants and
other statements keep their place at the head or tail of their section. ``tests/test_layers.py``
checks the order with :func:`out_of_order`.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

RULE = "# " + "-" * 20  # a section rule starts with this


def _starts(lines: list[str], node: ast.stmt) -> int:
    """The 0-based first line of ``node`` with its decorators and the comments right above it."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    while start > 0 and lines[start - 1].startswith("#") and not lines[start - 1].startswith(RULE):
        start -= 1
    return start


def _kind(node: ast.stmt, defined: set[str]) -> str:
    """'public', 'class', 'private' for definitions; 'head' or 'tail' for other statements."""
    if isinstance(node, ast.FunctionDef):
        return "private" if node.name.startswith("_") else "public"
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.Assign | ast.AnnAssign) and not any(
        isinstance(n, ast.Name) and n.id in defined
        for n in ast.walk(node.value or ast.Constant(None))
    ):
        return "head"  # a constant that names nothing defined here: the head of its section
    return "tail"  # anything that uses the module's definitions runs after them


_RANK = {"head": 0, "public": 1, "class": 2, "private": 3, "tail": 4}


def _sections(source: str) -> tuple[list[str], list[list[tuple[str, str]]], str]:
    """(the lines before the first section, the sections as (kind, text) items, the text after)."""
    lines = source.splitlines(keepends=True)
    body = ast.parse(source).body
    first_def = next((i for i, n in enumerate(body)
                      if not isinstance(n, ast.Import | ast.ImportFrom | ast.Expr)
                      and not (isinstance(n, ast.Assign) and any(
                          isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))), None)
    if first_def is None:
        return lines, [], ""
    head_end = _starts(lines, body[first_def])
    # the rule of a section that opens right at the first definition belongs to the sections
    while head_end > 0 and (lines[head_end - 1].startswith("#") or not lines[head_end - 1].strip()):
        if lines[head_end - 1].startswith(RULE):
            head_end -= 1
            break
        head_end -= 1
    sections: list[list[tuple[str, str]]] = [[]]
    defined = {n.name for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    spans = []
    for node in body[first_def:]:
        spans.append((_starts(lines, node), node.end_lineno, _kind(node, defined)))
    pos = head_end
    for start, end, kind in spans:
        gap = "".join(lines[pos:start])
        if RULE in gap:  # a new section: its rule and title stay at its top
            sections.append([("rule", gap.strip("\n") + "\n")])
        text = "".join(lines[start:end]).rstrip("\n") + "\n"
        sections[-1].append((kind, text))
        pos = end
    return lines[:head_end], sections, "".join(lines[pos:])


def reorder(source: str) -> str:
    """``source`` with each section's statements in the project's order (stable otherwise)."""
    head, sections, tail = _sections(source)
    blocks = []
    for items in sections:
        rule = [t for k, t in items if k == "rule"]
        stmts = sorted(((k, t) for k, t in items if k != "rule"), key=lambda kt: _RANK[kt[0]])
        if not stmts and not rule:
            continue
        parts = rule + [t for _, t in stmts]
        blocks.append("\n\n".join(p.rstrip("\n") + "\n" for p in parts))
    # (isort's rule, which ruff checks: two blank lines after the imports before a definition,
    # one before other code such as ``__all__``)
    first = blocks[0].lstrip() if blocks else ""
    gap = "\n\n\n" if first.startswith(("def ", "class ", "async def ", "@", "#")) else "\n\n"
    out = "".join(head).rstrip("\n") + gap
    out += "\n\n".join(b.rstrip("\n") + "\n" for b in blocks)
    return out.rstrip("\n") + "\n" + (tail if tail.strip() else "")


def out_of_order(source: str) -> list[str]:
    """The definitions that break the order: a public function after an op class or a private
    helper of its section, or a class after a private helper."""
    _, sections, _ = _sections(source)
    bad = []
    for items in sections:
        seen = 0
        for kind, text in items:
            if kind in ("public", "class", "private"):
                if _RANK[kind] < seen:
                    bad.append(text.split("\n", 1)[0] if not text.startswith("#")
                               else next(line for line in text.splitlines()
                                         if line.startswith(("def ", "class "))))
                seen = max(seen, _RANK[kind])
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="list, do not rewrite")
    args = parser.parse_args(argv)
    files = [f for p in args.paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    status = 0
    for f in files:
        src = f.read_text()
        if args.check:
            for line in out_of_order(src):
                print(f"{f}: {line}")
                status = 1
        else:
            new = reorder(src)
            if new != src:
                f.write_text(new)
                print(f"reordered {f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
