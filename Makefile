# kafkatune: `make demo` and `make test` each install what they need from nothing, idempotently:
# Debian packages (Java 17, Maven, kcat, iperf3, iproute2, PostgreSQL, Chromium for the report tests),
# the Python venv, and the Kafka jars.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KT := $(VENV)/bin/kafkatune
STAMPS := .make
APT_PACKAGES := openjdk-17-jre-headless maven kcat iperf3 iproute2 nftables iptables procps postgresql chromium mosquitto sockperf \
  openssh-server openssh-client
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Shaped network for the demo when root (network namespaces + tc); loopback otherwise.
DEMO_NETWORK ?= $(shell [ "$$(id -u)" = 0 ] && command -v tc >/dev/null && echo shaped || echo loopback)
DEMO_NIC_MBPS ?= 25
PYTEST_ARGS ?=

.PHONY: all deps apt venv bytecode kafka pulsar test test-fast coverage lint demo demo-down clean help

help:
	@echo "make demo    set up everything, start the local 3-broker testbed and run a short staged sweep"
	@echo "make test    set up everything, then run the tests, the linters among them (ruff, mypy, import-linter's layers)"
	@echo "make test-fast   the tests that start no server (under 2 minutes)"
	@echo "make coverage    the fast tests under coverage.py; the judgement code's lines they run"
	@echo "make clean   stop the demo testbed and remove the venv (the Kafka jar cache stays)"

deps: apt venv kafka pulsar

apt: $(STAMPS)/apt
$(STAMPS)/apt: Makefile
	@mkdir -p $(STAMPS)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	else echo "apt: all packages present"; fi
	@touch $@

# The venv's packages through uv (pinned, installed by pip into the venv itself), from its cache alone when that
# holds them all (the package index answers uv's revalidation of PySpark's source archive as modified every time,
# and uv then builds it again); from the index when not, as on a fresh machine. Every clean clone's `make test`
# pays this step: benchmarks/venv_install.py measures it.
UV_VERSION := 0.13.8
venv: $(STAMPS)/venv
$(STAMPS)/venv: pyproject.toml
	@mkdir -p $(STAMPS)
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@[ "$$($(VENV)/bin/uv --version 2>/dev/null)" = "uv $(UV_VERSION)" ] || $(PY) -m pip install -q uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install -q --offline --python $(PY) -e '.[dev]' 2>/dev/null \
	  || $(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev]'
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
	@touch $@

# Python reads a module's bytecode from __pycache__ when it is there and up to date, and otherwise compiles the
# source on every import, writing nothing back when PYTHONDONTWRITEBYTECODE is set (as in this machine's
# environment). uv, unlike pip, compiles nothing at install: the `venv` recipe above compiles the venv's packages,
# and this the project's packages, so that each of the hundreds of Python processes a suite or a sweep starts (the CLI,
# load workers, Spark's Python workers) imports compiled code (benchmarks/bytecode.py). Cheap when up to date.
PACKAGES = $(shell $(PY) -c 'import tomllib; print(*{p.split(".")[0] for p in tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["packages"]})')
bytecode: venv
	@$(PY) -m compileall -q -j 0 $(PACKAGES) >/dev/null

# Always asked: the cache may have been removed; a no-op when the jars are there (offline).
kafka: apt venv
	$(KT) testbed install

# The Pulsar standalone's jars (for the Pulsar driver's tests and `compare`); a no-op once cached.
pulsar: apt venv
	$(KT) servers install pulsar

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo

# Two pytest processes at once (tests/lanes.py): the tests that need a shared server, in order, and beside them the
# rest at the lowest priority, on the CPU the first leave idle; the linters are among the rest (tests/test_lint.py).
test: deps bytecode
	$(PY) tests/lanes.py -v -ra --durations=100 $(PYTEST_ARGS)

# The tests that start no server (pure: records, judgement, statistics, parsing), on two worker processes; a test
# that would connect a socket or start Java fails here (tests/conftest.py). Needs only the Python environment.
test-fast: venv bytecode
	KAFKATUNE_TEST_FAST=1 $(PY) -m pytest -q -n 2 -m "not server and not shaped" -p no:cacheprovider $(PYTEST_ARGS)

# What of the judgement code (advisor/, sweeps/confirm.py, sweeps/hold.py, core/stats.py) the fast tests run.
JUDGEMENT = --include='advisor/*,sweeps/confirm.py,sweeps/hold.py,core/stats.py'
coverage: venv bytecode
	rm -f .coverage .coverage.*
	KAFKATUNE_TEST_FAST=1 $(PY) -m coverage run -m pytest -q -m "not server and not shaped" -p no:cacheprovider \
		$(PYTEST_ARGS)
	$(PY) -m coverage combine -q
	$(PY) -m coverage report $(JUDGEMENT) --sort=cover

demo: deps bytecode
	@if [ "$(DEMO_NETWORK)" = shaped ]; then \
	  $(KT) testbed up --network shaped --nic-mbps $(DEMO_NIC_MBPS) --warm-up 240; \
	else $(KT) testbed up --warm-up 240; fi
	$(KT) testbed status
	$(KT) sweep examples/demo-sweep.yaml
	$(KT) study show runs/demo-sweep
	$(KT) analyze runs/demo-sweep
	@echo "top recommendations:"
	$(KT) advise runs/demo-sweep --top 5
	$(KT) report runs/demo-sweep
	@echo "demo done: the study is in runs/demo-sweep/ (summary.json, trials/*/trial.json + Parquet)," \
	      "its analysis in runs/demo-sweep/analysis/, the report in runs/demo-sweep/report/report.html" \
	      "(and report.md, recommended/*.properties); run the sweep again to resume it;" \
	      "stop the testbed with: $(KT) testbed down"

demo-down: venv
	$(KT) testbed down

clean:
	-[ -x $(KT) ] && $(KT) testbed down
	rm -rf $(VENV) $(STAMPS) *.egg-info
