# Quick start: `make demo` runs the main job, `make test` runs the tests. Both create .venv when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench bench-pddl lint clean

# torch first, pinned to the version the tests were run with: the learn extra asks only torch>=2.13, and a bare
# or ranged torch from PyPI is a multi-GB CUDA build. TORCH_INDEX picks the CPU build on a fresh machine
# (make TORCH_INDEX=https://download.pytorch.org/whl/cpu); a machine with a local wheel needs nothing.
# EXTRAS: ray (scale) is installed so the Ray tests run (a local two-worker cluster, about 20 s); Fast Downward
# (baselines) is not: its tests use a stand-in planner. make EXTRAS=dev,viewer,learn,bench,scale,baselines for all.
TORCH_INDEX ?=
EXTRAS ?= dev,viewer,learn,bench,scale

# Rebuilt whenever pyproject.toml changes: it declares the example worlds' entry points (goap run --world village
# finds them in the installed metadata), so a stale install would not know a world added there.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/goap run --world village --agents 10000 --ticks 600 --device cpu

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) benchmarks/plan_throughput.py

# The PDDL suite against Fast Downward (needs the baselines extra: make EXTRAS=dev,bench,baselines bench-pddl).
bench-pddl: $(VENV)/.installed
	mkdir -p benchmarks/results
	$(VENV)/bin/goap bench --suite pddl --planners warp,fd-lmcut --time-limit 60 \
		--json benchmarks/results/pddl.json --plot benchmarks/results/pddl.png

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis *.egg-info
