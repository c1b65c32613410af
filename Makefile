# Two commands on a fresh machine: `make bench` (main job) and `make test`.
PY := .venv/bin/python

.PHONY: setup setup-test bench test test-gpu check

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test

## Main job: set up, then score the eager baseline over the suite (smoke tier on CPU, full tier on a GPU).
bench: setup
	$(PY) -m aka_tui bench --baseline eager

## Set up with test dependencies and run the test suite (GPU tests skip without a GPU).
test: setup-test
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q

## On a GPU machine with torch/triton already installed (no venv): the GPU-marked tests.
test-gpu:
	PYTHONPATH=. python3 -m pytest -q -m gpu tests
