"""The chat flow runs through the real ASGI app served by uvicorn on loopback.

httpx's `ASGITransport` collects the whole body before returning it, so it cannot show that a
reply streams, nor let a client leave mid-stream; uvicorn (what production runs) can. The
server runs in a thread of the test process, so it uses the test database; the tests are
transactional so the server's connections see what the test wrote.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client

from chat.models import Backend, Campaign, CampaignBackend, Dialogue, Participant, Turn
from core.access import Role
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.conftest import make_user

GROUNDING = {
    "knowledge": [["霸王别姬", "导演", "陈凯歌"], ["霸王别姬", "上映时间", "1993年"]],
    "goal": [["START", "霸王别姬", "陈凯歌"]],
}


@pytest.fixture
def asgi_server(transactional_db) -> Iterator[ServerThread]:
    server = ServerThread().start()
    try:
        yield server
    finally:
        server.stop()
        drop_other_connections()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply="陈凯歌导演的，1993年上映。") as server:
        yield server


@dataclass
class ChatSetup:
    campaign: Campaign
    backend: Backend
    worker: User
    participant: Participant
    dialogue: Dialogue


@pytest.fixture
def make_chat(fake_openai: FakeOpenAI) -> Callable[..., ChatSetup]:
    """A campaign over one knowledge scenario and the fake model, a worker and their dialogue."""
    counter = iter(range(1000))

    def make(
        *,
        username: str = "cora",
        max_turns: int = 10,
        min_turns: int = 1,
        timeout_s: float = 5.0,
        grounding: dict[str, Any] | None = None,
        skill_key: str = "knowledge",
        **campaign_fields: Any,
    ) -> ChatSetup:
        n = next(counter)
        grounding = GROUNDING if grounding is None else grounding
        backend = Backend.objects.create(
            name=f"fake-openai-{n}",
            adapter=Backend.Adapter.OPENAI,
            config={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0},
            timeout_s=timeout_s,
            concurrency_limit=50,
        )
        dataset = DatasetFactory(skill=skill(skill_key))
        sample = SampleFactory(dataset=dataset, skill=skill(skill_key), grounding=grounding)
        campaign = Campaign.objects.create(
            name=f"知识对话采集-{n}",
            status=Campaign.Status.ACTIVE,
            max_turns=max_turns,
            min_turns=min_turns,
            instructions={skill_key: {"zh-hans": "请围绕知识聊天。", "en": "Chat about it."}},
            **campaign_fields,
        )
        campaign.skills.add(skill(skill_key))
        campaign.datasets.add(dataset)
        CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="模型 A")
        worker = make_user(username, Role.CROWDWORKER)
        participant = Participant.objects.create(
            campaign=campaign, user=worker, external_id=username
        )
        dialogue = Dialogue.objects.create(
            campaign=campaign,
            backend=backend,
            scenario=sample,
            skill=skill(skill_key),
            language="zh",
            worker=worker,
            grounding=grounding,
        )
        return ChatSetup(campaign, backend, worker, participant, dialogue)

    return make


def session_cookies(user: User) -> dict[str, str]:
    """Cookies of a logged-in browser session for `user`, with a CSRF token."""
    client = Client()
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value, "csrftoken": "t" * 32}


def browser(server: ServerThread, cookies: dict[str, str] | None) -> httpx.AsyncClient:
    """An htmx-like client; `cookies` from `session_cookies` (made before the event loop runs),
    None for an anonymous visitor."""
    return httpx.AsyncClient(
        base_url=server.url,
        cookies=cookies or {"csrftoken": "t" * 32},
        headers={"X-CSRFToken": "t" * 32, "HX-Request": "true"},
        timeout=30,
    )


@dataclass
class Event:
    name: str
    data: Any
    at: float  # time.monotonic() when it arrived


async def read_events(
    client: httpx.AsyncClient, dialogue_id: int, *, stop_after: int | None = None
) -> list[Event]:
    """The stream's events as they arrive; `stop_after` leaves after that many (a disconnect)."""
    import json

    events: list[Event] = []
    async with client.stream("GET", f"/chat/work/dialogues/{dialogue_id}/stream/") as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        buffer = ""
        async for text in response.aiter_text():
            buffer += text
            while "\n\n" in buffer:
                raw, buffer = buffer.split("\n\n", 1)
                fields = dict(line.split(": ", 1) for line in raw.split("\n"))
                events.append(Event(fields["event"], json.loads(fields["data"]), time.monotonic()))
                if stop_after is not None and len(events) >= stop_after:
                    return events
    return events


@dataclass
class Sent:
    """The answer to a send as the chat page's script reads it, up to its first event."""

    status_code: int
    headers: httpx.Headers
    text: str  # the refusal's HTML; for a streamed answer, the raw `sent` event
    data: dict[str, Any] | None  # the `sent` event's payload


async def send(client: httpx.AsyncClient, dialogue_id: int, text: str) -> Sent:
    """Send an utterance as the chat page does and leave after the `sent` event (as a browser
    whose connection breaks there would): the reply goes on; `read_events` follows it."""
    import json

    url = f"/chat/work/dialogues/{dialogue_id}/send/"
    headers = {"Accept": "text/event-stream"}
    async with client.stream("POST", url, data={"text": text}, headers=headers) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            body = (await response.aread()).decode()
            return Sent(response.status_code, response.headers, body, None)
        buffer = ""
        async for chunk in response.aiter_text():
            buffer += chunk
            if "\n\n" in buffer:
                raw = buffer.split("\n\n", 1)[0]
                fields = dict(line.split(": ", 1) for line in raw.split("\n"))
                assert fields["event"] == "sent", raw
                return Sent(response.status_code, response.headers, raw, json.loads(fields["data"]))
    raise AssertionError("the send's stream ended before its `sent` event")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def wait_for_turns(dialogue: Dialogue, count: int, timeout: float = 15.0) -> list[Turn]:
    deadline = time.monotonic() + timeout
    while True:
        turns = list(dialogue.turns.order_by("index"))
        if len(turns) >= count or time.monotonic() > deadline:
            return turns
        time.sleep(0.05)
