"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and the single-step ``RNNCell``, ``LSTMCell``,
``GRUCell``.

Parameter names, shapes, gate orders and initialisation are PyTorch's, so state dicts move
between the two. The computation lives in ``ember/ops/nn/recurrent.py``: each layer and direction is one
GEMM for the input projection of every time step plus one fused op that loops over time.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ..._tensor import Tensor
from ...ops import creation as _creation
from ...ops.nn import recurrent as _rnn
from .. import init
from ..parameter import Parameter
from ..utils.rnn_packing import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _permute(hx: Tensor, permutation: Tensor | None) -> Tensor:
    """Reorder the batch dim (dim 1) of a state by ``permutation`` (None: unchanged)."""
    if permutation is None:
        return hx
    return hx.index_select(1, permutation)


class RNNBase(Module):
    """The shared machinery of ``RNN``, ``LSTM`` and ``GRU`` (see those for the arguments).

    Parameters per layer ``k`` and direction (suffix ``_reverse`` for the backward one):
    ``weight_ih_l{k}`` (gates * hidden_size, layer input size), ``weight_hh_l{k}``
    (gates * hidden_size, hidden_size or proj_size), ``bias_ih_l{k}``, ``bias_hh_l{k}``
    (gates * hidden_size) and, for an LSTM with ``proj_size > 0``, ``weight_hr_l{k}``
    (proj_size, hidden_size). All are drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                f"element being zeroed (got {dropout!r})"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=3,
            )
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError(
                f"proj_size has to be smaller than hidden_size (got proj_size={proj_size}, "
                f"hidden_size={hidden_size})"
            )
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        names: list[str] = []
        groups: list[list[str]] = []
        kw = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * dirs
            for direction in range(dirs):
                sfx = "_reverse" if direction == 1 else ""
                shapes = [(f"weight_ih_l{layer}{sfx}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{sfx}", (gate_size, real_hidden))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{sfx}", (gate_size,)),
                               (f"bias_hh_l{layer}{sfx}", (gate_size,))]
                if proj_size > 0:
                    shapes += [(f"weight_hr_l{layer}{sfx}", (proj_size, hidden_size))]
                for name, shape in shapes:
                    setattr(self, name, Parameter(_creation.empty(shape, **kw)))
                names.extend(n for n, _ in shapes)
                groups.append([n for n, _ in shapes])
        self._flat_weights_names = names
        self._all_weights = groups
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Parameter]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, in PyTorch's order."""
        return [[getattr(self, n) for n in group] for group in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch packs weights for cuDNN here; ember needs no packing)."""

    def reset_parameters(self) -> None:
        """Draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- argument checks (PyTorch's messages) ----------------------------------------------
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """Raise PyTorch's errors for a wrong input dtype, rank or feature size."""
        wdt = getattr(self, self._flat_weights_names[0]).dtype
        if input.dtype != wdt:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({wdt}). Convert "
                f"input: input.to({wdt}), or convert model: model.to({input.dtype})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{input.size(-1)} (input of shape {tuple(input.shape)})"
            )

    def get_expected_hidden_size(self, input: Tensor,
                                 batch_sizes: Tensor | None) -> tuple[int, int, int]:
        """(num_layers * num_directions, batch, proj_size or hidden_size)."""
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * dirs, batch, size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """Raise PyTorch's RuntimeError when ``hx`` is not ``expected_hidden_size``."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))
        if hx.dtype != getattr(self, self._flat_weights_names[0]).dtype:
            raise RuntimeError(
                f"hidden state dtype {hx.dtype} does not match the input/weight dtype "
                f"{getattr(self, self._flat_weights_names[0]).dtype}; convert it, e.g. "
                "hx.to(input.dtype)"
            )

    def check_forward_args(self, input: Tensor, hidden: Tensor,
                           batch_sizes: Tensor | None) -> None:
        """Check the input and the initial hidden state together."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        """Reorder a state's batch dim by ``permutation`` (packed, unsorted batches)."""
        return _permute(hx, permutation)

    # -- forward ---------------------------------------------------------------------------
    def _zeros(self, input: Tensor, batch: int, size: int) -> Tensor:
        dirs = 2 if self.bidirectional else 1
        return _creation.zeros(self.num_layers * dirs, batch, size, dtype=input.dtype,
                               device=input.device)

    def _run(self, input: Tensor, batch_sizes: Tensor | None, hx: tuple) -> tuple:
        mode = self.mode
        args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                self.bidirectional)
        kind = {"LSTM": "lstm", "GRU": "gru"}.get(mode, "rnn")
        return _rnn._run(kind, mode == "RNN_RELU", input, batch_sizes, hx, *args,
                         self.batch_first and batch_sizes is None)

    def _forward_single_state(self, name: str, input: Any, hx: Tensor | None) -> tuple:
        """forward of RNN and GRU (one state tensor)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_idx, unsorted_idx = input
            if hx is None:
                hx = self._zeros(data, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_idx)
            self.check_forward_args(data, hx, batch_sizes)
            out, h_n = self._run(data, batch_sizes, (hx,))
            return (PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx),
                    self.permute_hidden(h_n, unsorted_idx))
        if input.dim() not in (2, 3):
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                f"{' tensor' if name == 'RNN' else ''} instead"
            )
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        x = input if batched else input.unsqueeze(batch_dim)
        if not batched:
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(
                        f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                        "tensor"
                    )
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(
                f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
            )
        if hx is None:
            batch = x.size(0) if self.batch_first else x.size(1)
            hx = self._zeros(x, batch, self.hidden_size)
        self.check_forward_args(x, hx, None)
        out, h_n = self._run(x, None, (hx,))
        if not batched:
            out = out.squeeze(batch_dim)
            h_n = h_n.squeeze(1)
        return out, h_n


class RNN(RNNBase):
    """A multi-layer Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``

    Args:
        input_size: features per time step of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked layers; layer k > 0 reads layer k-1's output.
        nonlinearity: ``'tanh'`` or ``'relu'``.
        bias: learn ``bias_ih`` and ``bias_hh``.
        batch_first: input and output are (batch, seq, feature) instead of (seq, batch, feature).
        dropout: dropout on each layer's output except the last, in training mode only.
        bidirectional: also run each layer backwards in time and concatenate the two outputs.

    Shape: input (L, N, H_in) (``(N, L, H_in)`` batch first), (L, H_in) unbatched, or a
    ``PackedSequence``; h_0 (D * num_layers, N, H_out) (default zeros). Returns (output, h_n):
    output (L, N, D * H_out), h_n (D * num_layers, N, H_out).

    Example::

        >>> rnn = nn.RNN(10, 20, 2)
        >>> out, h = rnn(torch.randn(5, 3, 10))
        >>> out.shape, h.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """Run the network; returns (output, h_n)."""
        return self._forward_single_state("RNN", input, hx)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit (PyTorch's gate order r, z, n):

    r = sig(W_ir x + b_ir + W_hr h + b_hr)          z = sig(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))          h' = (1 - z) * n + z * h

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)``: arguments and shapes as ``nn.RNN``.

    Example::

        >>> gru = nn.GRU(10, 20, batch_first=True)
        >>> out, h = gru(torch.randn(3, 5, 10))
        >>> out.shape
        torch.Size([3, 5, 20])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """Run the network; returns (output, h_n)."""
        return self._forward_single_state("GRU", input, hx)


