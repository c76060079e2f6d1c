# The two commands: `make demo` (a running platform on http://127.0.0.1:8000) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-latest install install-dev lint

# Reproducible: every package at the version and hashes of requirements.lock (bin/lock writes it
# from pyproject.toml), then the project itself without resolving anything again.
$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU build; anything looser can pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q --require-hashes -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

demo: install
	bin/ensure-env
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo
	@set -a; [ -f .env ] && . ./.env; set +a; \
	echo "Starting the Procfile's four processes: web (http://$${WEB_HOST:-127.0.0.1}:$${WEB_PORT:-8000}), worker (Celery), beat (Celery beat) and chat (chat worker); Ctrl-C stops all four."
	# Plain HTTP on 127.0.0.1: no HTTPS redirect or Secure-only cookies (SITE_HTTPS, .env.example).
	SITE_HTTPS=$${SITE_HTTPS:-false} $(BIN)/honcho start -f Procfile

test: install
	bin/ensure-env
	bin/test

# The tests on the newest versions pyproject.toml's ranges allow (.venv-latest), not the lock:
# an early warning, not a gate (.ci/latest).
test-latest:
	bin/ensure-env
	bin/test-latest

# Fast checks, run by CI before the tests: the pre-commit hooks (ruff format and check,
# django-upgrade, djlint on the templates; .pre-commit-config.yaml), types, migrations, the API
# schema.
lint: install
	bin/ensure-env
	$(BIN)/pre-commit run --all-files --show-diff-on-failure
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --fail-on-warn --file /dev/null
