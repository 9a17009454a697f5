# One obvious entry per habit: `make test`, `make demo`, `make bench`, `make lint`, and for
# releases `make wheel` and `make wheel-test`.
# Every target installs what is missing first (Debian packages, a .venv with the package built
# in place), idempotently, so a fresh machine needs nothing but these commands.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# scrot and ImageMagick: the path of the agent tools' originals (benchmarks, re-recording).
SYSTEM_BINARIES := Xvfb xdotool xrandr chromium chromedriver lsof xclip scrot import
SYSTEM_PACKAGES := xvfb xfonts-base xdotool x11-xserver-utils x11-utils xauth tk chromium chromium-driver fonts-dejavu-core lsof xclip scrot imagemagick

KERNELS := $(shell find src_cython -name '_*.pyx')
# Dotted module names of the compiled kernels (src_cython/pixels/_diff.pyx -> mantis_fast.pixels._diff),
# whose hand-written .pyi stubs (mantis_fast/pixels/_diff.pyi) `make lint` checks against the
# built modules with mypy's stubtest.
STUB_MODULES := $(subst /,.,$(patsubst src_cython/%.pyx,mantis_fast/%,$(KERNELS)))

.PHONY: test test-fast test-range soak chaos demo bench lint docs build suites system-deps clean wheel wheel-test

system-deps:
	@missing=0; for b in $(SYSTEM_BINARIES); do command -v $$b >/dev/null 2>&1 || missing=1; done; \
	if [ $$missing = 1 ]; then \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		echo "installing Debian packages: $(SYSTEM_PACKAGES)"; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES) >/dev/null; \
	fi

# pyautogui is a peer in the input benchmarks and the original of the pyautogui drop-in (its
# parity tests run both). Its dependency python3-Xlib is an old fork that overwrites
# python-xlib's files, so it is installed without dependencies (it runs fine on python-xlib).
PYAUTOGUI := pyautogui==0.9.54 pymsgbox pytweening pyscreeze pygetwindow mouseinfo pyperclip

# OSWorld's client (desktop-env's PythonController) for tests/osworld: its package alone, as
# its dependency list pins half an ML stack (torch, numpy<2...) that its client never imports.
DESKTOP_ENV := desktop-env==1.0.2

$(STAMP): pyproject.toml setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q 'setuptools>=77' 'Cython>=3.0' && $(PY) -m pip install -q -e '.[test,bench,lint,ray,release,docs]'
	$(PY) -m pip install -q --no-deps $(PYAUTOGUI) $(DESKTOP_ENV)
	touch $(STAMP)

# Rebuilds the compiled kernels whenever a .pyx/.pxi/.pxd/.h changed (cythonize skips unchanged ones).
build: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

# The originals' own test suites (mss, Pillow, pyautogui), from their sdists, run against the
# drop-ins by tests/compat/test_upstream_*.py; fetched once into .suites/.
suites: $(STAMP)
	$(PY) -m tests.support.upstream_suites

test: system-deps build suites
	$(PY) -m pytest

# The pure layers' tests alone, with no X server on the machine (a test that tries to start
# one fails): seconds, for the edit-test loop. `make test` remains what CI runs.
PURE_TESTS := tests/pixels tests/geometry tests/loops tests/actions tests/package/test_architecture.py
test-fast: build
	MANTIS_TEST_NO_X=1 $(PY) -m pytest -m "not x11 and not slow" -q $(PURE_TESTS)

