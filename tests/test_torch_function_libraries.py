"""``__torch_function__`` as libraries use it, each pattern in a small class written here (no
library needed), run on ember and on PyTorch (when installed) and compared.

The patterns come from running a Gaussian-process library's test suite (linear operators: plain
classes, not Tensor subclasses, that key a table of handlers on the ``func`` they are handed and
implement the reflected operators) under ``ember run`` (docs/running.md).
"""

from __future__ import annotations

from typing import Any

import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

ENGINES = [ember] + ([torch] if torch is not None else [])
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
by_name = pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)

BINARY = ("add radd iadd sub rsub isub mul rmul imul truediv itruediv mod imod matmul rand ror "
          "rxor eq ne lt le gt ge").split()


def _handed_over(m: Any) -> list[tuple[str, str, bool, list[str]]]:
    """What a class that declines everything is handed for each of Tensor's binary operators,
    and what the operator then returns."""
    seen: list[Any] = []

    class Declines:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            seen.append((func, [type(a).__name__ for a in args]))
            return NotImplemented

    out = []
    for op in BINARY:
        seen.clear()
        t = m.ones(2, 2)
        ret = getattr(t, f"__{op}__")(Declines())
        func, types = seen[0]
        # the method the operator stands for (t + o hands over Tensor.add), by identity
        public = getattr(m.Tensor, func.__name__, None) is func
        out.append((op, func.__name__, public, types, ret is NotImplemented))
    return out


@needs_torch
def test_an_operator_hands_over_the_method_it_stands_for() -> None:
    got, want = _handed_over(ember), _handed_over(torch)
    assert got == want
    assert ("matmul", "matmul", True, ["Tensor", "Declines"], True) in got


class _Op:
    """A linear operator in miniature: a plain class holding a matrix, with a handler table keyed
    on the functions it is handed (for a Tensor first argument: the 'second argument' table)."""

    m: Any = None
    first: dict[Any, str] = {}
    second: dict[Any, str] = {}

    def __init__(self, mat: Any) -> None:
        self.mat = mat

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        table = cls.first if isinstance(args[0], cls) else cls.second
        if func not in table:
            if func.__name__ in ("eq", "ne"):
                return NotImplemented
            raise NotImplementedError(f"torch.{func.__name__} is not implemented")
        name = table[func]
        if isinstance(args[0], cls):
            return getattr(args[0], name)(*args[1:], **(kwargs or {}))
        return getattr(args[1], name)(args[0], *args[2:], **(kwargs or {}))

    def matmul(self, x: Any) -> Any:
        return self.mat @ x

    def rmatmul(self, x: Any) -> Any:
        return x @ self.mat

    def add(self, x: Any) -> Any:
        return _Op(self.mat + x)

    def mul(self, x: Any) -> Any:
        return _Op(self.mat * x)

    def __rmatmul__(self, x: Any) -> Any:
        return ("reflected", self.rmatmul(x))

    def __rsub__(self, x: Any) -> Any:
        return _Op(x - self.mat)

    def __radd__(self, x: Any) -> Any:
        return ("reflected", self.add(x))


def _linear_operator_program(m: Any) -> list[Any]:
    class Op(_Op):
        first = {m.matmul: "matmul", m.Tensor.matmul: "matmul", m.add: "add"}
        second = {m.matmul: "rmatmul", m.Tensor.matmul: "rmatmul", m.Tensor.add: "add",
                  m.Tensor.mul: "mul", m.Tensor.sub: "__rsub__"}

    a = m.tensor([[1.0, 2.0], [3.0, 4.0]])
    op = Op(m.tensor([[0.0, 1.0], [1.0, 0.0]]))
    out = [m.matmul(a, op), a.matmul(op), a @ op, a + op, a * op, m.add(op, a), a - op]
    # torch.sub with a Tensor first is not in the table: the handler's error reaches the caller
    try:
        m.sub(a, op)
    except NotImplementedError as e:
        out.append(str(e))
    out.append(a == op)  # every class declines ==: Python's identity answer
    out.append(a != op)

    def flat(x: Any) -> Any:
        if isinstance(x, tuple):
            return tuple(flat(y) for y in x)
        if isinstance(x, _Op):
            return ("Op", x.mat.tolist())
        return x.tolist() if isinstance(x, m.Tensor) else x

    return [flat(x) for x in out]


