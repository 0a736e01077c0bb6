"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. for large vocabularies.

The ``cutoffs`` split the classes by frequency: the head scores the ``cutoffs[0]`` most
frequent classes plus one logit per tail cluster; tail cluster i scores its own classes through
a two-layer projection of size ``in_features // div_value ** (i + 1)``. A class's
log-probability is its head log-probability (shortlist) or its cluster's head log-probability
plus its log-probability inside the cluster.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from ... import _dtype
from ..._tensor import Tensor
from ...ops import creation as _creation
from ...ops.nn.activation import log_softmax
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: ``forward(input, target)`` returns ``(output, loss)`` with the target
    log-probabilities and their negated mean; ``log_prob(input)`` gives all classes' and
    ``predict(input)`` the most likely class. Parameter names and shapes are PyTorch's."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for seq in self.tail:
            for lin in seq:
                lin.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> Any:
        targ_dim = target.dim()
        if targ_dim == 1:
            if input.shape[0] != target.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {list(input.shape)}")
        elif targ_dim == 0:
            if input.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {list(input.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        unbatched = targ_dim == 0
        if unbatched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)  # noqa: A001
        n = input.shape[0]
        t = target.detach().cpu().numpy()
        if n and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{int(t.min())}, {int(t.max())}] were found. ")
        output = _creation.zeros(n, dtype=input.dtype, device=input.device)
        gather = t.copy()
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            rows_np = ((t >= low) & (t < high)).nonzero()[0]
            if rows_np.size == 0:
                continue
            rows = _creation.tensor(rows_np, dtype=_dtype.int64, device=input.device)
            rel = _creation.tensor(t[rows_np] - low, dtype=_dtype.int64, device=input.device)
            gather[rows_np] = self.shortlist_size + i - 1
            logp = log_softmax(self.tail[i - 1](input[rows]), 1)
            local = logp.gather(1, rel.unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
        head_logp = log_softmax(self.head(input), 1)
        idx = _creation.tensor(gather, dtype=_dtype.int64, device=input.device).unsqueeze(1)
        output = output + head_logp.gather(1, idx).squeeze(1)
        loss = (-output).mean()
        if unbatched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        from ...ops.joining import cat

        head_logp = log_softmax(head_output, 1)
        parts = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = log_softmax(self.tail[i](input), 1)
            parts.append(cluster + head_logp[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` classes, (N, n_classes) or (n_classes,)."""
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        out = self._full_log_prob(x, self.head(x))
        return out.squeeze(0) if unbatched else out

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each input."""
        return self.log_prob(input).argmax(-1)
