"""``torch.jit.frontend``: the checks PyTorch's TorchScript front end makes before compiling.

ember runs scripted code as Python, but a program (or a library probing what it can script)
must see ``torch.jit.script`` refuse what PyTorch's refuses at its front end, with the same
exception classes: ``NotSupportedError`` for ``*args``/``**kwargs`` parameters, ``**`` expansion,
``for ... else``; ``UnsupportedNodeError`` for ``try``, ``lambda``, ``import``, nested ``def`` and
``class``, ``global``, ``yield``, set literals and comprehensions, ``:=``, ``match``; ``OSError``
when the source cannot be read; ``RuntimeError`` when the source is not one function (a lambda).

As in PyTorch, what is checked is everything scripting compiles: the function, and the Python
functions and ``self`` methods it calls; for a module, the ``forward`` and exported methods of it
and of every submodule. Functions marked ``@torch.jit.ignore``/``@torch.jit.unused`` are skipped,
and so is code of ember itself and of the standard library (PyTorch knows those as builtins).
Of the compiler's own refusals (``RuntimeError``), those read off a signature are made too: a
mutable default, or a default other than None or a tensor on a parameter with no type (which
TorchScript takes for a Tensor: ``def f(x, dim=1)``). Errors that need TorchScript's type
So is an attribute a Tensor lacks, read off a parameter TorchScript types as a Tensor (annotated
``Tensor`` or a subclass, or not annotated), outside ``if not torch.jit.is_scripting()`` branches.
Errors that need more of TorchScript's type inference (a list of unknown length unpacked, say)
are not: such code runs.
"""

from __future__ import annotations

import ast
import inspect
import os
import sysconfig
import textwrap
import types
from typing import Any

__all__ = ["FrontendError", "NotSupportedError", "UnsupportedNodeError", "check_scriptable"]


class SourceRange:
    """Where an error is: a file, a line, the line's text and the columns to underline."""

    def __init__(self, filename: str, lineno: int, text: str, col: int = 0, end: int = 0) -> None:
        self.filename, self.lineno, self.text = filename, lineno, text
        self.col, self.end = col, max(end, col + 1)

    def highlight(self) -> str:
        marks = " " * self.col + "~" * (self.end - self.col)
        return f'  File "{self.filename}", line {self.lineno}\n{self.text}\n{marks} <--- HERE\n'


class FrontendError(Exception):
    """TorchScript could not read this Python (``torch.jit.frontend.FrontendError``)."""

    def __init__(self, source_range: Any, msg: str) -> None:
        self.source_range = source_range
        self.msg = msg
        super().__init__(msg)

    def __str__(self) -> str:
        where = self.source_range.highlight() if isinstance(self.source_range, SourceRange) else ""
        return f"{self.msg}:\n{where}" if where else self.msg


class NotSupportedError(FrontendError):
    """Python that TorchScript does not support (``torch.jit.frontend.NotSupportedError``)."""


class UnsupportedNodeError(NotSupportedError):
    """A kind of statement or expression TorchScript does not support."""

    def __init__(self, ctx: Any, offending_node: Any, reason: str = "") -> None:
        name = _NODE_NAMES.get(type(offending_node), type(offending_node).__name__)
        where = ctx.range(offending_node) if isinstance(ctx, _Source) else None
        super().__init__(where, f"{name} aren't supported{reason}")


_NODE_NAMES: dict[type, str] = {
    ast.Try: "try blocks", ast.Global: "global variables", ast.Import: "import statements",
    ast.ImportFrom: "import statements", ast.FunctionDef: "function definitions",
    ast.AsyncFunctionDef: "function definitions", ast.ClassDef: "class definitions",
}
if hasattr(ast, "TryStar"):
    _NODE_NAMES[ast.TryStar] = "try blocks"
