# Quick start: `make demo` runs the main job, `make test` runs the tests. Both create .venv when missing; the demo
# installs the engine and the viewer only (a few hundred MB with Warp), the tests everything they exercise.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test docs wheel-check bench bench-pddl bench-fdr bench-up bench-lmcut lint clean

# torch first, pinned to the version the tests were run with: the learn extra asks only torch>=2.13, and a bare
# or ranged torch from PyPI is a multi-GB CUDA build. TORCH_INDEX picks the CPU build on a fresh machine
# (make TORCH_INDEX=https://download.pytorch.org/whl/cpu); a machine with a local wheel needs nothing.
# EXTRAS: ray (scale) is installed so the Ray tests run (a local two-worker cluster, about 20 s), and Unified
# Planning (up, about 120 MB with scipy) so the engine's tests run; Fast Downward (baselines) is not: its tests use
# a stand-in planner. make EXTRAS=dev,viewer,learn,bench,scale,up,baselines for all.
TORCH_INDEX ?=
EXTRAS ?= dev,viewer,learn,bench,scale,up,docs

# Rebuilt whenever pyproject.toml changes: it declares the example worlds' entry points (goap run --world village
# finds them in the installed metadata), so a stale install would not know a world added there.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@ $(VENV)/.installed-demo

# The demo's install: the engine and the viewer (no torch, no ray); the full install above covers it too.
$(VENV)/.installed-demo: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[viewer]"
	touch $@

demo: $(VENV)/.installed-demo
	$(VENV)/bin/goap run --world village --agents 10000 --ticks 600 --device cpu

test: $(VENV)/.installed
	$(PY) -m pytest -q

# The package as a user installs it: sdist and wheel built, the wheel run from a fresh environment (CI runs it).
# The documentation site (docs/, mkdocs.yml) into site/, with the API reference generated from the docstrings;
# strict: a broken link, a missing page or a docstring the reference cannot read fails the build.
docs: $(VENV)/.installed
	$(PY) -m mkdocs build --strict --quiet

wheel-check: $(VENV)/.installed
	PY=$(PY) bash .ci/wheel_check

bench: $(VENV)/.installed
	$(PY) benchmarks/plan_throughput.py

# The PDDL suite against Fast Downward (needs the baselines extra: make EXTRAS=dev,bench,baselines bench-pddl).
bench-pddl: $(VENV)/.installed
	mkdir -p benchmarks/results
	$(VENV)/bin/goap bench --suite pddl --planners warp,fd-lmcut --time-limit 60 \
		--json benchmarks/results/pddl.json --plot benchmarks/results/pddl.png

# The finite-domain translation against the STRIPS form and Fast Downward, same run (docs/bench.md): the 46 IPC
# tasks, then the first two tasks of each domain of ../shared/pddl-more (PDDL_MORE=DIR elsewhere) at 20 s a task.
PDDL_MORE ?= ../shared/pddl-more
bench-fdr: $(VENV)/.installed
	mkdir -p benchmarks/results
	$(VENV)/bin/goap bench --suite pddl --planners warp,fd-lmcut --translate fdr,strips --time-limit 60 \
		--json benchmarks/results/fdr_ipc.json
	$(VENV)/bin/goap bench --suite pddl --tasks-dir $(PDDL_MORE) --planners warp,fd-lmcut --translate fdr,strips \
		--tasks 'p01,p02,pfile01-001,pfile01-002,child-snack_pfile01,child-snack_pfile01-2,d-1-2,d-1-3,prob01,prob02,probLOGISTICS-4-0,probLOGISTICS-4-1,pfile03-011,pfile03-012' \
		--time-limit 20 --json benchmarks/results/fdr_more.json

# LM-cut's cost per expansion against Fast Downward's on the 46 IPC tasks, same run (docs/measured.md).
bench-lmcut: $(VENV)/.installed
	mkdir -p benchmarks/results
	$(PY) benchmarks/lmcut_speed.py --out benchmarks/results/lmcut_speed.json

# The 46 IPC tasks through Unified Planning: UP's reader, the warp-goap engine, UP's validator, goap solve's costs.
bench-up: $(VENV)/.installed
	mkdir -p benchmarks/results
	$(PY) benchmarks/up_ipc.py --json benchmarks/results/up_ipc.json

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis *.egg-info
