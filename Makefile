# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch that lies on this machine's disk; elsewhere pip fetches it.
TORCH_SPEC ?= torch==2.13.0
EXAMPLE_OUT ?= build/example
# pytest-xdist processes for `make test` (TEST_WORKERS=0 runs the suite in one).
TEST_WORKERS ?= 2
# The slowest tests are listed at the end of each run (--durations): what to
# look at first when the suite grows slow. (--dist worksteal and loadgroup were
# tried, issue 47: no gain shown; see tests/conftest.py on the order of tests.)
TEST_FLAGS ?= --durations=25

.PHONY: run test bench install install-test clean

$(VENV)/.installed-base: setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed-base
	$(PY) -m pip install -q -e '.[test,tf,sck,finetune]'
	touch $@

install: $(VENV)/.installed-base
install-test: $(VENV)/.installed-test

run: $(VENV)/.installed-base
	rm -rf $(EXAMPLE_OUT)
	$(VENV)/bin/autoais build-corpus --input 'examples/corpus/*.jsonl' \
	    --output $(EXAMPLE_OUT)/corpus --num_shards 4
	$(VENV)/bin/autoais evaluate --predictions 'examples/predictions/*.csv' \
	    --corpus $(EXAMPLE_OUT)/corpus --gold examples/gold.jsonl \
	    --output_dir $(EXAMPLE_OUT)/eval
	@echo
	@echo "autoais is installed in $(VENV)/bin: in a new shell, '. $(VENV)/bin/activate' first (or call $(VENV)/bin/autoais)"

test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n $(TEST_WORKERS) $(TEST_FLAGS) tests

bench: $(VENV)/.installed-test
	$(PY) bench/pipeline.py

clean:
	rm -rf build $(VENV)
