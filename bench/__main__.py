"""``python -m bench``: run the benchmark (see ``python -m bench --help``); ``python -m bench
--memory``: the peak-memory table instead (``bench/memory.py``, ``python -m bench --memory -h``);
``python -m bench --memory --sweep``: the op table's peaks (``bench/memory_sweep.py``)."""

import sys

if "--memory" in sys.argv[1:] and "--sweep" in sys.argv[1:]:
    from .memory_sweep import main

    sys.exit(main([a for a in sys.argv[1:] if a not in ("--memory", "--sweep")]))

if "--memory" in sys.argv[1:]:
    from .memory import main

    sys.exit(main([a for a in sys.argv[1:] if a != "--memory"]))

from .runner import main

sys.exit(main())
