"""Read the pickled dicts of NumPy arrays that CIFAR's python batches are, running no code.

CIFAR's ``data_batch_*``, ``test_batch``, ``batches.meta``, ``train``, ``test`` and ``meta`` are
protocol-2 pickles written by Python 2's cPickle: a dict of byte strings, lists of ints and
strings, and NumPy arrays (``numpy.core.multiarray._reconstruct``, ``numpy.ndarray``,
``numpy.dtype``). ``pickle.load`` would import and call whatever a file names; this small
interpreter knows the protocol 0-2 binary opcodes such a file uses, accepts exactly those four
globals (plus ``_codecs.encode``, which Python 3 writes for bytes in protocol 2), and builds the
arrays itself with ``np.frombuffer`` from a plain numeric dtype. ember's checkpoint reader
(``ember._pickle_reader``) cannot serve here: it refuses Python 2 byte strings (BINSTRING) and
BUILD on anything but an OrderedDict.

Python 2 strings are decoded as latin-1, as ``pickle.load(f, encoding="latin1")`` does.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

__all__ = ["UnsafePickleError", "load_arrays_pickle"]


class UnsafePickleError(ValueError):
    """The file is not a plain pickled dict/list of NumPy arrays, numbers and strings."""


class _Global:
    """A global the file may name: a marker the interpreter recognises, never called blindly."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<global {self.name}>"


_RECONSTRUCT = _Global("numpy.core.multiarray._reconstruct")
_NDARRAY = _Global("numpy.ndarray")
_DTYPE = _Global("numpy.dtype")
_ENCODE = _Global("_codecs.encode")
_BYTES = _Global("builtins.bytes")
_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,  # NumPy 2 writes this name
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _DTYPE,
    ("_codecs", "encode"): _ENCODE,
    ("__builtin__", "bytes"): _BYTES,  # Python 3, protocol 2: b"" is bytes()
    ("builtins", "bytes"): _BYTES,
}

