"""Where ember's signatures still differ from PyTorch 2.13's: qualified name -> the reason.

``tests/test_signatures.py`` fails on a mismatch missing from this table and on an entry that
no longer mismatches, so the table can only shrink. Edit it by targeted edits (several helpers
share it); ``python tests/test_signatures.py`` prints the current mismatches.
"""

from __future__ import annotations

GAPS: dict[str, str] = {
    'torch.addmm': "missing out_dtype= (PyTorch's CPU build raises NotImplementedError for it; Tensor.addmm is the same function and its schema has no out_dtype)",
    'torch.baddbmm': "missing out_dtype= (PyTorch's CPU build raises NotImplementedError for it; Tensor.baddbmm is the same function and its schema has no out_dtype)",
    'torch.bmm': "missing out_dtype= (PyTorch's CPU build raises NotImplementedError for it; Tensor.bmm is the same function and its schema has no out_dtype)",
    'torch.linalg.lstsq': "rcond: ember solves through the SVD pseudo-inverse (rtol=rcond); PyTorch's default CPU driver gelsy decides the rank by QR with column pivoting, so rank-deficient results differ",
    'torch.mm': "missing out_dtype= (PyTorch's CPU build raises NotImplementedError for it; Tensor.mm is the same function and its schema has no out_dtype)",
    'torch.sparse_csr_tensor': "extra check_invariants=: PyTorch's documented keyword (its docstring lists it), which its argument parser's signature does not show",
    'torch.sparse_csc_tensor': "extra check_invariants=: PyTorch's documented keyword (its docstring lists it), which its argument parser's signature does not show",
    'torch.sparse_bsr_tensor': "extra check_invariants=: PyTorch's documented keyword (its docstring lists it), which its argument parser's signature does not show",
    'torch.sparse_bsc_tensor': "extra check_invariants=: PyTorch's documented keyword (its docstring lists it), which its argument parser's signature does not show",
    'torch.sparse_compressed_tensor': "extra check_invariants=: PyTorch's documented keyword (its docstring lists it), which its argument parser's signature does not show",
    'torch.rsub': "alpha should be positional in PyTorch's number overload rsub(input, Scalar other, Scalar alpha) but is keyword-only for a tensor other: one Python signature cannot say both",
}
