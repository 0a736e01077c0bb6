"""Compare ember's namespaces with PyTorch 2.13's public names; write docs/api-coverage.md.

    .venv/bin/python scripts/api_coverage.py            # rewrite docs/api-coverage.md
    .venv/bin/python scripts/api_coverage.py --check    # exit 1 if the file is out of date
    .venv/bin/python scripts/api_coverage.py --stdout   # print the page instead
    .venv/bin/python scripts/api_coverage.py --rank DIR # count uses in DIR's .py files first

``--rank DIR`` counts how often the ``.py`` files under DIR (a folder of public PyTorch programs,
one sub-folder per repository; never committed) use each PyTorch name, and writes the counts to
``scripts/api_usage.tsv``. The page then ranks the names ember lacked at counting time by use.

The list of PyTorch's names is ``src/ember/_torch_api.txt`` (the same list ember uses at run time to
answer a missing name with "ember does not implement torch.X yet"). PyTorch itself is not needed.

A name counts as *implemented* when ember's namespace resolves it to a real object. It counts as a
*stub* when it resolves to a function or class whose only statement raises NotImplementedError
(or to ``None``, a placeholder), and as *missing* when lookup fails. Names that PyTorch's modules
merely import for their own use (standard-library modules, typing helpers, build flags) are listed
apart and not counted.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API_FILE = ROOT / "src" / "ember" / "_torch_api.txt"
OUT_FILE = ROOT / "docs" / "api-coverage.md"
SUITES_FILE = ROOT / "scripts" / "library_suites.md"  # appended as written (run by hand)
USAGE_FILE = ROOT / "scripts" / "api_usage.tsv"
RANK_TOP = 150

# Tensor method names that programs mostly call on Python objects (dict.values(), list.index(),
# module.name...): a text count cannot tell them apart, so they are left out of the ranking.
AMBIGUOUS_METHODS = frozenset(
    "values index name new resize indices storage layout map_ apply_ volatile module_load".split()
)

# Names in _torch_api.txt that are not PyTorch API: modules and helpers PyTorch's own files import
# (found once by inspecting torch 2.13: stdlib modules, typing/functools objects, build flags).
INCIDENTAL: dict[str, frozenset[str]] = {
    "torch": frozenset(
        "TYPE_CHECKING USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH builtins ctypes functools glob "
        "importlib inspect math os platform sys textwrap threading torch warnings".split()
    ),
    "torch.nn.functional": frozenset(
        "Callable DType Optional TYPE_CHECKING dataclasses importlib math np torch warnings".split()
    ),
    "torch.optim.lr_scheduler": frozenset(
        "Any Counter Literal Self SupportsFloat TYPE_CHECKING TypedDict annotations bisect_right "
        "cast inf math override partial ref types warnings wraps".split()
    ),
    "torch.cuda": frozenset(
        "Any Callable Device NewType Optional TYPE_CHECKING cast importlib lru_cache os platform "
        "threading torch traceback warnings".split()
    ),
    "torch.autograd": frozenset("Mapping Sequence cast overload torch warnings".split()),
    "torch.nn.init": frozenset("Callable Literal ParamSpec TypeVar math torch warnings".split()),
    "torch.special": frozenset({"torch"}),
    "torch.fft": frozenset({"torch"}),
    "torch.distributed": frozenset(
        "RankType logging sys timedelta torch traceback typing".split()
    ),
}


def read_api(path: Path = API_FILE) -> dict[str, list[str]]:
    """``{namespace: [names]}`` from the ``[section]``-per-line format of _torch_api.txt."""
    out: dict[str, list[str]] = {}
    section = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = []
        elif section is not None:
            out[section].extend(line.split())
    return out


def ember_namespace(namespace: str) -> object | None:
    """ember's object for a PyTorch namespace (``torch.nn`` -> ``ember.nn``), or None if absent."""
    if namespace == "torch.Tensor":
        import ember

        return ember.Tensor
    name = "ember" + namespace[len("torch"):]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            return None
        raise