# statements and expressions the front end has no rule for (it names them as above, or by class)
_UNSUPPORTED = (ast.Try, ast.Global, ast.Import, ast.ImportFrom, ast.FunctionDef,
                ast.AsyncFunctionDef, ast.ClassDef, ast.Match, ast.AsyncFor, ast.AsyncWith,
                ast.Lambda, ast.Set, ast.SetComp, ast.Await, ast.Yield, ast.YieldFrom,
                ast.NamedExpr, *([ast.TryStar] if hasattr(ast, "TryStar") else []))
_VARARGS = ("Compiled functions can't take variable number of arguments or use keyword-only "
            "arguments with defaults")


class _Source:
    """A function's source, parsed: the ``def`` node and how to point at a node in the file."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        try:
            lines, first = inspect.getsourcelines(fn)
            self.filename = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError):
            raise OSError(f"Can't get source for {fn}. TorchScript requires source access in "
                          "order to carry out compilation, make sure original .py files are "
                          "available.") from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        self.first, self.lines = first, lines
        tree = ast.parse(dedented)
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
            raise RuntimeError(f"Expected a single top-level function: {self.filename}:{first}")
        self.node = tree.body[0]

    def range(self, node: Any) -> SourceRange:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1].rstrip("\n") if line - 1 < len(self.lines) else ""
        col = getattr(node, "col_offset", 0) + self.indent
        end = col + 1
        if getattr(node, "end_lineno", None) == line and node.end_col_offset is not None:
            end = node.end_col_offset + self.indent
        return SourceRange(self.filename, self.first + line - 1, text, col, end)


def _check_def(src: _Source) -> None:
    """PyTorch's front-end refusals for one ``def``: its parameters, then its body in order."""
    args = src.node.args
    bad = args.vararg or args.kwarg or next(
        (a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None),
        None)
    if bad is not None:
        raise NotSupportedError(src.range(bad), _VARARGS)
    stack: list[Any] = list(reversed(src.node.body))
    while stack:  # depth first, in source order, as the front end reads
        node = stack.pop()
        if isinstance(node, _UNSUPPORTED):
            raise UnsupportedNodeError(src, node)
        if isinstance(node, ast.For) and node.orelse:
            raise NotSupportedError(src.range(node), "else branches of for loops aren't supported")
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            raise NotSupportedError(src.range(node), "keyword-arg expansion is not supported")
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            raise NotSupportedError(src.range(node),
                                    "Dict expansion (e.g. `{**dict}`) is not supported")
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            raise FrontendError(src.range(node), "Unknown Constant expression type")
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _check_defaults(fn: Any, src: _Source) -> None:
    """The compiler's first refusals, read off the signature: a mutable default, and a default
    other than None or a tensor on a parameter without a type (TorchScript takes it for a
    Tensor). A ``# type: (...) -> ...`` comment types the parameters, as in PyTorch."""
    from .._tensor_base import TensorBase

    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    typed = any(line.strip().startswith("# type:") for line in src.lines[:8])
    where = SourceRange(src.filename, src.first, src.lines[0].rstrip("\n"), src.indent,
                        len(src.lines[0].rstrip()))
    for name, value in zip(names[len(names) - len(defaults):], defaults, strict=True):
        if isinstance(value, (list, dict, set)):
            raise RuntimeError(
                "\nMutable default parameters are not supported because Python binds them to "
                "the function and they persist across function calls.\n As a workaround, make "
                "the default None and instantiate the default parameter within the body of the "
                f"function. Found {type(value)} on parameter {name}:\n{where.highlight()}")
        if not typed and name not in fn.__annotations__ and value is not None \
                and not isinstance(value, TensorBase):
            raise RuntimeError(
                f'\nExpected a default value of type Tensor (inferred) on parameter "{name}".'
                f'Because "{name}" was not annotated with an explicit type it is assumed to be '
                f"type 'Tensor'.:\n{where.highlight()}")
    for stmt in ast.walk(src.node):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and stmt.value.value is Ellipsis:
            raise RuntimeError(f"\nCannot emit expr for: (dots)\n:\n{src.range(stmt).highlight()}")


def _is_scripting_call(node: Any) -> bool:
    f = node.func if isinstance(node, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr == "is_scripting") or (
        isinstance(f, ast.Name) and f.id == "is_scripting")


