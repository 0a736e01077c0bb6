"""Where ember's signatures still differ from PyTorch 2.13's: qualified name -> the reason.

``tests/test_signatures.py`` fails on a mismatch missing from this table and on an entry that
no longer mismatches, so the table can only shrink. Edit it by targeted edits (several helpers
share it); ``python tests/test_signatures.py`` prints the current mismatches.
"""

from __future__ import annotations

GAPS: dict[str, str] = {
    'torch.addmm': 'missing out_dtype=',
    'torch.baddbmm': 'missing out_dtype=',
    'torch.bmm': 'missing out_dtype=',
    'torch.compile': 'catch-all **kwargs; missing recompile_limit=; missing isolate_recompiles=; missing shapes_spec=',
    'torch.linalg.lstsq': 'call (input, b, rcond): values differ; call (input, b, rcond): values differ',
    'torch.mm': 'missing out_dtype=',
    'torch.repeat_interleave': 'repeat_interleave(input=t) alone is read as the one-tensor overload (repeats=t); PyTorch refuses it: positional and keyword cannot be told apart in a Python signature with x= twins',
    'torch.result_type': '*operands: PyTorch takes no varargs; missing tensor=; missing other=; missing scalar=; missing scalar1=; missing scalar2=; call (tensor, other) rai...',
    'torch.rsub': 'alpha should be positional',
}