def _raises_not_implemented(obj: object) -> bool:
    """True for a function (or a class whose ``__init__``/``__new__``) only raises
    NotImplementedError: a stub that exists so the error can say what to use instead."""
    targets = [obj]
    if inspect.isclass(obj):
        targets = [obj.__dict__.get("__init__"), obj.__dict__.get("__new__")]
    for fn in targets:
        fn = getattr(fn, "__func__", fn)
        if not inspect.isfunction(fn):
            continue
        try:
            src = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            continue
        body = ast.parse(src).body[0].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
            exc = body[0].exc
            name = exc.func if isinstance(exc, ast.Call) else exc
            if isinstance(name, ast.Name) and name.id == "NotImplementedError":
                return True
    return False


def classify(namespace: str, names: list[str]) -> dict[str, list[str]]:
    """Split ``names`` into implemented / stub / missing / incidental for one namespace."""
    ns = ember_namespace(namespace)
    skip = INCIDENTAL.get(namespace, frozenset())
    groups: dict[str, list[str]] = {"implemented": [], "stub": [], "missing": [], "incidental": []}
    for name in names:
        if name in skip:
            groups["incidental"].append(name)
            continue
        if ns is None:
            groups["missing"].append(name)
            continue
        try:
            if inspect.isclass(ns):  # torch.Tensor: look on the class, no instance needed
                obj = inspect.getattr_static(ns, name)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    obj = getattr(ns, name)
        except (AttributeError, NotImplementedError):
            groups["missing"].append(name)
            continue
        # a None module attribute is a placeholder (torch.cfloat); on the Tensor class it is the
        # class-level default of an instance field (Tensor.grad)
        if (obj is None and not inspect.isclass(ns)) or _raises_not_implemented(obj):
            groups["stub"].append(name)
        else:
            groups["implemented"].append(name)
    return groups


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "(none)"


