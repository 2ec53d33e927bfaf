# Two commands do everything: `make run` and `make test` (`make lint` is what CI checks first).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format install bench clean-data docker-build docker-up

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

# ruff (configured in pyproject.toml): lint, and check the formatting without changing files.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Apply ruff's formatting and its safe lint fixes.
format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python bench/retrieval.py

# Deletes the embedded database, broker queue and demo token (stop `make run` first).
clean-data:
	rm -rf "$${RB_DATA_DIR:-.data}"

# Production stack (needs Docker and SECRET_KEY in the environment).
docker-build:
	docker build -f docker/Dockerfile -t reasoningbank-service:latest .

docker-up:
	docker compose -f docker/compose.yaml up -d --build