def _never_scripted(test: Any) -> bool:
    """Whether an ``if`` test is False under scripting (``not torch.jit.is_scripting()``, alone
    or in an ``and``): TorchScript compiles only the other branch."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_never_scripted(v) for v in test.values)
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and \
        _always_scripted(test.operand)


def _always_scripted(test: Any) -> bool:
    """Whether an ``if`` test is True under scripting (``torch.jit.is_scripting()``, alone or
    in an ``or``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_always_scripted(v) for v in test.values)
    return _is_scripting_call(test)


def _live(block: list) -> list:
    """A block's statements up to an ``if`` that, under scripting, always takes a branch ending
    in ``return`` or ``raise``: TorchScript does not compile what follows it."""
    for i, stmt in enumerate(block):
        if isinstance(stmt, ast.If):
            taken = stmt.body if _always_scripted(stmt.test) else (
                stmt.orelse if _never_scripted(stmt.test) else None)
            if taken and isinstance(taken[-1], (ast.Return, ast.Raise)):
                return block[:i + 1]
    return block


def _compiled_nodes(body: list) -> Any:
    """The nodes of a ``def``'s body that TorchScript compiles, depth first in source order:
    the branch an ``if`` on ``torch.jit.is_scripting()`` never takes under scripting is left
    out, and so is the code after it when the branch taken returns (TorchScript's static
    ``if``; its front end still reads all of it)."""
    stack: list[Any] = list(reversed(_live(body)))
    while stack:
        node = stack.pop()
        if isinstance(node, list):  # a nested block
            stack.extend(reversed(_live(node)))
            continue
        if isinstance(node, (ast.If, ast.IfExp)):
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            then = node.body if isinstance(node.body, list) else [node.body]
            if not _always_scripted(node.test):
                stack.append(orelse)
            if not _never_scripted(node.test):
                stack.append(then)
            stack.append(node.test)
            yield node
            continue
        yield node
        for _field, value in reversed(list(ast.iter_fields(node))):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(reversed([v for v in value if isinstance(v, ast.AST)]))
            elif isinstance(value, ast.AST):
                stack.append(value)


def _check_tensor_attributes(fn: Any, src: _Source, owner: type | None) -> None:
    """A parameter that TorchScript types as a Tensor (annotated with Tensor or a subclass of it,
    or not annotated, and never rebound) used for an attribute a Tensor lacks: the compiler's
    ``RuntimeError``. Branches that only run outside scripting are not compiled (TorchScript's
    static ``if`` on ``torch.jit.is_scripting()``)."""
    import typing

    from .._tensor_base import TensorBase

    code = fn.__code__
    names = list(code.co_varnames[:code.co_argcount])
    if owner is not None and names:
        names = names[1:]  # self
    names = names[:len(names) - len(fn.__defaults__ or ())]  # (a default types it otherwise)
    if not names:
        return
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: check nothing typed
        hints = None
    tensors: dict[str, str] = {}
    for name in names:
        if name not in fn.__annotations__:
            tensors[name] = "Tensor (inferred)"
        elif hints is not None and isinstance(hints.get(name), type) \
                and issubclass(hints[name], TensorBase):
            tensors[name] = "Tensor"
    for node in ast.walk(src.node):  # a rebound name may hold anything
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            tensors.pop(node.id, None)
    if not tensors:
        return
    from .._tensor import Tensor

    for node in _compiled_nodes(src.node.body):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in tensors and not hasattr(Tensor, node.attr):
            raise RuntimeError(
                f"\n'{tensors[node.value.id]}' object has no attribute or method "
                f"'{node.attr}'.:\n{src.range(node).highlight()}")


_SKIPPED_MODIFIERS = ("unused", "ignore", "_drop")
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIRS = tuple(os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                     for k in ("stdlib", "platstdlib"))