class LSTM(RNNBase):
    """A multi-layer long short-term memory network (PyTorch's gate order i, f, g, o):

    (i, f, g, o) = (sig, sig, tanh, sig)(x W_ih^T + b_ih + h W_hh^T + b_hh)
    c' = f * c + i * g          h' = o * tanh(c')   (times W_hr^T when proj_size > 0)

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)``: arguments as ``nn.RNN``, plus
    ``proj_size`` (> 0: project h to that size with ``weight_hr_l{k}``).

    Shape: input as ``nn.RNN``; hx = (h_0, c_0) with h_0 (D * num_layers, N, H_out) and c_0
    (D * num_layers, N, hidden_size) (default zeros). Returns (output, (h_n, c_n)).

    Example::

        >>> lstm = nn.LSTM(10, 20, 2)
        >>> out, (h, c) = lstm(torch.randn(5, 3, 10))
        >>> out.shape, c.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor,
                               batch_sizes: Tensor | None) -> tuple[int, int, int]:
        """(num_layers * num_directions, batch, hidden_size)."""
        size = self.get_expected_hidden_size(input, batch_sizes)
        return (size[0], size[1], self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: Any,  # type: ignore[override]
                           batch_sizes: Tensor | None) -> None:
        """Check the input and both initial states."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:  # type: ignore[override]
        """Reorder both states' batch dim by ``permutation``."""
        return (_permute(hx[0], permutation), _permute(hx[1], permutation))

    def _check_pair(self, hx: Any) -> tuple:
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise RuntimeError(
                f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}"
                + (f" of length {len(hx)}" if isinstance(hx, (tuple, list)) else "")
            )
        return tuple(hx)

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        """Run the network; returns (output, (h_n, c_n))."""
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_idx, unsorted_idx = input
            batch = int(batch_sizes[0])
            if hx is None:
                hx = (self._zeros(data, batch, real_hidden),
                      self._zeros(data, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(self._check_pair(hx), sorted_idx)
            self.check_forward_args(data, hx, batch_sizes)
            out, h_n, c_n = self._run(data, batch_sizes, hx)
            return (PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx),
                    self.permute_hidden((h_n, c_n), unsorted_idx))
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        x = input if batched else input.unsqueeze(batch_dim)
        batch = x.size(0) if self.batch_first else x.size(1)
        if hx is None:
            hx = (self._zeros(x, batch, real_hidden), self._zeros(x, batch, self.hidden_size))
        else:
            hx = self._check_pair(hx)
            want = 3 if batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
            if not batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(x, hx, None)
        out, h_n, c_n = self._run(x, None, hx)
        if not batched:
            out = out.squeeze(batch_dim)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return out, (h_n, c_n)


# ---------------------------------------------------------------------------------------------
# cells


class RNNCellBase(Module):
    """The shared parameters of the cells: ``weight_ih`` (chunks * hidden, input_size),
    ``weight_hh`` (chunks * hidden, hidden), ``bias_ih`` and ``bias_hh`` (chunks * hidden), all
    drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _batch(self, name: str, input: Tensor, states: list, what: str) -> tuple[bool, Tensor]:
        """Check ranks; unbatched (1-D) input gets a batch dim of 1."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for k, s in enumerate(states):
            if s is not None and s.dim() not in (1, 2):
                label = "hidden" if what == "hidden" else f"hx[{k}]"
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {s.dim()}D instead")
        batched = input.dim() == 2
        return batched, input if batched else input.unsqueeze(0)

    def _zero_state(self, input: Tensor) -> Tensor:
        return _creation.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                               device=input.device)


