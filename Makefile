# The two commands a new machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: `make run` needs only the app; `make test` adds the test tools and CPU PyTorch.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint format messages clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/pip install --quiet -c requirements.lock -e .
	touch $@

$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -c requirements.lock -e ".[dev,torch]"
	touch $@

install: $(TEST_STAMP)

run: $(RUN_STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Trainyard is starting at http://$(HOST):$(PORT)/ (Ctrl-C stops everything)"
	HOST=$(HOST) PORT=$(PORT) $(BIN)/honcho start -f Procfile

# axe-core, which the browser tests inject into pages.
node_modules/axe-core/axe.min.js: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

test: $(TEST_STAMP) node_modules/axe-core/axe.min.js
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

messages: $(TEST_STAMP)
	$(BIN)/python manage.py makemessages -l zh_Hans --no-obsolete
	$(BIN)/python manage.py compilemessages -l zh_Hans

clean:
	rm -rf $(VENV) var staticfiles
