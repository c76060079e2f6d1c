"""The web server believes forwarding headers only from the proxy the operator names
(issue 23, item 11): `python -m config.serve`, what the Procfile, image and compose file run."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from uvicorn.main import main as uvicorn_command

from config.serve import APPLICATION, uvicorn_args


async def _echo_client(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that answers with the client address the server gave it."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(scope["client"][0]).encode()})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _client_seen(forwarded_for: str) -> str:
    """Serve `_echo_client` with the options `config.serve` gives uvicorn (as its command line
    parses them) and ask from 127.0.0.1 with a forged X-Forwarded-For."""
    port = _free_port()
    args = uvicorn_args(["--host", "127.0.0.1", "--port", str(port)])
    assert args[0] == APPLICATION
    params = uvicorn_command.make_context("uvicorn", args[1:] + [APPLICATION]).params
    config = uvicorn.Config(
        _echo_client,
        host=params["host"],
        port=params["port"],
        proxy_headers=params["proxy_headers"],
        forwarded_allow_ips=params["forwarded_allow_ips"],
        log_level="warning",
    )
    server = uvicorn.Server(config)

    async def ask() -> str:
        serving = asyncio.create_task(server.serve())
        try:
            for _ in range(3000):  # uvicorn offers no event for "listening"
                if server.started:
                    break
                await asyncio.sleep(0.01)
            async with httpx.AsyncClient() as client:
                answer = await client.get(
                    f"http://127.0.0.1:{port}/", headers={"X-Forwarded-For": forwarded_for}
                )
            return answer.text
        finally:
            server.should_exit = True
            await serving

    return asyncio.run(ask())


def test_a_forged_forwarded_for_from_localhost_does_not_change_the_client_address(
    settings: Any,
) -> None:
    # The default: no proxy named. uvicorn's own default trusts 127.0.0.1, so this was 203.0.113.9.
    assert settings.FORWARDED_ALLOW_IPS == []
    assert _client_seen("203.0.113.9") == "127.0.0.1"


def test_the_named_proxy_is_believed(settings: Any) -> None:
    settings.FORWARDED_ALLOW_IPS = ["127.0.0.1"]
    assert _client_seen("203.0.113.9") == "203.0.113.9"


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [([], ["--no-proxy-headers"]), (["10.0.0.2", "10.0.1.0/24"], ["--proxy-headers"])],
)
def test_the_proxy_options_follow_the_setting(
    settings: Any, allowed: list[str], expected: list[str]
) -> None:
    settings.FORWARDED_ALLOW_IPS = allowed
    args = uvicorn_args(["--port", "9"])
    assert args[1] == expected[0] and args[-2:] == ["--port", "9"]
    if allowed:
        assert args[2:4] == ["--forwarded-allow-ips", "10.0.0.2,10.0.1.0/24"]


def test_the_procfile_image_and_compose_start_the_web_server_through_it() -> None:
    root = Path(__file__).resolve().parents[2]
    web = [line for line in (root / "Procfile").read_text().splitlines() if line.startswith("web:")]
    assert len(web) == 1 and "-m config.serve" in web[0]
    assert '"-m", "config.serve"' in (root / "Dockerfile").read_text()
    compose = (root / "docker-compose.yml").read_text()
    assert "python -m config.serve" in compose and "FORWARDED_ALLOW_IPS" in compose
    for text in (web[0], (root / "Dockerfile").read_text(), compose):
        assert "uvicorn config.asgi" not in text and '"uvicorn"' not in text
