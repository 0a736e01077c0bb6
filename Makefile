# ember's make targets. `make bench` runs the benchmark side by side with PyTorch and writes the
# results into docs/benchmarks.md; `make bench-quick` is a smoke run (few steps, one run each).
PYTHON ?= .venv/bin/python

.PHONY: bench bench-quick test

bench:
	$(PYTHON) -m bench --write-doc

bench-quick:
	$(PYTHON) -m bench --quick

test:
	scripts/test.sh
