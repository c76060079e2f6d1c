from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chat.fake_openai import FakeOpenAI
from tests.e2e.conftest import run_in_browser  # noqa: F401 - the browser fixture, shared


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