def _compiled(fn: Any) -> bool:
    """Whether scripting compiles ``fn`` (a Python function that is neither marked ignored nor
    ember's own or the standard library's)."""
    if not isinstance(fn, types.FunctionType):
        return False
    if str(getattr(fn, "_torchscript_modifier", "")).startswith(_SKIPPED_MODIFIERS):
        return False
    if str(getattr(fn, "__module__", None)).partition(".")[0] in ("ember", "torch"):
        return False  # ember's (under `ember run` its functions may report torch's modules)
    path = os.path.abspath(fn.__code__.co_filename)
    if path.startswith(_EMBER_DIR) and "site-packages" not in path[len(_EMBER_DIR):]:
        return False
    return not (path.startswith(_STDLIB_DIRS) and "site-packages" not in path)


def _callees(fn: Any, node: ast.AST, owner: type | None) -> list[Any]:
    """The Python functions a ``def`` calls by name (``helper(x)``, ``mod.helper(x)``) and, in a
    method, the methods it calls on ``self``, in the code TorchScript compiles."""
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    this = node.args.args[0].arg if owner is not None and node.args.args else None
    found = []
    for call in _compiled_nodes(node.body):
        if not isinstance(call, ast.Call):
            continue
        f, chain = call.func, []
        while isinstance(f, ast.Attribute):
            chain.append(f.attr)
            f = f.value
        if not isinstance(f, ast.Name):
            continue
        if f.id == this and len(chain) == 1:
            target = inspect.getattr_static(owner, chain[0], None)
            found.append(target.__func__ if isinstance(target, (staticmethod, classmethod))
                         else target)
            continue
        obj = scope.get(f.id)
        for attr in reversed(chain):
            if not isinstance(obj, types.ModuleType):
                obj = None
                break
            obj = getattr(obj, attr, None)
        found.append(obj)
    return found


def _module_methods(module: Any) -> list[tuple[Any, type]]:
    """(function, class) for the methods scripting compiles on each module under ``module``:
    ``forward`` (unless it is ember's) and those marked ``@torch.jit.export``."""
    out = []
    stack = [module]
    seen: set[int] = set()
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        cls = type(m)
        fwd = inspect.getattr_static(cls, "forward", None)
        if _compiled(fwd):
            out.append((fwd, cls))
        for klass in cls.__mro__:
            for name, v in vars(klass).items():
                if name != "forward" and str(getattr(v, "_torchscript_modifier", "")).startswith(
                        "export") and _compiled(v):
                    out.append((v, cls))
        stack.extend(reversed([c for c in getattr(m, "_modules", {}).values() if c is not None]))
    return out


def check_scriptable(obj: Any, is_module: bool = False) -> None:
    """Raise what PyTorch's front end raises for ``obj`` (a function or an ``nn.Module``), if
    anything: every function scripting would compile is read, once each."""
    work: list[tuple[Any, type | None]]
    if is_module:
        work = _module_methods(obj)
    else:
        fn = inspect.unwrap(obj)
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        if not isinstance(fn, types.FunctionType) or not _compiled(fn):
            return
        if fn.__module__ is None:
            raise RuntimeError(f"Could not get qualified name for class '{fn.__name__}': "
                               "__module__ can't be None.")
        work = [(fn, None)]
    done: set[Any] = set()
    work = [(fn, owner, True) for fn, owner in reversed(work)]
    while work:
        fn, owner, top = work.pop()
        fn = inspect.unwrap(fn)  # a decorated function: PyTorch reads the one decorated
        if fn.__code__ in done:
            continue
        done.add(fn.__code__)
        try:
            src = _Source(fn)
        except OSError:
            if top:
                raise
            continue  # a function it calls, made without a file: not ours to refuse
        _check_def(src)
        _check_defaults(fn, src)
        _check_tensor_attributes(fn, src, owner)
        for callee in reversed(_callees(fn, src.node, owner)):
            callee = inspect.unwrap(callee) if callable(callee) else callee
            if _compiled(callee) and callee.__code__ not in done:
                work.append((callee, owner if _is_method_of(callee, owner) else None, False))


def _is_method_of(fn: Any, owner: type | None) -> bool:
    return owner is not None and any(vars(k).get(fn.__name__) is fn for k in owner.__mro__)