# The dependency range pyproject.toml declares, tested at both ends (tests/support/dependency_range.py;
# ~5 minutes): a wheel built from the sdist for the oldest declared Python with every core
# dependency at its floor, and for the newest with the newest releases, each in a fresh venv
# running the core path and the pure layers' tests (the floor also on Pillow 11 and 12).
RANGE_SDIST := build/range/sdist
test-range: system-deps $(STAMP)
	rm -rf $(RANGE_SDIST)
	$(PY) -m build --sdist --outdir $(RANGE_SDIST) .
	$(PY) -m tests.support.dependency_range --sdist $(RANGE_SDIST)/*.tar.gz --tests $(PURE_TESTS)

# Long runs asserting flat descriptors, RSS and SysV segments (tests/package/test_soak.py; minutes).
soak: system-deps build
	$(PY) -m pytest tests/package/test_soak.py -m slow -s

# Faults at scale (tests/support/chaos.py; ~10 minutes): 8 browser desktops in a vector env and
# `mantis-fast serve` (pool 4, queue 8) under 50 clients while a fault of every kind is injected
# at seeded random times; the table goes to bench-results/chaos.md (docs/reliability.md).
CHAOS_SECONDS ?= 600
chaos: system-deps build
	mkdir -p bench-results
	$(PY) -m tests.support.chaos --seconds $(CHAOS_SECONDS) --seed 0 \
		--json bench-results/chaos.json --markdown bench-results/chaos.md

demo: system-deps build
	$(PY) -m mantis_fast.cli demo

# The suites in benchmarks/ are the cases; benchmarks/report.py turns their JSON into
# bench-results/bench.json, bench.md (the README's ratio table) and bench.png.
bench: system-deps build
	mkdir -p bench-results
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,rounds \
		--benchmark-sort=name --benchmark-group-by=group \
		--benchmark-json=bench-results/pytest-benchmark.json
	$(PY) benchmarks/report.py bench-results/pytest-benchmark.json --out bench-results

# stubtest imports the compiled kernels, hence `build` (a no-op when nothing changed).
lint: build
	$(VENV)/bin/ruff check mantis_fast tests benchmarks setup.py conftest.py
	$(VENV)/bin/ruff format --check mantis_fast tests benchmarks setup.py conftest.py
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/cython-lint $(shell find src_cython -name "*.pyx" -o -name "*.pxi" -o -name "*.pxd")
	$(VENV)/bin/mypy
	$(VENV)/bin/stubtest --mypy-config-file stubtest.ini --allowlist stubtest-allowlist.txt $(STUB_MODULES)

# The guide pages and the API reference (docs/conf.py) as HTML in docs/_build/html; any
# warning (a docstring that does not parse, a broken cross-reference) fails the build.
docs: build
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

# The release wheel as users get it: `python -m build` makes the sdist and builds the wheel from
# that sdist (in an isolated environment, as pip would); auditwheel then vendors libgomp into it
# and gives it the manylinux tag this machine's glibc allows (cibuildwheel, configured in
# pyproject.toml, builds the portable manylinux_2_28 ones in containers).
DIST := dist
WHEELHOUSE := wheelhouse
wheel: $(STAMP)
	rm -rf $(DIST) $(WHEELHOUSE)
	$(PY) -m build --outdir $(DIST) .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m auditwheel repair --wheel-dir $(WHEELHOUSE) $(DIST)/*.whl
	$(PY) -m auditwheel show $(WHEELHOUSE)/*.whl
	@ls -l $(DIST) $(WHEELHOUSE)

# The repaired wheel installed in fresh venvs, never the source tree: first alone (core
# dependencies only: the capture -> resize -> encode -> dispatch path runs and every optional
# layer names its extra), then with the test extras, running the whole suite from the unpacked
# sdist with its package folder removed, so only the installed wheel can be imported.
WHEEL_TEST := build/wheel-test
wheel-test: system-deps wheel suites
	rm -rf $(WHEEL_TEST) && mkdir -p $(WHEEL_TEST)
	$(PYTHON) -m venv $(WHEEL_TEST)/core
	$(WHEEL_TEST)/core/bin/python -m pip install -q --upgrade pip
	$(WHEEL_TEST)/core/bin/python -m pip install -q $(WHEELHOUSE)/*.whl
	cd $(WHEEL_TEST) && core/bin/python $(CURDIR)/tests/support/core_path.py --core-only
	$(PYTHON) -m venv $(WHEEL_TEST)/venv
	$(WHEEL_TEST)/venv/bin/python -m pip install -q --upgrade pip
	$(WHEEL_TEST)/venv/bin/python -m pip install -q "$$(ls $(WHEELHOUSE)/*.whl)[test,bench,ray]"
	$(WHEEL_TEST)/venv/bin/python -m pip install -q --no-deps $(PYAUTOGUI) $(DESKTOP_ENV)
	tar xzf $(DIST)/*.tar.gz -C $(WHEEL_TEST)
	rm -r $(WHEEL_TEST)/mantis_fast-*/mantis_fast
	cd $(WHEEL_TEST)/mantis_fast-*/ && MANTIS_TEST_INSTALLED=1 MANTIS_SUITES_DIR=$(CURDIR)/.suites \
		../venv/bin/python -m pytest

clean:
	rm -rf build docs/_build $(DIST) $(WHEELHOUSE) *.egg-info $$(find mantis_fast -name '*.so')
