# The two commands a new machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint format messages clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c requirements.lock -e ".[dev,torch]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Trainyard is starting at http://$(HOST):$(PORT)/ (Ctrl-C stops everything)"
	HOST=$(HOST) PORT=$(PORT) $(BIN)/honcho start -f Procfile

# axe-core, which the browser tests inject into pages.
node_modules/axe-core/axe.min.js: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

test: $(STAMP) node_modules/axe-core/axe.min.js
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

messages: $(STAMP)
	$(BIN)/python manage.py makemessages -l zh_Hans --no-obsolete
	$(BIN)/python manage.py compilemessages -l zh_Hans

clean:
	rm -rf $(VENV) var staticfiles
