# Two entry points: `make demo` (the main job) and `make test` (the tests). Each creates or reuses
# .venv and installs what it needs, so a fresh machine needs only Python 3.11 and Java 17.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test test-fast demo lint typecheck bench soak clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check config ufs pagestore worker tests bench
	$(BIN)/ruff format --check config ufs pagestore worker tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider

# Unit tests only: no real servers (integration), no reliability scenarios.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not integration and not reliability"

demo: $(STAMP)
	$(BIN)/dora demo

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

# The long versions of the reliability scenarios (see RELIABILITY.md); figures at the end.
soak: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -o timeout=3600 -m reliability --soak tests/reliability

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache
