# Two commands do all set-up on a fresh clone: `make demo` and `make test`.
# Each creates .venv (python3 -m venv) when missing and installs the project into it.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint typecheck unit bench bench-scale stress clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

test: $(STAMP) lint typecheck unit

# lint-imports: the import contracts of pyproject.toml ([tool.importlinter]); no cache, the
# graph takes well under a second to build.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache --no-logo

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Two workers (CI has 2 cores); a module's tests stay on one worker (module fixtures: a Dask
# cluster, a mission at the caps).
unit: $(STAMP)
	$(VENV)/bin/pytest -n 2 --dist loadfile

# The fast tier: every test but the slow ones (tests/conftest.py marks them by folder and
# module), without lint or mypy; a couple of minutes on 2 cores. `make test` runs them all.
test-fast: $(STAMP)
	$(VENV)/bin/pytest -n 2 --dist loadfile -m "not slow"

demo: $(STAMP)
	$(PY) examples/demo.py

bench: $(STAMP)
	$(PY) bench/bench_schedule.py
	$(PY) bench/bench_ready_cli.py
	$(PY) bench/bench_graph_prepare.py
	$(PY) bench/bench_worktrees.py
	$(PY) bench/bench_join_persist.py
	$(PY) bench/bench_mission_overhead.py
	$(PY) bench/bench_dask.py
	$(PY) bench/bench_agent_commands.py
	$(PY) bench/bench_conflicts.py
	$(PY) bench/bench_usage.py
	$(PY) bench/bench_setup.py
	$(PY) bench/bench_store_write.py
	$(PY) bench/bench_agents.py

# On demand (several minutes): missions at the caps against the previous release (f5939f6).
bench-scale: $(STAMP)
	$(PY) bench/bench_scale.py

# On demand (several minutes): kill -9 missions at random moments, resume, check; prints a tally.
stress: $(STAMP)
	$(PY) bench/stress_kill9.py --trials 100

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