class RNNCell(RNNCellBase):
    """One Elman step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    Args: input_size, hidden_size, bias=True, nonlinearity='tanh'.
    Shape: input (N, H_in) or (H_in); hx (N, H_out) or (H_out) (default zeros) -> h'.

    Example::

        >>> cell = nn.RNNCell(10, 20)
        >>> cell(torch.randn(3, 10)).shape
        torch.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step; returns h'."""
        batched, x = self._batch("RNNCell", input, [hx], "hidden")
        if hx is None:
            hx = self._zero_state(x)
        elif not batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            fn = _rnn.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            fn = _rnn.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = fn(x, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o): c' = f * c + i * g, h' = o * tanh(c').

    Args: input_size, hidden_size, bias=True.
    Shape: input (N, H_in) or (H_in); hx = (h, c), each (N, H) or (H) (default zeros) ->
    (h', c').

    Example::

        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(torch.randn(3, 10))
        >>> h.shape
        torch.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Tensor]:
        """One step; returns (h', c')."""
        batched, x = self._batch("LSTMCell", input, list(hx) if hx is not None else [], "hx")
        if hx is None:
            zeros = self._zero_state(x)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _rnn.lstm_cell(x, tuple(hx), self.weight_ih, self.weight_hh, self.bias_ih,
                              self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n): n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h.

    Args: input_size, hidden_size, bias=True.
    Shape: input (N, H_in) or (H_in); hx (N, H_out) or (H_out) (default zeros) -> h'.

    Example::

        >>> cell = nn.GRUCell(10, 20)
        >>> cell(torch.randn(3, 10)).shape
        torch.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step; returns h'."""
        batched, x = self._batch("GRUCell", input, [hx], "hidden")
        if hx is None:
            hx = self._zero_state(x)
        elif not batched:
            hx = hx.unsqueeze(0)
        ret = _rnn.gru_cell(x, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if batched else ret.squeeze(0)
