"""aiohttp loads when a backend is first called, not when the URLs load: the judges import the
HTTP helpers at start-up (`chat.backends.httpcommon`), and the HTTP client is a tenth of a second
of every web process's and management command's start."""

from __future__ import annotations

from tests.core.test_light_imports import PROBE, _loaded_after

HTTP_CLIENT = ("aiohttp",)


def test_loading_the_urls_imports_no_http_client() -> None:
    assert _loaded_after(PROBE.format(heavy=HTTP_CLIENT)) == []


def test_the_probe_would_see_aiohttp_once_a_backend_sends_a_request() -> None:
    code = PROBE.replace(
        "import metrics.scorers",
        "from chat.backends.httpcommon import client_timeout; client_timeout(30.0)",
    )
    assert _loaded_after(code.format(heavy=HTTP_CLIENT)) == ["aiohttp"]
