"""The browser fixture of the e2e suite for this package's screenshot test, and the default
language for every test here (a page request in English elsewhere must not leak in)."""

import pytest
from django.conf import settings
from django.utils import translation

from tests.e2e.conftest import run_in_browser  # noqa: F401


@pytest.fixture(autouse=True)
def _default_language():
    with translation.override(settings.LANGUAGE_CODE):
        yield
