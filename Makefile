# The two commands: `make demo` (a running platform on http://127.0.0.1:8000) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-dev lint

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU build; anything looser can pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
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

# Fast checks, run by CI before the tests: formatting, lint, types, migrations, the API schema.
lint: install
	bin/ensure-env
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --fail-on-warn --file /dev/null
