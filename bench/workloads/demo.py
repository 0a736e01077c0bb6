"""The ``ember demo`` training as a whole process: ember/demo/digits_cnn.py (plain PyTorch code)
with its arguments. Under ``ember run`` this is what ``ember demo`` does; under python it is the
same file on PyTorch. A step is one training epoch (the demo's own timing of its training loop)."""

import importlib.util
import io
import re
import sys
from pathlib import Path

import torch
from _common import StepTimer, parse_args, report

args = parse_args(__doc__, steps=3, warmup=0, quick_steps=1, quick_warmup=0)
DEMO = Path(__file__).resolve().parents[2] / "src" / "ember" / "demo" / "digits_cnn.py"
spec = importlib.util.spec_from_file_location("digits_cnn", DEMO)
digits_cnn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(digits_cnn)  # by path: importing the ember package would cost real torch


class Tee(io.TextIOBase):
    """Passes the demo's output through and keeps a copy to read its training time from."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, s):
        self.text.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()


out_dir = Path(".bench") / ("demo-ember" if hasattr(torch, "__ember_version__") else "demo-torch")
tee = Tee(sys.stdout)
sys.stdout = tee
try:
    history = digits_cnn.main(["--epochs", str(args.warmup + args.steps), "--seed", str(args.seed),
                               "--device", "cpu", "--out", str(out_dir)])
finally:
    sys.stdout = tee.stream
m = re.search(r"trained (\d+) epochs in ([0-9.]+) s", "".join(tee.text))
epochs, seconds = int(m.group(1)), float(m.group(2))
timer = StepTimer()
timer.durations = [seconds / epochs] * epochs  # the demo reports its total training time only
report("demo", torch, timer, args.warmup, unit="epoch", train_s=seconds,
       test_accuracy=history["test_acc"][-1])