# plain numeric dtypes an array may have; object and structured dtypes are refused
_DTYPES = {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"}


class _PendingArray:
    """``_reconstruct(ndarray, (0,), b'b')``: an array whose BUILD has not come yet."""

    __slots__ = ()


class _PendingDtype:
    """``dtype('u1', 0, 1)``: a dtype whose BUILD (byte order) has not come yet."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype


def _to_bytes(s: Any, what: str) -> bytes:
    if isinstance(s, bytes):
        return s
    if isinstance(s, str):
        return s.encode("latin-1")  # a Python 2 str read as latin-1: its bytes, unchanged
    raise UnsafePickleError(f"{what} is {type(s).__name__}, not a byte string")


def _reduce(fn: Any, args: Any, at: int) -> Any:
    if type(args) is not tuple:
        raise UnsafePickleError(f"REDUCE at byte {at}: the arguments are not a tuple")
    if fn is _RECONSTRUCT:
        if len(args) != 3 or args[0] is not _NDARRAY:
            raise UnsafePickleError(f"REDUCE at byte {at}: _reconstruct of something not an ndarray")
        return _PendingArray()
    if fn is _DTYPE:
        if not args or not isinstance(args[0], str) or args[0] not in _DTYPES:
            raise UnsafePickleError(
                f"REDUCE at byte {at}: dtype {args[0] if args else None!r} is not a plain numeric "
                f"dtype ({', '.join(sorted(_DTYPES))})")
        return _PendingDtype(np.dtype(args[0]))
    if fn is _ENCODE:
        if len(args) != 2 or not isinstance(args[0], str) or args[1] not in ("latin1", "latin-1"):
            raise UnsafePickleError(f"REDUCE at byte {at}: _codecs.encode other than latin1 text")
        return args[0].encode("latin-1")
    if fn is _BYTES:
        if args:
            raise UnsafePickleError(f"REDUCE at byte {at}: bytes() with arguments")
        return b""
    raise UnsafePickleError(f"REDUCE at byte {at}: {fn!r} is not callable here")


def _build(obj: Any, state: Any, at: int) -> Any:
    """The value ``obj`` becomes once BUILD gives it ``state``."""
    if isinstance(obj, _PendingDtype):
        # (version, byte order, subarray, names, fields, elsize, alignment, flags)
        if type(state) is not tuple or len(state) < 2 or state[1] not in ("|", "<", ">", "="):
            raise UnsafePickleError(f"BUILD at byte {at}: unexpected dtype state {state!r:.80}")
        if any(x is not None for x in state[2:5]):
            raise UnsafePickleError(f"BUILD at byte {at}: structured or sub-array dtypes are refused")
        return obj.dtype.newbyteorder(state[1]) if state[1] in "<>" else obj.dtype
    if isinstance(obj, _PendingArray):
        # (version, shape, dtype, is_fortran, raw bytes)
        if type(state) is not tuple or len(state) != 5:
            raise UnsafePickleError(f"BUILD at byte {at}: unexpected array state")
        _, shape, dtype, fortran, raw = state
        if isinstance(dtype, _PendingDtype):
            dtype = dtype.dtype
        if not isinstance(dtype, np.dtype):
            raise UnsafePickleError(f"BUILD at byte {at}: array dtype {dtype!r} is not a dtype")
        if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
            raise UnsafePickleError(f"BUILD at byte {at}: array shape {shape!r} is not a shape")
        data = _to_bytes(raw, f"the data of the array at byte {at}")
        want = math.prod(shape) * dtype.itemsize
        if len(data) != want:
            raise UnsafePickleError(
                f"BUILD at byte {at}: the array of shape {shape} and dtype {dtype} needs {want} "
                f"bytes, the file holds {len(data)}")
        flat = np.frombuffer(data, dtype=dtype).copy()  # copy: writable, as pickle's arrays are
        return flat.reshape(shape, order="F" if fortran else "C")
    raise UnsafePickleError(f"BUILD at byte {at} on {type(obj).__name__}: only arrays and dtypes")


def load_arrays_pickle(data: bytes, what: str = "the pickle") -> Any:
    """The dict/list/array/number/string value pickled in ``data``; ``UnsafePickleError``
    (naming ``what`` and the byte offset) for anything else, or for a damaged file."""
    try:
        result = _run(data)
    except UnsafePickleError as e:
        raise UnsafePickleError(f"{what}: {e}") from None
    except (IndexError, KeyError, TypeError, ValueError, struct.error, UnicodeError,
            RecursionError) as e:
        raise UnsafePickleError(f"{what} is damaged or not a pickle: {type(e).__name__}: {e}") from None
    _check_plain(result, what)
    return result


def _run(data: bytes) -> Any:  # noqa: C901 - one branch per opcode reads best
    unpack = struct.unpack_from
    stack: list[Any] = []
    marks: list[list[Any]] = []
    memo: dict[int, Any] = {}
    pos = 0
    n = len(data)

    def take(k: int) -> bytes:
        nonlocal pos
        if pos + k > n:
            raise UnsafePickleError(f"truncated at byte {pos}: {k} more bytes expected")
        out = data[pos:pos + k]
        pos += k
        return out

    def pop_mark() -> list[Any]:
        nonlocal stack
        if not marks:
            raise UnsafePickleError(f"no MARK before byte {pos}")
        items, stack = stack, marks.pop()
        return items

    while True:
        at = pos
        op = take(1)[0]
        if at == 0 and op != 0x80:
            raise UnsafePickleError("no protocol header (expected a protocol-2 pickle)")
        if op == 0x80:  # PROTO
            proto = take(1)[0]
            if at != 0 or proto > 2:
                raise UnsafePickleError(f"protocol {proto} at byte {at}: expected protocol 2")
        elif op == 0x2E:  # STOP
            if len(stack) != 1 or marks:
                raise UnsafePickleError(f"STOP at byte {at} with an unbalanced stack")
            return stack[0]
        elif op == 0x28:  # MARK
            marks.append(stack)
            stack = []
        elif op == 0x30:  # POP
            stack.pop()
        elif op == 0x4B:  # BININT1
            stack.append(take(1)[0])
        elif op == 0x4D:  # BININT2
            stack.append(unpack("<H", take(2))[0])
        elif op == 0x4A:  # BININT
            stack.append(unpack("<i", take(4))[0])
        elif op == 0x8A:  # LONG1
            stack.append(int.from_bytes(take(take(1)[0]), "little", signed=True))
        elif op == 0x47:  # BINFLOAT
            stack.append(unpack(">d", take(8))[0])
        elif op == 0x4E:  # NONE
            stack.append(None)
        elif op == 0x88:  # NEWTRUE
            stack.append(True)
        elif op == 0x89:  # NEWFALSE
            stack.append(False)
        elif op == 0x55:  # SHORT_BINSTRING (a Python 2 str)
            stack.append(take(take(1)[0]).decode("latin-1"))
        elif op == 0x54:  # BINSTRING
            (ln,) = unpack("<i", take(4))
            if ln < 0:
                raise UnsafePickleError(f"negative string length at byte {at}")
            stack.append(take(ln).decode("latin-1"))
        elif op == 0x58:  # BINUNICODE
            (ln,) = unpack("<I", take(4))
            stack.append(take(ln).decode("utf-8", "surrogatepass"))
        elif op == 0x29:  # EMPTY_TUPLE
            stack.append(())
        elif op == 0x74:  # TUPLE
            items = pop_mark()
            stack.append(tuple(items))
        elif op in (0x85, 0x86, 0x87):  # TUPLE1..3
            k = op - 0x84
            if len(stack) < k:
                raise UnsafePickleError(f"TUPLE{k} on a short stack at byte {at}")
            items = tuple(stack[-k:])
            del stack[-k:]
            stack.append(items)
        elif op == 0x5D:  # EMPTY_LIST
            stack.append([])
        elif op in (0x61, 0x65):  # APPEND, APPENDS
            items = [stack.pop()] if op == 0x61 else pop_mark()
            if type(stack[-1]) is not list:
                raise UnsafePickleError(f"APPEND at byte {at} on {type(stack[-1]).__name__}")
            stack[-1].extend(items)
        elif op == 0x7D:  # EMPTY_DICT
            stack.append({})
        elif op in (0x73, 0x75):  # SETITEM, SETITEMS
            if op == 0x73:
                v = stack.pop()
                items = [stack.pop(), v]
            else:
                items = pop_mark()
            if type(stack[-1]) is not dict or len(items) % 2:
                raise UnsafePickleError(f"SETITEM at byte {at} on {type(stack[-1]).__name__}")
            for i in range(0, len(items), 2):
                stack[-1][items[i]] = items[i + 1]
        elif op == 0x71:  # BINPUT
            memo[take(1)[0]] = stack[-1]
        elif op == 0x72:  # LONG_BINPUT
            memo[unpack("<I", take(4))[0]] = stack[-1]
        elif op in (0x68, 0x6A):  # BINGET, LONG_BINGET
            idx = take(1)[0] if op == 0x68 else unpack("<I", take(4))[0]
            if idx not in memo:
                raise UnsafePickleError(f"GET of an unset memo slot {idx} at byte {at}")
            stack.append(memo[idx])
        elif op == 0x63:  # GLOBAL
            end = data.find(b"\n", pos, pos + 128)
            end2 = data.find(b"\n", end + 1, end + 129) if end >= 0 else -1
            if end2 < 0:
                raise UnsafePickleError(f"malformed GLOBAL at byte {at}")
            key = (data[pos:end].decode("latin-1"), data[end + 1:end2].decode("latin-1"))
            pos = end2 + 1
            if key not in _GLOBALS:
                raise UnsafePickleError(
                    f"refused global {key[0]}.{key[1]} at byte {at}: a dataset file of arrays "
                    "never needs it (nothing was imported or run)")
            stack.append(_GLOBALS[key])
        elif op == 0x52:  # REDUCE
            args = stack.pop()
            stack[-1] = _reduce(stack[-1], args, at)
        elif op == 0x62:  # BUILD
            state = stack.pop()
            old = stack[-1]
            new = _build(old, state, at)
            stack[-1] = new
            for k, v in memo.items():  # the memo may hold the pending object (BINPUT before BUILD)
                if v is old:
                    memo[k] = new
        else:
            raise UnsafePickleError(
                f"refused opcode 0x{op:02x} at byte {at}: a pickled dict of arrays never needs it")


def _check_plain(result: Any, what: str) -> None:
    """No interpreter object (a global, an unbuilt array) may escape into the result."""
    todo = [result]
    seen: set[int] = set()
    while todo:
        obj = todo.pop()
        if isinstance(obj, (_Global, _PendingArray, _PendingDtype)):
            raise UnsafePickleError(f"{what} holds {obj!r} as a value, not data")
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
