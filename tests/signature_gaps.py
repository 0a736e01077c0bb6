"""Where ember's signatures still differ from PyTorch 2.13's: qualified name -> the reason.

``tests/test_signatures.py`` fails on a mismatch missing from this table and on an entry that
no longer mismatches, so the table can only shrink. Edit it by targeted edits (several helpers
share it); ``python tests/test_signatures.py`` prints the current mismatches.
"""

from __future__ import annotations

GAPS: dict[str, str] = {
    'Tensor.broadcast_to': 'size should be positional; size has default None, PyTorch requires it',
    'Tensor.flip': 'dims should be positional; dims has default None, PyTorch requires it',
    'Tensor.new_empty': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'Tensor.new_ones': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'Tensor.new_zeros': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'Tensor.permute': 'dims should be positional; dims has default None, PyTorch requires it',
    'Tensor.reshape': 'shape should be positional; shape has default None, PyTorch requires it',
    'Tensor.sum_to_size': 'size should be positional; size has default None, PyTorch requires it',
    'Tensor.tile': 'dims should be positional; dims has default None, PyTorch requires it',
    'Tensor.view': 'size should be positional; dtype should be positional',
    'torch.addmm': 'missing out_dtype=',
    'torch.arange': 'end has default None, PyTorch requires it',
    'torch.baddbmm': 'missing out_dtype=',
    'torch.bmm': 'missing out_dtype=',
    'torch.compile': 'catch-all **kwargs; missing recompile_limit=; missing isolate_recompiles=; missing shapes_spec=',
    'torch.empty': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'torch.flip': '*order: PyTorch takes no varargs; dims should be positional; dims has default None, PyTorch requires it',
    'torch.linalg.lstsq': 'call (input, b, rcond): values differ; call (input, b, rcond): values differ',
    'torch.mm': 'missing out_dtype=',
    'torch.ones': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'torch.permute': '*order: PyTorch takes no varargs; dims should be positional; dims has default None, PyTorch requires it',
    'torch.rand': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'torch.randint': 'high has default None, PyTorch requires it; size has default None, PyTorch requires it',
    'torch.randint_like': 'high has default None, PyTorch requires it',
    'torch.randn': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
    'torch.repeat_interleave': 'repeats has default None, PyTorch requires it; input is required, PyTorch has a default',
    'torch.reshape': '*size: PyTorch takes no varargs; shape should be positional; shape has default None, PyTorch requires it',
    'torch.result_type': '*operands: PyTorch takes no varargs; missing tensor=; missing other=; missing scalar=; missing scalar1=; missing scalar2=; call (tensor, other) rai...',
    'torch.rsub': 'alpha should be positional',
    'torch.tile': '*reps: PyTorch takes no varargs; dims should be positional; dims has default None, PyTorch requires it',
    'torch.zeros': 'catch-all **kwargs; size= not accepted as a keyword (*size)',
}
