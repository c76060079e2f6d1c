"""A chat stream keeps its cadence while the same web process takes a large upload (issue 23
item 3): the upload's multipart body is parsed off the event loop, so the loop keeps sending
the stream's events during the parse instead of stalling for as long as the parse takes."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from django.http.multipartparser import MultiPartParser

from core.access import Role
from tests.chat.live.conftest import browser, read_events, run, send, session_cookies
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REPLY = "陈凯歌导演的《霸王别姬》讲的是两位京剧艺人半个世纪的故事，" * 4  # ~6 s at 40 ms a token
UPLOAD_BYTES = 80 * 1024 * 1024  # datasets may be 200 MB
# Added to each parse, in the parsing thread: a fast machine parses 80 MB in less than the
# stream's own gap between events (~0.1 s), which could not tell a blocked loop from a busy one.
# A parse that blocks whichever thread runs it for this long can.
PARSE_EXTRA_S = 0.6


def _record_parses(monkeypatch) -> list[dict]:
    parses: list[dict] = []
    parse = MultiPartParser.parse

    def timed(self):
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        start = time.monotonic()
        try:
            time.sleep(PARSE_EXTRA_S)
            return parse(self)
        finally:
            parses.append({"start": start, "end": time.monotonic(), "on_loop": on_loop})

    monkeypatch.setattr(MultiPartParser, "parse", timed)
    return parses


def _upload(base_url: str, cookies: dict[str, str], result: dict) -> None:
    """A researcher's dataset upload, from its own thread (a client on the test's loop would
    delay reading the stream while it sends 80 MB)."""
    with httpx.Client(base_url=base_url, cookies=cookies, timeout=120) as client:
        response = client.post(
            "/chat/datasets/upload/",
            headers={"X-CSRFToken": cookies["csrftoken"]},
            data={"name": "big"},
            files={"file": ("big.jsonl", b"x" * UPLOAD_BYTES, "application/octet-stream")},
        )
    result["status"] = response.status_code


def test_a_chat_stream_keeps_its_cadence_during_a_large_upload(
    asgi_server, fake_openai, make_chat, monkeypatch
):
    chat = make_chat()
    worker_cookies = session_cookies(chat.worker)
    researcher_cookies = session_cookies(make_user("rhea", Role.RESEARCHER))
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.04)
    parses = _record_parses(monkeypatch)
    uploaded: dict = {}

    async def flow():
        async with browser(asgi_server, worker_cookies) as client:
            sent = await send(client, chat.dialogue.pk, "你看过《霸王别姬》吗？")
            reading = asyncio.create_task(read_events(client, chat.dialogue.pk))
            await asyncio.sleep(0.5)  # the reply is streaming
            uploader = threading.Thread(
                target=_upload, args=(asgi_server.url, researcher_cookies, uploaded)
            )
            uploader.start()
            events = await reading
            await asyncio.to_thread(uploader.join, 120)
            return sent, events

    sent, events = run(flow())
    assert sent.status_code == 200
    assert uploaded["status"] < 500
    assert events[-1].name == "saved"
    assert "".join(e.data for e in events if e.name == "chunk") == REPLY
    (parse,) = [p for p in parses if p["end"] - p["start"] > 0.05]
    duration = parse["end"] - parse["start"]
    arrivals = [e.at for e in events]
    assert arrivals[0] < parse["start"] and parse["end"] < arrivals[-1], (
        "the upload must be parsed while the reply streams"
    )
    # The longest wait for the stream's next event around the parse. Parsed on the loop, the
    # loop sends nothing for the whole parse, so some gap is at least its duration; off the loop
    # the gaps keep the reply's own cadence.
    gaps = [
        later - earlier
        for earlier, later in zip(arrivals, arrivals[1:], strict=False)
        if later >= parse["start"] and earlier <= parse["end"]
    ]
    assert max(gaps) < duration / 2, (max(gaps), duration)
    assert not parse["on_loop"]
