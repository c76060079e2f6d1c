"""`load_demo` prints an invite link that opens on the port `make demo` serves."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def _invites(**options: object) -> list[str]:
    """The invite links printed: the demo campaign's, then the Japanese campaign's."""
    out = io.StringIO()
    call_command("load_demo", stdout=out, **options)
    lines = [line for line in out.getvalue().splitlines() if "invite link" in line]
    return [line.split(": ", 1)[1] for line in lines]


def _invite(**options: object) -> str:
    crowdworker, japanese = _invites(**options)
    assert japanese.split("/chat/join/")[0] == crowdworker.split("/chat/join/")[0]
    assert japanese.endswith("worker_id=demo-worker-ja-1")
    return crowdworker


def test_the_invite_link_uses_web_port_and_host(monkeypatch) -> None:
    monkeypatch.setenv("WEB_PORT", "8765")
    monkeypatch.setenv("WEB_HOST", "0.0.0.0")
    assert _invite().startswith("http://127.0.0.1:8765/chat/join/")


def test_the_invite_link_defaults_to_8000_and_an_explicit_base_url_wins(monkeypatch) -> None:
    monkeypatch.delenv("WEB_PORT", raising=False)
    monkeypatch.delenv("WEB_HOST", raising=False)
    assert _invite().startswith("http://127.0.0.1:8000/chat/join/")
    assert _invite(base_url="https://study.example.org/").startswith(
        "https://study.example.org/chat/join/"
    )
