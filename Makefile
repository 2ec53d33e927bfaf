# Two commands do everything: `make run` and `make test` (`make lint` is what CI checks first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-containers lint format install bench clean-data docker-build docker-up backup restore

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# torch is pinned and installed first: an unpinned one pulls several GB of CUDA wheels.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev]"
	@# The agent-side client (its own package: httpx only; MCP as an extra).
	$(BIN)/python -m pip install -q -e "./clients/python[mcp]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py rb_run

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The fast part alone, for a developer's loop: everything but the browser tests, the production topology's
# fault tests and the container tests (`make test` runs them all, and is what CI runs).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not browser and not production" --ignore=tests/containers $(PYTEST_ARGS)

# The production image and the compose topology under podman: builds the images, runs the fault tests
# against the containers, the upgrade, backup/restore and the Kubernetes manifests' checks (needs podman,
# runc and mmdebstrap; as root). `make test` runs these too, and skips them, saying why, without podman.
test-containers: $(STAMP)
	$(BIN)/python -m pytest tests/containers tests/production -k "containers or Containers" $(PYTEST_ARGS)

# ruff (configured in pyproject.toml): lint, and check the formatting without changing files; then the
# import contracts (import-linter, [tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Apply ruff's formatting and its safe lint fixes.
format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
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
