"""Run a program that seeds nothing, after ``torch.manual_seed(SEED)``, so that both engines
draw the same numbers (docs/libraries/lightning.md, skorch.md):

    python -m ember run examples/libraries/seeded.py 0 PROGRAM.py [ARGS...]
    python examples/libraries/seeded.py 0 PROGRAM.py [ARGS...]          # on PyTorch
"""

import runpy
import sys

import torch

torch.manual_seed(int(sys.argv[1]))
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
