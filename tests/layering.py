"""ember's layers, read from the code: which module sits in which layer, what each imports, and
the one-screen map in docs/design.md (``python -m tests.layering`` prints it; a test keeps the
doc's copy current). The rule the tests hold: a module never imports one from a higher layer.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "ember"

# Lowest first: (layer, what it is, module patterns). A module belongs to the first layer, in
# MATCH_ORDER, with a matching pattern (the command line before the libraries' catch-all).
LAYERS: list[tuple[str, str, list[str]]] = [
    ("backend", "arrays, devices, dtypes: the only place that knows NumPy/CuPy",
     ["ember._backend", "ember._dtype", "ember._dtype_info", "ember._size", "ember._special",
      "ember._special.*", "ember._special_tables", "ember._version", "ember._missing",
      "ember._allocator", "ember._meta",
      "ember._shared_memory", "ember._native_core", "ember._native", "ember._kernels_loader",
      "ember._kernels", "ember._threads"]),
    ("core", "the tensor base type and the autograd engine",
     ["ember._tensor_base", "ember._overrides", "ember.autograd", "ember.autograd.grad_mode",
      "ember.autograd.node",
      "ember.autograd.function", "ember.autograd.anomaly_mode", "ember.autograd.engine"]),
    ("ops", "every op: forward and backward side by side, one room per family",
     ["ember.ops", "ember.ops.*"]),
    ("tensor", "Tensor: the user-facing methods, printing, sharing",
     ["ember._tensor", "ember._tensor_methods", "ember._tensor_str", "ember._tensor_sharing",
      "ember._tensor_sparse", "ember._tensor_wrapper"]),
    ("namespace", "the package's public names (ember/__init__.py)",
     ["ember", "ember._switches"]),
    ("libraries", "nn, optim, utils, amp, cuda, distributions, ...", ["ember.*"]),
    ("command line", "ember run / demo / launch",
     ["ember.cli", "ember.__main__", "ember._alias", "ember.demo", "ember.demo.*"]),
]
MATCH_ORDER = ["backend", "core", "ops", "tensor", "command line", "namespace", "libraries"]
RANK = {name: i for i, (name, _, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    patterns = {name: pats for name, _, pats in LAYERS}
    for name in MATCH_ORDER:
        if any(fnmatch.fnmatchcase(module, p) for p in patterns[name]):
            return name
    raise AssertionError(f"{module} is in no layer")


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = modules()


def imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported ember module) for every import in the file, function-local ones too."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "ember"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ember":
                continue
            for alias in node.names:  # `from ember.x import y`: y may be a module itself
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in MODULES else target))
    return found


def upward_edges() -> list[str]:
    """Every import of a module from a higher layer, as 'file:line: who (layer) imports what'.
    A package's ``__init__`` may name its own submodules (its table of contents)."""
    bad = []
    for module, path in MODULES.items():
        mine = layer_of(module)
        for line, target in imports(module, path):
            if target not in MODULES:
                continue
            if path.name == "__init__.py" and target.startswith(module + "."):
                continue
            theirs = layer_of(target)
            if RANK[theirs] > RANK[mine]:
                rel = path.relative_to(SRC.parent)
                bad.append(f"{rel}:{line}: {module} ({mine}) imports {target} ({theirs})")
    return bad


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.strip().split("\n")[0].rstrip(".")
    return first.replace("``", "`")


def layer_map() -> str:
    """The map of layers and rooms, top layer first, as Markdown (the block in docs/design.md)."""
    by_layer: dict[str, list[str]] = defaultdict(list)
    for module in MODULES:
        by_layer[layer_of(module)].append(module)
    lines = ["```"]
    for name, what, _ in reversed(LAYERS):
        mods = by_layer[name]
        lines.append(f"{name.upper()}: {what}")
        if name == "libraries":
            packages: dict[str, int] = defaultdict(int)
            for m in mods:
                top = m.split(".")[1]
                packages[top] += 1
            names = [f"{p}/" if (PACKAGE / p).is_dir() else f"{p}.py" for p in sorted(packages)]
            row = "   "
            for item in names:
                if len(row) + len(item) > 96:
                    lines.append(row)
                    row = "   "
                row += f" {item}"
            lines.append(row)
            continue
        for m in mods:
            path = MODULES[m]
            rel = path.relative_to(PACKAGE).as_posix()
            lines.append(f"    {rel:<28} {_summary(path)[:66]}")
    lines.append("```")
    return "\n".join(lines)


def write_map(doc: Path = SRC.parent / "docs" / "design.md") -> None:
    """Replace the map between the markers in docs/design.md with the current one."""
    text = doc.read_text()
    start, end = "<!-- BEGIN layer map -->\n", "<!-- END layer map -->"
    head, rest = text.split(start, 1)
    doc.write_text(head + start + layer_map() + "\n" + end + rest.split(end, 1)[1])


if __name__ == "__main__":
    if "--write" in sys.argv:
        write_map()
        sys.exit(0)
    if "--check" in sys.argv:
        bad = upward_edges()
        print("\n".join(bad) or "no upward imports")
        sys.exit(1 if bad else 0)
    print(layer_map())
