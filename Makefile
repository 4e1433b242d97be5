# The two commands a new machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: `make run` needs only the app; `make test` adds the test tools and CPU PyTorch.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 8000
# Where the web process answers, for the port proxy and links back (honcho gives every
# process a PORT of its own: the proxy cannot read the web's from its own).
DASHBOARD = $(if $(filter 0.0.0.0 ::,$(HOST)),127.0.0.1,$(HOST)):$(PORT)
# `make run V=1`: a line per task run, beat send and web request (TRAINYARD_VERBOSE=1), not
# only per job event and per warning or error.
V ?=

.PHONY: run test install lint format messages clean sandbox test-host

# What jobs run in: bubblewrap, and each replica's own network (iproute2, nftables). As root
# `make run` and `make test` install the Debian packages and this host's job network; anyone
# else gets a message, and the agent starts no job until an admin has done it. Images: umoci
# (the node unpacks them), skopeo (the store), mmdebstrap and buildah (the demo's, Containerfiles).
# nginx: the authenticated proxy to jobs' open ports (`manage.py run_proxy`, docs/port-proxy.md).
SANDBOX_PACKAGES := bubblewrap nftables iproute2 util-linux umoci skopeo mmdebstrap buildah nginx
sandbox: $(RUN_STAMP)
	@if [ "$$(id -u)" = 0 ]; then \
	  missing=$$(for p in $(SANDBOX_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  fi; \
	  $(BIN)/python manage.py job_network install; \
	else \
	  echo "Not root: jobs will not start until an admin runs, as root:"; \
	  echo "  apt-get install $(SANDBOX_PACKAGES) && $(BIN)/python manage.py job_network install"; \
	  echo "(or set TRAINYARD_UNSAFE_PLAIN_PROCESSES=1 on a single-user laptop)"; \
	fi

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

run: $(RUN_STAMP) sandbox
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo "Trainyard is starting at http://$(HOST):$(PORT)/ (Ctrl-C stops everything)"
	@echo "Jobs' open ports, through the proxy: http://j<job>-<port>.jobs.localhost:8080/"
	HOST=$(HOST) PORT=$(PORT) TRAINYARD_DASHBOARD=$(DASHBOARD) TRAINYARD_BASE_URL=$${TRAINYARD_BASE_URL:-http://$(DASHBOARD)} $(if $(V),TRAINYARD_VERBOSE=1) $(BIN)/honcho start -f Procfile

# axe-core, which the browser tests inject into pages.
node_modules/axe-core/axe.min.js: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The suite runs in TEST_WORKERS processes (pytest-xdist; tests/support/workers.py keeps
# them apart). While developing: `make test PYTEST_ARGS=tests/test_jobs_api.py`, or
# `.venv/bin/pytest tests/test_jobs_api.py -k stop` for one process.
TEST_WORKERS ?= 4
PYTEST_ARGS ?=
# The suite runs on this machine's PostgreSQL and Redis unless the environment names others,
# and fails where one is missing (TRAINYARD_REQUIRE_SERVICES): never on SQLite with tests
# skipped. One process on SQLite, by hand: `.venv/bin/pytest tests/test_jobs_api.py`.
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/trainyard
REDIS_URL ?= redis://127.0.0.1:6379/0
SUITE_ENV = DATABASE_URL=$(DATABASE_URL) REDIS_URL=$(REDIS_URL) TRAINYARD_REQUIRE_SERVICES=1

# As root: the Debian packages the tests run for real, PostgreSQL and Redis started, and
# the second address the job-network tests need (deploy/test-host.sh, idempotent).
test-host:
	@if [ "$$(id -u)" = 0 ]; then \
	  deploy/test-host.sh; \
	else \
	  echo "Not root: the suite expects what deploy/test-host.sh makes ready (run it as root):"; \
	  echo "  its Debian packages, PostgreSQL and Redis up, and a second address they listen on"; \
	fi

test: test-host $(TEST_STAMP) node_modules/axe-core/axe.min.js sandbox
	@start=$$(date +%s); \
	$(BIN)/ruff check . && $(BIN)/ruff format --check . \
	  && $(BIN)/python manage.py makemigrations --check --dry-run \
	  && $(BIN)/lint-imports \
	  && $(SUITE_ENV) $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15 $(PYTEST_ARGS); \
	status=$$?; \
	echo "make test: exit $$status after $$(( $$(date +%s) - start )) s (pytest's own line above: counts and its wall time)"; \
	exit $$status

lint:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

messages: $(TEST_STAMP)
	$(BIN)/python manage.py makemessages -l zh_Hans --no-obsolete
	$(BIN)/python manage.py compilemessages -l zh_Hans --ignore=.venv

clean:
	rm -rf $(VENV) var staticfiles
