"""A pickle reader that runs no code from the file: the safe half of ``ember.load``.

``pickle.load`` executes whatever a file asks for (``os.system`` is one REDUCE away). This module
is a small interpreter of its own for the protocol-2 opcodes that ``torch.save`` emits. It never
imports a module or calls an object named by the file: a GLOBAL is looked up in an allowlist that
the caller supplies (``find_global``), and the only things REDUCE can call are the plain Python
functions that allowlist returns (wrapped in ``Callable``), each of which validates its arguments,
and the classes and functions the user allowlisted (``add_safe_globals``), which REDUCE may call,
NEWOBJ may instantiate and BUILD may give state, never with the reader's own objects as arguments.
Everything else (INST, OBJ, NEWOBJ_EX, STACK_GLOBAL, FRAME, EXT*, text opcodes, protocols 3-5)
raises ``UnsafeCheckpointError`` naming the opcode and its byte offset.
"""

from __future__ import annotations

import struct
from collections import Counter, OrderedDict
from collections.abc import Callable
from pickle import UnpicklingError
from typing import Any

__all__ = ["UnsafeCheckpointError", "Callable_", "Marker", "unpickle", "check_plain"]


class UnsafeCheckpointError(UnpicklingError, RuntimeError):
    """A checkpoint that ``ember.load`` refuses: a global, opcode or value a tensor checkpoint
    does not need, or a malformed/truncated archive. Nothing from the file was executed."""


class Callable_:  # noqa: N801 - trailing underscore: not typing.Callable
    """An allowlisted global that REDUCE may call (our own function, never the file's)."""

    __slots__ = ("name", "fn")

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn

    def __repr__(self) -> str:
        return f"<global {self.name}>"


