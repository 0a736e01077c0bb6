"""``python -m bench``: run the benchmark (see ``python -m bench --help``)."""

import sys

from .runner import main

sys.exit(main())
