"""The browser fixture of the e2e suite, for this package's screenshot test."""

from tests.e2e.conftest import run_in_browser  # noqa: F401
