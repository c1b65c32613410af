# Two commands on a fresh machine: `make run` (main job: the app) and `make test`.
PY := .venv/bin/python
BIN := $(dir $(PY))

.PHONY: setup setup-test run bench test test-fast test-gpu check lint compile-check-gpu-triton

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test

## Main job: set up, then open the app (`aka`) on the shipped suite and the detected hardware.
run: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/aka

## Secondary: score the eager baseline over the suite (smoke tier on CPU, full tier on a GPU).
bench: setup
	$(PY) -m aka_tui bench run --baseline eager

# pytest-xdist workers: 3 on the CI machine's 2 cores, because the tests spend much of their time waiting on the
# subprocesses they start (sandboxed workers, `aka` commands, compilers). On one 2-core machine (2026-12-06) the
# suite took 17 min 01 s with 2 (a fresh clone's first run) and 12 min 58 s with 3 right after in the same clone;
# a fresh clone with 3: 13 min 37 s (`.ci/run` 17 min 11 s in all); 4 workers were slower, 13 min 44 s against 12 min 34 s
# with 3 in the same clone (2026-12-06). --dist loadfile keeps a test file on one worker, so its
# module fixtures (a Ray cluster, evaluations started ahead by tests/prefetch.py) are built once. Tests marked
# serial run afterwards, alone (exit status 5 there: none are marked).
TEST_WORKERS ?= 3
PYTEST := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest
XDIST := -n $(TEST_WORKERS) --dist loadfile

## Set up with test dependencies and run the test suite (GPU tests skip without a GPU).
test: setup-test
	$(PYTEST) -q --durations=20 $(XDIST) -m "not serial"
	$(PYTEST) -q --durations=5 -p no:xdist -m serial || [ $$? -eq 5 ]

## While developing: the tests not marked slow (the full `make test` is what CI runs).
test-fast: setup-test
	$(PYTEST) -q $(XDIST) -m "not slow and not serial"
	$(PYTEST) -q -p no:xdist -m "not slow and serial" || [ $$? -eq 5 ]

## The guards: ruff, mypy over the package (strict where it passes) and the import contracts (ARCHITECTURE.md).
check: setup-test
	$(MAKE) --no-print-directory lint

## The guards without setting up (PY=... BIN=... to use other tools).
lint:
	$(BIN)ruff check aka_tui tests scripts
	$(PY) -m mypy
	$(BIN)lint-imports

## On a GPU machine with torch/triton already installed (no venv): the GPU-marked tests. Only the files that hold
## one are collected: a GPU image need not have the app's packages (textual, anthropic) that other test files import.
test-gpu:
	PYTHONPATH=. python3 -m pytest -q -m gpu $$(grep -rl --include='*.py' -e 'mark\.gpu' tests)

## Without a GPU: compile every KB kernel for Hopper under the Triton release of the GPU machines (GPU_TRITON, 3.6.0
## in their image), installed alone into .gpu-triton/; the venv's own Triton (CI's) may accept code that one rejects.
GPU_TRITON ?= 3.6.0
compile-check-gpu-triton: setup
	$(PY) -m pip install -q --no-deps --target .gpu-triton/$(GPU_TRITON) triton==$(GPU_TRITON)
	PYTHONPATH=.gpu-triton/$(GPU_TRITON):. TRITON_CACHE_DIR=.gpu-triton/cache-$(GPU_TRITON) $(PY) scripts/kb_compile_check.py --arch 90
