"""The embedded defaults of `make demo` in a folder of their own: SQLite, the SQLAlchemy/SQLite
broker and result backend, plain HTTP. For scripts that build a scratch platform (benchmarks, the
demo data generator) before Django is set up; `bin/test` does the same for its second pass."""

from __future__ import annotations

import tempfile


def embedded_environment(prefix: str) -> dict[str, str]:
    """Environment variables for a fresh embedded platform in a new temporary folder."""
    directory = tempfile.mkdtemp(prefix=prefix)
    return {
        "PLATFORM_VAR_DIR": directory,
        "DATABASE_URL": f"sqlite:///{directory}/platform.sqlite3",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{directory}/celery-broker.sqlite3",
        "CELERY_RESULT_BACKEND": f"db+sqlite:///{directory}/celery-results.sqlite3",
        "SITE_HTTPS": "false",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
