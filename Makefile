# Two entry points (see README "Quick start"): `make demo` and `make test`.
# Both create .venv on first use: torch is installed first from its pinned CPU wheel
# (constraints.txt), so nothing pulls CUDA packages.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= gradebench-out

.PHONY: demo test venv bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e ".[all,test,reference]"
	touch $@

demo: venv
	$(VENV)/bin/gradebench demo --out $(OUT)

test: venv
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -n 2 -q

bench: venv
	$(PY) benchmarks/bench_build.py
	$(PY) benchmarks/bench_load.py
	$(PY) benchmarks/bench_eval.py
	$(PY) benchmarks/bench_leaderboard.py
	$(PY) benchmarks/bench_query.py
	$(PY) benchmarks/bench_metrics.py
	$(PY) benchmarks/bench_losses.py
	$(PY) benchmarks/bench_adapters.py
	$(PY) benchmarks/bench_host.py

clean:
	rm -rf $(VENV) $(OUT)