class Marker:
    """A non-callable allowlisted global that is not data by itself (a storage type, a class
    usable only as an argument of a rebuild function), or a storage read from the archive.
    Markers are arguments of rebuild functions; none may survive into the loaded result."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any = None) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"<global {self.name}>"


# opcode bytes (protocol 0-2 names from the pickle module's documentation)
_MARK, _STOP, _POP = 0x28, 0x2E, 0x30
_BININT, _BININT1, _BININT2, _LONG1 = 0x4A, 0x4B, 0x4D, 0x8A
_NONE, _NEWTRUE, _NEWFALSE, _BINFLOAT = 0x4E, 0x88, 0x89, 0x47
_BINUNICODE, _SHORT_BINSTRING = 0x58, 0x55
_EMPTY_TUPLE, _TUPLE, _TUPLE1, _TUPLE2, _TUPLE3 = 0x29, 0x74, 0x85, 0x86, 0x87
_EMPTY_LIST, _APPEND, _APPENDS = 0x5D, 0x61, 0x65
_EMPTY_DICT, _SETITEM, _SETITEMS = 0x7D, 0x73, 0x75
_GLOBAL, _REDUCE, _BUILD, _BINPERSID = 0x63, 0x52, 0x62, 0x51
_BINGET, _LONG_BINGET, _BINPUT, _LONG_BINPUT = 0x68, 0x6A, 0x71, 0x72
_PROTO = 0x80
_NEWOBJ = 0x81

# names of refused opcodes, for error messages
_NAMES = {
    0x69: "INST", 0x6F: "OBJ", 0x81: "NEWOBJ", 0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL",
    0x95: "FRAME", 0x94: "MEMOIZE", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 0x50: "PERSID",
    0x49: "INT", 0x4C: "LONG", 0x46: "FLOAT", 0x53: "STRING", 0x56: "UNICODE", 0x70: "PUT",
    0x67: "GET", 0x64: "DICT", 0x6C: "LIST", 0x8B: "LONG4", 0x54: "BINSTRING",
    0x42: "BINBYTES", 0x43: "SHORT_BINBYTES", 0x8C: "SHORT_BINUNICODE", 0x8D: "BINUNICODE8",
    0x8E: "BINBYTES8", 0x8F: "EMPTY_SET", 0x90: "ADDITEMS", 0x91: "FROZENSET",
    0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER", 0x31: "POP_MARK",
    0x32: "DUP", 0x30: "POP",
}

_DICT_TYPES = (dict, OrderedDict, Counter)
_MAX_GLOBAL_LINE = 256


def _refuse(msg: str) -> UnsafeCheckpointError:
    return UnsafeCheckpointError(msg)


def unpickle(
    data: bytes,
    find_global: Callable[[str, str], Any],
    persistent_load: Callable[[Any], Any],
    user_allowed: Callable[[Any], bool] | None = None,
) -> Any:
    """Interpret ``data`` (a protocol-2 pickle) without executing anything it names.

    ``find_global(module, name)`` returns the object a GLOBAL stands for (a value, a ``Marker``
    or a ``Callable_``) or raises ``UnsafeCheckpointError``; ``persistent_load(pid)`` turns a
    persistent id into a storage. ``user_allowed(obj)`` says whether ``obj`` is a class or
    function the user allowlisted (``add_safe_globals``): only those may be called by REDUCE,
    instantiated by NEWOBJ, or given state by BUILD, and never with the reader's own objects
    as arguments. Any malformation raises ``UnsafeCheckpointError``.
    """
    allowed = user_allowed or (lambda obj: False)
    try:
        result = _run(data, find_global, persistent_load, allowed)
    except UnsafeCheckpointError:
        raise
    except (IndexError, KeyError, TypeError, ValueError, struct.error, UnicodeError,
            OverflowError, RecursionError, MemoryError, AttributeError) as e:
        raise _refuse(f"malformed checkpoint pickle: {type(e).__name__}: {e}") from None
    _check_result(result)
    return result


def _run(data: bytes, find_global: Callable, persistent_load: Callable,
         allowed: Callable[[Any], bool]) -> Any:
    n = len(data)
    pos = 0
    stack: list[Any] = []
    metastack: list[list[Any]] = []
    memo: dict[int, Any] = {}
    unpack_from = struct.unpack_from

    def need(k: int) -> None:  # where a short slice would not raise by itself
        if pos + k > n:
            raise _refuse(f"truncated checkpoint pickle: needs {k} more bytes at byte {pos}")

    def pop_mark() -> list[Any]:
        nonlocal stack
        if not metastack:
            raise _refuse(f"malformed checkpoint pickle: no MARK before byte {pos}")
        items = stack
        stack = metastack.pop()
        return items

    first = True
    while True:
        if pos >= n:
            raise _refuse("truncated checkpoint pickle: it ends without STOP")
        op = data[pos]
        at = pos
        pos += 1
        if first:
            if op != _PROTO:
                raise _refuse(
                    "this pickle has no protocol header; ember reads protocol 2 (torch.save's "
                    "default)"
                )
            first = False
        if op == _BINPUT:
            memo[data[pos]] = stack[-1]
            pos += 1
        elif op == _BINGET:
            idx = data[pos]
            pos += 1
            if idx not in memo:
                raise _refuse(f"malformed checkpoint pickle: BINGET {idx} of an unset memo slot")
            stack.append(memo[idx])
        elif op == _MARK:
            metastack.append(stack)
            stack = []
        elif op == _BINUNICODE:
            (ln,) = unpack_from("<I", data, pos)
            pos += 4
            need(ln)
            stack.append(str(data[pos:pos + ln], "utf-8", "surrogatepass"))
            pos += ln
        elif op == _BININT1:
            stack.append(data[pos])
            pos += 1
        elif op == _BININT2:
            stack.append(unpack_from("<H", data, pos)[0])
            pos += 2
        elif op == _BININT:
            stack.append(unpack_from("<i", data, pos)[0])
            pos += 4
        elif op == _LONG1:
            need(1)
            ln = data[pos]
            pos += 1
            need(ln)
            stack.append(int.from_bytes(data[pos:pos + ln], "little", signed=True))
            pos += ln
        elif op == _BINFLOAT:
            stack.append(unpack_from(">d", data, pos)[0])
            pos += 8
        elif op == _TUPLE:
            items = pop_mark()  # first: pop_mark rebinds ``stack``
            stack.append(tuple(items))
        elif op == _TUPLE1:
            stack[-1] = (stack[-1],)
        elif op == _TUPLE2:
            if len(stack) < 2:
                raise _refuse(f"malformed checkpoint pickle: TUPLE2 on a short stack at byte {at}")
            stack[-2:] = [(stack[-2], stack[-1])]
        elif op == _TUPLE3:
            if len(stack) < 3:
                raise _refuse(f"malformed checkpoint pickle: TUPLE3 on a short stack at byte {at}")
            stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
        elif op == _EMPTY_TUPLE:
            stack.append(())
        elif op == _NEWFALSE:
            stack.append(False)
        elif op == _NEWTRUE:
            stack.append(True)
        elif op == _NONE:
            stack.append(None)
        elif op == _EMPTY_DICT:
            stack.append({})
        elif op == _EMPTY_LIST:
            stack.append([])
        elif op == _GLOBAL:
            module, pos = _line(data, pos)
            name, pos = _line(data, pos)
            stack.append(find_global(module, name))
        elif op == _REDUCE:
            args = stack.pop()
            fn = stack[-1]
            if type(fn) is not Callable_ and _is_allowed(allowed, fn):
                if type(args) is not tuple:
                    raise _refuse(f"refused REDUCE at byte {at}: arguments are not a tuple")
                check_plain(args, f"the arguments of {_qualname(fn)} (REDUCE at byte {at})")
                stack[-1] = fn(*args)
                continue
            if type(fn) is not Callable_:
                raise _refuse(
                    f"refused REDUCE at byte {at}: {_describe(fn)} is not an allowed function "
                    "(ember.load only calls its own tensor and container constructors)"
                )
            if type(args) is not tuple:
                raise _refuse(f"refused REDUCE at byte {at}: the arguments of {fn.name} are not a "
                              "tuple")
            stack[-1] = fn.fn(*args)
        elif op == _BINPERSID:
            pid = stack.pop()
            stack.append(persistent_load(pid))
        elif op == _SETITEMS:
            items = pop_mark()
            target = stack[-1]
            if type(target) not in _DICT_TYPES and not (
                    isinstance(target, dict) and _is_allowed(allowed, type(target))):
                raise _refuse(f"refused SETITEMS at byte {at} on {_describe(target)}")
            if len(items) % 2:
                raise _refuse(f"malformed checkpoint pickle: odd SETITEMS at byte {at}")
            for i in range(0, len(items), 2):
                target[items[i]] = items[i + 1]
        elif op == _SETITEM:
            v = stack.pop()
            k = stack.pop()
            target = stack[-1]
            if type(target) not in _DICT_TYPES and not (
                    isinstance(target, dict) and _is_allowed(allowed, type(target))):
                raise _refuse(f"refused SETITEM at byte {at} on {_describe(target)}")
            target[k] = v
        elif op == _APPENDS:
            items = pop_mark()
            target = stack[-1]
            if type(target) is not list and not (
                    isinstance(target, list) and _is_allowed(allowed, type(target))):
                raise _refuse(f"refused APPENDS at byte {at} on {_describe(target)}")
            target.extend(items)
        elif op == _APPEND:
            v = stack.pop()
            target = stack[-1]
            if type(target) is not list and not (
                    isinstance(target, list) and _is_allowed(allowed, type(target))):
                raise _refuse(f"refused APPEND at byte {at} on {_describe(target)}")
            target.append(v)
        elif op == _LONG_BINPUT:
            need(4)
            memo[unpack_from("<I", data, pos)[0]] = stack[-1]
            pos += 4
        elif op == _LONG_BINGET:
            need(4)
            (idx,) = unpack_from("<I", data, pos)
            pos += 4
            if idx not in memo:
                raise _refuse(f"malformed checkpoint pickle: GET {idx} of an unset memo slot")
            stack.append(memo[idx])
        elif op == _SHORT_BINSTRING:
            need(1)
            ln = data[pos]
            pos += 1
            need(ln)
            stack.append(str(data[pos:pos + ln], "utf-8"))
            pos += ln
        elif op == _BUILD:
            state = stack.pop()
            _build(stack[-1], state, at, allowed)
        elif op == _NEWOBJ:
            args = stack.pop()
            cls = stack.pop()
            if not (isinstance(cls, type) and _is_allowed(allowed, cls)):
                raise _refuse(
                    f"refused NEWOBJ at byte {at}: {_describe(cls)} is not an allowlisted class "
                    "(add it with torch.serialization.add_safe_globals if you trust it)")
            if type(args) is not tuple:
                raise _refuse(f"refused NEWOBJ at byte {at}: arguments are not a tuple")
            check_plain(args, f"the arguments of {_qualname(cls)} (NEWOBJ at byte {at})")
            stack.append(cls.__new__(cls, *args))
        elif op == _PROTO:
            need(1)
            proto = data[pos]
            pos += 1
            if proto != 2 or at != 0:
                raise _refuse(
                    f"refused pickle protocol {proto} (at byte {at}): the weights_only reader "
                    "reads protocol 2, the protocol torch.save writes by default; re-save the "
                    "checkpoint with torch.save(obj, f) without pickle_protocol=, or, if you "
                    "trust the file, load it with weights_only=False"
                )
        elif op == _STOP:
            if not stack:
                raise _refuse("malformed checkpoint pickle: STOP on an empty stack")
            return stack.pop()
        else:
            name = _NAMES.get(op, f"0x{op:02x}")
            raise _refuse(
                f"refused pickle opcode {name} (0x{op:02x}) at byte {at}: a tensor checkpoint "
                "never needs it"
            )


def _line(data: bytes, pos: int) -> tuple[str, int]:
    end = data.find(b"\n", pos, pos + _MAX_GLOBAL_LINE)
    if end < 0:
        raise _refuse(f"malformed GLOBAL at byte {pos - 1}: no end of line")
    s = data[pos:end]
    if not s.isascii():
        raise _refuse(f"malformed GLOBAL at byte {pos - 1}: the name is not ASCII")
    return s.decode("ascii"), end + 1


def _build(inst: Any, state: Any, at: int, allowed: Callable[[Any], bool]) -> None:
    """BUILD: ``OrderedDict`` attributes (``state_dict()._metadata``, plain names), or the
    state of an instance of a user-allowlisted class (``__setstate__`` or its ``__dict__``)."""
    if type(inst) is not OrderedDict and not isinstance(inst, type) and _is_allowed(
            allowed, type(inst)):
        check_plain(state, f"the state of a {_qualname(type(inst))} (BUILD at byte {at})")
        if getattr(type(inst), "__setstate__", None) is not None:
            inst.__setstate__(state)
            return
        slots = None
        if type(state) is tuple and len(state) == 2:
            state, slots = state
        if state:
            if not isinstance(state, dict):
                raise _refuse(f"refused BUILD at byte {at}: state {_describe(state)}")
            inst.__dict__.update(state)
        if slots:
            if not isinstance(slots, dict):
                raise _refuse(f"refused BUILD at byte {at}: slot state {_describe(slots)}")
            for k, v in slots.items():
                setattr(inst, k, v)
        return
    if type(inst) is not OrderedDict or type(state) is not dict:
        raise _refuse(f"refused BUILD at byte {at}: it sets state on {_describe(inst)}; only an "
                      "OrderedDict's attributes (a state dict's _metadata) may be set")
    for k in state:
        if (type(k) is not str or not k.isidentifier() or k.startswith("__")
                or hasattr(OrderedDict, k)):
            raise _refuse(f"refused BUILD at byte {at}: attribute name {k!r}")
    inst.__dict__.update(state)


def _describe(obj: Any) -> str:
    if isinstance(obj, (Callable_, Marker)):
        return repr(obj)
    if isinstance(obj, type):
        return f"class {_qualname(obj)}"
    return f"an object of type {type(obj).__name__}"


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _is_allowed(allowed: Callable[[Any], bool], obj: Any) -> bool:
    try:
        return bool(allowed(obj))
    except TypeError:  # unhashable values are never allowlisted globals
        return False


def check_plain(x: Any, what: str) -> None:
    """No reader object (storage, storage type, rebuild function) inside ``x``'s containers:
    user code (an allowlisted class or function) only ever sees rebuilt values."""
    todo, seen = [x], set()
    while todo:
        obj = todo.pop()
        t = type(obj)
        if t in _LEAVES:
            continue
        if isinstance(obj, (Callable_, Marker)):
            raise _refuse(f"refused {what}: it contains {obj!r}, an object of the checkpoint "
                          "reader, not a value")
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if t in (list, tuple, set, frozenset):
            todo.extend(obj)
        elif t in _DICT_TYPES:
            todo.extend(obj.keys())
            todo.extend(obj.values())
            if t is OrderedDict:
                todo.extend(obj.__dict__.values())


_LEAVES = (str, int, float, bool, bytes, bytearray, complex, type(None))


def _check_result(result: Any) -> None:
    """No marker (storage type, class, allowlisted function) may escape into the result."""
    seen: set[int] = set()
    todo = [result]
    while todo:
        obj = todo.pop()
        t = type(obj)
        if t in _LEAVES:
            continue
        if isinstance(obj, (Callable_, Marker)):
            raise _refuse(
                f"the checkpoint contains {obj!r} as a value; ember.load returns only data "
                "(tensors, numbers, strings, containers), and rebuilds tensors from storages"
            )
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if t in (list, tuple, set, frozenset):
            todo.extend(obj)
        elif t in _DICT_TYPES:
            todo.extend(obj.keys())
            todo.extend(obj.values())
        if isinstance(obj, type):
            continue  # an allowlisted class as a value: nothing of the reader inside
        # attribute state: an OrderedDict's _metadata, a tensor's Python attributes, an
        # allowlisted class's instance dict; none may carry reader internals either
        d = getattr(obj, "__dict__", None)
        if type(d) is dict:
            todo.extend(d.keys())
            todo.extend(d.values())
