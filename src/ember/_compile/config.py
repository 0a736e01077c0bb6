"""Switches for ``ember.compile`` (PyTorch keeps its own in ``torch._inductor.config``).

``native``: generate C for a compiled region's elementwise chains (cgen.py, cc.py). False keeps
the NumPy replay: ``EMBER_COMPILE_NATIVE=0`` or ``EMBER_PURE_PYTHON=1`` in the environment sets
it so at import; tests flip it to compare the two. A program compiled while it was True keeps its
generated code.
"""

from __future__ import annotations

import os

native: bool = (os.environ.get("EMBER_COMPILE_NATIVE", "1") not in ("0", "")
                and os.environ.get("EMBER_PURE_PYTHON", "") in ("", "0"))
