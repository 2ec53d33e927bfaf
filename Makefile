# Two commands do everything: `make run` and `make test` (`make lint` is what CI checks first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Two stamps: what `make run` imports, and on top of it what the tests, the linters and the benchmarks need.
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# uv (a kept installer, from PyPI) downloads and installs in parallel: the install takes a fraction of pip's
# time (bench/README.md, first start). INSTALLER=pip uses pip instead, e.g. for a private index set in pip.conf
# (uv reads UV_INDEX_URL / UV_EXTRA_INDEX_URL instead).
INSTALLER ?= uv
# Where torch comes from: its CPU-only wheel. The default torch wheel for Linux pulls several GB of CUDA
# libraries the service never uses (the Dockerfile does the same); empty: the configured package index.
TORCH_INDEX_URL ?= https://download.pytorch.org/whl/cpu
ifeq ($(INSTALLER),uv)
# uv reads none of pip's settings: the ones given in the environment are passed on. --compile-bytecode does what
# pip does by default: without it every process imports torch and transformers from source (16 s against 7 s
# here, on every start where Python may not write .pyc files).
INSTALL = $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python $(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL)) \
	$(foreach url,$(PIP_EXTRA_INDEX_URL),--extra-index-url $(url)) $(foreach dir,$(PIP_FIND_LINKS),--find-links $(dir))
else
INSTALL = $(BIN)/python -m pip install -q
endif

.PHONY: run test test-fast test-containers lint format install install-dev bench clean-data docker-build docker-up backup restore

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip $(if $(filter uv,$(INSTALLER)),uv)
	@# torch is pinned and installed first, the CPU-only build when TORCH_INDEX_URL answers: the rest finds it installed.
	$(INSTALL) $(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL)) torch==2.13.0 || { \
	  echo "make: $(TORCH_INDEX_URL) did not answer; installing torch from the configured index"; \
	  $(INSTALL) torch==2.13.0; }
	@# The service and the agent-side client (its own package: httpx only; MCP as an extra), resolved together.
	$(INSTALL) -e . -e "./clients/python[mcp]"
	@touch $(STAMP)

# The test and lint tools, the real agent libraries the tests drive, the browser driver: not for `make run`.
$(DEV_STAMP): $(STAMP)
	$(INSTALL) -e ".[dev]"
	@touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

run: $(STAMP)
	$(BIN)/python manage.py rb_run

test: $(DEV_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The fast part alone, for a developer's loop: everything but the browser tests, the production topology's
# fault tests and the container tests (`make test` runs them all, and is what CI runs).
test-fast: $(DEV_STAMP)
	$(BIN)/python -m pytest -m "not browser and not production" --ignore=tests/containers $(PYTEST_ARGS)

# The production image and the compose topology under podman: builds the images, runs the fault tests
# against the containers, the upgrade, backup/restore and the Kubernetes manifests' checks (needs podman,
# runc and mmdebstrap; as root). `make test` runs these too, and skips them, saying why, without podman.
test-containers: $(DEV_STAMP)
	$(BIN)/python -m pytest tests/containers tests/production -k "containers or Containers" $(PYTEST_ARGS)

# ruff (configured in pyproject.toml): lint, and check the formatting without changing files; then the
# import contracts (import-linter, [tool.importlinter] in pyproject.toml).
lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Apply ruff's formatting and its safe lint fixes.
format: $(DEV_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(DEV_STAMP)
	$(BIN)/python bench/retrieval.py

# Deletes the embedded database, broker queue and demo token (stop `make run` first).
clean-data:
	rm -rf "$${RB_DATA_DIR:-.data}"

# The database (embedded, or DATABASE_URL's) to a pg_dump file: `make backup [BACKUP=path]`, and back:
# `make restore BACKUP=path` (replaces what is there; stop `make run` first).
backup: $(STAMP)
	$(BIN)/python manage.py rb_backup $(BACKUP)

restore: $(STAMP)
	@test -n "$(BACKUP)" || { echo "make restore needs BACKUP=path/to/file.dump"; exit 2; }
	$(BIN)/python manage.py rb_restore "$(BACKUP)"

# Production stack (needs Docker and SECRET_KEY in the environment).
docker-build:
	docker build -f docker/Dockerfile -t reasoningbank-service:latest .

docker-up:
	docker compose -f docker/compose.yaml up -d --build