@needs_torch
def test_a_linear_operator_class_computes_as_on_torch() -> None:
    got = _linear_operator_program(ember)
    assert got == _linear_operator_program(torch)
    assert got[3][0] == "Op"  # t + o: the table's add, handed Tensor.add
    assert got[7:] == ["torch.sub is not implemented", False, True]


@by_name
def test_a_type_error_in_the_handler_gives_the_reflected_operator(m: Any) -> None:
    class Raises:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            raise TypeError("declined")

        def __radd__(self, o: Any) -> str:
            return "radd"

    t = m.ones(2)
    assert t + Raises() == "radd"
    with pytest.raises(TypeError, match="declined"):
        t.add(Raises())  # a method (not an operator) lets the TypeError through
    with pytest.raises(TypeError):
        _ = m.ones(2) < Raises()  # no reflected operator either: Python's TypeError


@by_name
def test_a_subclass_through_the_operators_keeps_its_class(m: Any) -> None:
    log: list[str] = []

    class S(m.Tensor):
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    s = m.ones(2).as_subclass(S)
    t = m.ones(2)
    outs = [t + s, s + 1, 2 * s, t @ s, t == s, 1 - s]
    assert [type(o).__name__ for o in outs] == ["S"] * 6
    assert log[:4] == ["add", "add", "mul", "matmul"]  # (s == t: PyTorch hands over __eq__)


# ---------------------------------------------------------------------------------------------
# beyond dispatch: what the library's sparse interpolation reads (``if idx.storage():``)


def _storage_program(m: Any) -> list[Any]:
    import warnings

    t = m.arange(6.0).reshape(2, 3)
    v = t[1:, 1:]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = v.storage()
    u = v.untyped_storage()
    out = [type(s).__name__, len(s), s.size(), s.nbytes(), s.element_size(), str(s.dtype),
           str(s.device), s.data_ptr() == t.data_ptr(), s.tolist(), s[4], bool(s),
           type(u).__name__, len(u), u.nbytes(), u.element_size(), u.data_ptr() == t.data_ptr(),
           u[6:8].tolist() if hasattr(u[6:8], "tolist") else u[6:8], u.tolist()[4:8],
           bool(m.empty(0).untyped_storage()), bool(m.ones(3).nonzero().storage()),
           m.is_storage(s), m.is_storage(u), m.is_storage(t), type(s.untyped()).__name__,
           t.T.storage().size(), t.reshape(-1)[::2].storage().size(), len(w),
           repr(m.arange(2).storage())]
    s[0] = 7.0
    out.append(t.tolist())
    return out


@needs_torch
@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storages_as_on_torch() -> None:
    assert _storage_program(ember) == _storage_program(torch)


@needs_torch
def test_shapes_that_do_not_broadcast_raise_runtime_error_in_no_grad_ops() -> None:
    # a Gaussian-process prior's log_prob checks that a bad shape raises RuntimeError
    for name in ("eq", "lt", "logical_and", "bitwise_and", "isclose", "heaviside"):
        for m in (ember, torch):
            a, b = m.tensor([1, 0]), m.tensor([1, 0, 1])
            with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match"):
                getattr(m, name)(a, b)


@by_name
def test_lkj_cholesky_checks_dim_below_two_first(m: Any) -> None:
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        m.distributions.LKJCholesky(1.5, 1.0)
    with pytest.raises(TypeError):
        m.distributions.LKJCholesky(2.0, 1.0)