def render(api: dict[str, list[str]]) -> str:
    """The Markdown page."""
    results = {ns: classify(ns, names) for ns, names in api.items()}
    lines = [
        "# PyTorch API coverage",
        "",
        "Generated by `scripts/api_coverage.py` from `src/ember/_torch_api.txt` (the public names of "
        "PyTorch 2.13's main namespaces); do not edit by hand. Regenerate with "
        "`.venv/bin/python scripts/api_coverage.py`.",
        "",
        "- **implemented**: ember's namespace has the name.",
        "- **stub**: the name exists but only raises `NotImplementedError` with a hint, or is a "
        "`None` placeholder (e.g. `torch.cfloat`: ember has no complex dtypes).",
        "- **missing**: looking the name up raises `NotImplementedError` at the point of use: "
        "`ember does not implement torch.X yet`. The error is also an `AttributeError`, so "
        "`hasattr(torch, 'X')` is `False`, as feature probes expect; a name PyTorch does not "
        "have at all is an ordinary `AttributeError` (a typo stays a typo). `ember run --report "
        "script.py` lists the missing names a script reached for.",
        "- **not counted**: names PyTorch's module files import for their own use (`os`, "
        "`warnings`, `Optional`, ...).",
        "",
        "Coverage counts names, not behaviour: an implemented function may still lack some of "
        "PyTorch's options (the other pages in `docs/` say which). Signatures, parameter for "
        "parameter, are checked against PyTorch's by a test: [signatures.md](signatures.md).",
        "",
        "| namespace | PyTorch names | implemented | stub | missing | coverage |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tot = {"names": 0, "implemented": 0, "stub": 0, "missing": 0}
    for ns, g in results.items():
        counted = len(g["implemented"]) + len(g["stub"]) + len(g["missing"])
        pct = 100.0 * len(g["implemented"]) / counted if counted else 100.0
        lines.append(
            f"| [`{ns}`](#{ns.replace('.', '').lower()}) | {counted} | {len(g['implemented'])} | "
            f"{len(g['stub'])} | {len(g['missing'])} | {pct:.0f}% |"
        )
        tot["names"] += counted
        for k in ("implemented", "stub", "missing"):
            tot[k] += len(g[k])
    pct = 100.0 * tot["implemented"] / tot["names"] if tot["names"] else 100.0
    lines.append(
        f"| **all** | {tot['names']} | {tot['implemented']} | {tot['stub']} | {tot['missing']} "
        f"| {pct:.0f}% |"
    )
    for ns, g in results.items():
        lines += ["", f"## {ns}", ""]
        if ember_namespace(ns) is None:
            lines += [f"ember has no `{ns}` module yet: `import {ns}` fails with "
                      f"\"ember does not implement {ns} yet\" under `ember run`.", ""]
        lines += [f"**Implemented ({len(g['implemented'])}):** {_names(g['implemented'])}", ""]
        if g["stub"]:
            lines += [f"**Stub ({len(g['stub'])}):** {_names(g['stub'])}", ""]
        lines += [f"**Missing ({len(g['missing'])}):** {_names(g['missing'])}", ""]
        if g["incidental"]:
            lines += [f"Not counted ({len(g['incidental'])}): {_names(g['incidental'])}", ""]
    lines += render_ranking()
    if SUITES_FILE.exists():  # the hand-written library suites table, kept across regenerations
        lines += ["", *SUITES_FILE.read_text().rstrip().splitlines()]
    return "\n".join(lines).rstrip() + "\n"


def _module_aliases(tree: ast.Module, namespaces: set[str]) -> dict[str, str]:
    """Local names bound to PyTorch modules in one file (``F`` -> ``torch.nn.functional``)."""
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    if a.asname:
                        alias[a.asname] = a.name
                    else:
                        alias["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "torch" or node.module.startswith("torch."):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in namespaces or full in ("torch.nn", "torch.optim"):
                        alias[a.asname or a.name] = full
    return alias


def _dotted(node: ast.AST, alias: dict[str, str]) -> str | None:
    """``F.relu`` -> ``torch.nn.functional.relu`` when the chain starts at a torch alias."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in alias:
        return ".".join([alias[node.id], *reversed(parts)])
    return None


def count_usage(corpus: Path, api: dict[str, list[str]]) -> dict[tuple[str, str], list[int]]:
    """``{(namespace, name): [files, uses, repos]}`` over the ``.py`` files under ``corpus``.

    Counted: ``torch.X``-style references resolved through each file's imports (``import
    torch.nn.functional as F``, ``from torch import nn``), names imported with ``from torch.x
    import X``, and ``.X`` attribute uses (calls for methods) whose name is a Tensor attribute and
    whose receiver is not a torch module.
    """
    names = {ns: set(v) for ns, v in api.items()}
    namespaces = set(names)
    tensor_names = names["torch.Tensor"] - AMBIGUOUS_METHODS
    counts: dict[tuple[str, str], list[int]] = {}
    repos: dict[tuple[str, str], set[str]] = {}
    for path in sorted(corpus.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        alias = _module_aliases(tree, namespaces)
        if not alias:
            continue
        here: dict[tuple[str, str], int] = {}
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.ImportFrom) and node.module in namespaces and node.level == 0:
                for a in node.names:
                    if a.name in names[node.module]:
                        k = (node.module, a.name)
                        here[k] = here.get(k, 0) + 1
                continue
            if not isinstance(node, ast.Attribute):
                continue
            full = _dotted(node, alias)
            if full is not None:
                ns, _, name = full.rpartition(".")
                if ns in namespaces and name in names[ns]:
                    key = (ns, name)
            elif node.attr in tensor_names and _dotted(node.value, alias) is None:
                key = ("torch.Tensor", node.attr)
            if key is not None:
                here[key] = here.get(key, 0) + 1
        repo = path.relative_to(corpus).parts[0]
        for k, n in here.items():
            c = counts.setdefault(k, [0, 0, 0])
            c[0] += 1
            c[1] += n
            repos.setdefault(k, set()).add(repo)
    for k, c in counts.items():
        c[2] = len(repos[k])
    return counts


def write_usage(corpus: Path, api: dict[str, list[str]]) -> None:
    """Count uses in ``corpus`` and write ``scripts/api_usage.tsv`` (with the names ember lacked)."""
    counts = count_usage(corpus, api)
    lacking = set()
    for ns, names in api.items():
        g = classify(ns, names)
        lacking.update((ns, n) for n in g["missing"] + g["stub"])
    repos = sorted(p.name for p in corpus.iterdir() if p.is_dir())
    n_files = sum(1 for _ in corpus.rglob("*.py"))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][2], -kv[1][0], -kv[1][1], kv[0]))
    lines = [
        f"# Uses of PyTorch names in {n_files} .py files of {len(repos)} public repositories:",
        "# " + ", ".join(r.replace("+", "/") for r in repos),
        "# written by `scripts/api_coverage.py --rank DIR`; columns: name, files, uses, repos,",
        "# lacking (1 if ember lacked the name when counted)",
    ]
    for (ns, name), (files, uses, nrepos) in rows:
        lines.append(f"{ns}.{name}\t{files}\t{uses}\t{nrepos}\t{int((ns, name) in lacking)}")
    USAGE_FILE.write_text("\n".join(lines) + "\n")
    print(f"wrote {USAGE_FILE.relative_to(ROOT)} ({len(rows)} names)")


def read_usage() -> tuple[list[str], list[tuple[str, int, int, int, bool]]]:
    """The header comments and rows of ``scripts/api_usage.tsv`` (empty when absent)."""
    if not USAGE_FILE.exists():
        return [], []
    header, rows = [], []
    for line in USAGE_FILE.read_text().splitlines():
        if line.startswith("#"):
            header.append(line[1:].strip())
            continue
        full, files, uses, nrepos, lacking = line.split("\t")
        rows.append((full, int(files), int(uses), int(nrepos), lacking == "1"))
    return header, rows


def _is_done(full: str) -> bool:
    ns, _, name = full.rpartition(".")
    return name in classify(ns, [name])["implemented"]


def render_ranking() -> list[str]:
    """The ranking section: the most used names ember lacked when counted, and their status."""
    header, rows = read_usage()
    if not rows:
        return []
    lacking = [r for r in rows if r[4]][:RANK_TOP]
    done = sum(_is_done(r[0]) for r in lacking)
    lines = [
        "",
        f"## The {len(lacking)} most used names ember lacked",
        "",
        f"{header[0]} {header[1]}. Counted by `scripts/api_coverage.py --rank` (references "
        "resolved through each file's imports: `torch.X`, `F.X`, `nn.X`, `from torch.x import X`; "
        "for Tensor methods, `.X` on anything that is not a torch module) into "
        "`scripts/api_usage.tsv`. Ranked by the number of repositories that use the name, then "
        "files, then uses (so one large repository does not decide the order); names ember "
        "lacked at counting time only. Method names that are mostly Python's own (`.values()`, "
        f"`.index()`, `.name`...) are not counted. **{done} of {len(lacking)} are now done.**",
        "",
        "| rank | name | repos | files | uses | status |",
        "| ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for i, (full, files, uses, nrepos, _) in enumerate(lacking, 1):
        status = "done" if _is_done(full) else "missing"
        lines.append(f"| {i} | `{full}` | {nrepos} | {files} | {uses} | {status} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: write, check or print the coverage page."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if docs/api-coverage.md is stale")
    p.add_argument("--stdout", action="store_true", help="print instead of writing the file")
    p.add_argument("--rank", type=Path, metavar="DIR",
                   help="count uses in DIR's .py files into scripts/api_usage.tsv first")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.rank is not None:
        write_usage(args.rank, read_api())
    page = render(read_api())
    if args.stdout:
        sys.stdout.write(page)
        return 0
    if args.check:
        current = OUT_FILE.read_text() if OUT_FILE.exists() else ""
        if current != page:
            print(f"{OUT_FILE.relative_to(ROOT)} is out of date: run scripts/api_coverage.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT_FILE.write_text(page)
    print(f"wrote {OUT_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
