# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch that lies on this machine's disk; elsewhere pip fetches it.
TORCH_SPEC ?= torch==2.13.0
EXAMPLE_OUT ?= build/example
# pytest-xdist processes for `make test` (TEST_WORKERS=0 runs the suite in one).
# Three on the 2-core machine: with two, its cores were busy 1.7 of 2 on
# average (tests wait on the processes and servers they start). Clean clones,
# the machine otherwise idle, 2026-12-01: the suite took 652 and 726 s with
# three, 665, 749 and 770 s with two (the same CPU seconds either way): a
# small gain beside run-to-run noise of 16%.
TEST_WORKERS ?= 3
# The slowest tests are listed at the end of each run (--durations): what to
# look at first when the suite grows slow. (--dist worksteal and loadgroup were
# tried, issue 47: no gain shown; see tests/conftest.py on the order of tests.)
TEST_FLAGS ?= --durations=25

.PHONY: run test bench install install-test clean

# pip installs without compiling the packages' modules, and compileall then
# compiles the same files on every core: pip's own compile step runs on one
# (79 of install-test's 138 s on the 2-core machine; compileall -j 0 took 40).
# Leaving them to compile at first import cost the suite more than it saved
# (each test process compiled the modules it imported). A few files are
# written for newer Pythons (torch's py312_intrinsics.py) and compile on none
# older, for pip either: compileall's errors are not failures.
PIP_INSTALL := $(PY) -m pip install -q --no-compile
COMPILE_ALL = $(PY) -m compileall -q -j 0 \
    "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    >/dev/null || true

# `make run`'s environment: torch (the CPU build) and the package.
$(VENV)/.installed-base: setup.py
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) "$(TORCH_SPEC)" -e .
	$(COMPILE_ALL)
	touch $@

# `make test`'s: the same with the extras, in one pip call and one compile
# pass, so that it also holds `make run`'s. Built on the base one, it cost a
# second resolve and a second walk of the 5 GB of site-packages (12 s to find
# nothing to compile): fresh venvs, pip's cache warm, 2026-12-03, 130.5 and
# 174.8 s that way against 129.9 and 126.9 s this way.
$(VENV)/.installed-test: setup.py
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) "$(TORCH_SPEC)" -e '.[test,tf,sck,finetune]'
	$(COMPILE_ALL)
	touch $(VENV)/.installed-base $@

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
