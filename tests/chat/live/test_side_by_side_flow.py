"""The side-by-side page through the real ASGI app: both replies stream at once in one
response, and no system's name, model or alias reaches any response of the live endpoints."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from chat.models import Backend, Campaign, CampaignBackend, Participant, SideBySide, Vote
from chat.services import scenario_assignment
from core.access import Role
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.live.asgi_server import ServerThread
from tests.chat.live.conftest import browser, run, session_cookies
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SECRETS = (
    "Qwen-Secret-7B",
    "Llama-Hidden-13B",
    "model-left-x",
    "model-right-y",
    "别名甲",
    "别名乙",
)


def _setup(fake: FakeOpenAI, **fields: Any) -> tuple[Participant, SideBySide]:
    dataset = DatasetFactory(skill=skill("chitchat"))
    SampleFactory(dataset=dataset, skill=skill("chitchat"))
    campaign = Campaign.objects.create(
        name="并排流式",
        mode=Campaign.Mode.SIDE_BY_SIDE,
        status=Campaign.Status.ACTIVE,
        max_turns=3,
        **fields,
    )
    campaign.skills.add(skill("chitchat"))
    campaign.datasets.add(dataset)
    for name, model, alias in (
        ("Qwen-Secret-7B", "model-left-x", "别名甲"),
        ("Llama-Hidden-13B", "model-right-y", "别名乙"),
    ):
        backend = Backend.objects.create(
            name=name,
            adapter=Backend.Adapter.OPENAI,
            config={"base_url": fake.base_url, "model": model, "max_retries": 0},
            timeout_s=5,
            concurrency_limit=10,
        )
        CampaignBackend.objects.create(campaign=campaign, backend=backend, alias=alias)
    user = make_user("sasha", Role.CROWDWORKER)
    participant = Participant.objects.create(campaign=campaign, user=user, external_id="sasha")
    left = scenario_assignment.scenario_assign_next(participant=participant)
    assert left is not None
    return participant, SideBySide.objects.get(left=left)


def _without_csrf(html: str) -> str:
    """A fragment without its CSRF tokens (masked afresh on every render)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def _no_secret(body: str, where: str) -> None:
    for secret in SECRETS:
        assert secret.casefold() not in body.casefold(), f"{secret} in {where}"


async def _send(
    client: httpx.AsyncClient, pk: int, text: str
) -> tuple[str, list[tuple[str, float]]]:
    """The send's whole streamed answer, and when each event arrived."""
    raw, arrivals, buffer = "", [], ""
    headers = {"Accept": "text/event-stream"}
    url = f"/chat/work/side-by-side/{pk}/send/"
    async with client.stream("POST", url, data={"text": text}, headers=headers) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_text():
            raw += chunk
            buffer += chunk
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                name = next(line[7:] for line in block.split("\n") if line.startswith("event: "))
                arrivals.append((name, time.monotonic()))
    return raw, arrivals


def test_both_sides_stream_at_once_and_no_identity_leaves(asgi_server: ServerThread) -> None:
    with FakeOpenAI(reply="今天天气很好，适合出去走走，你觉得呢？", token_delay=0.03) as fake:
        participant, conversation = _setup(fake, reveal_after_vote=False)
        cookies = session_cookies(participant.user)

        async def flow() -> None:
            async with browser(asgi_server, cookies) as client:
                page = await client.get(f"/chat/work/side-by-side/{conversation.pk}/")
                assert page.status_code == 200
                _no_secret(page.text, "the page")
                # The single chat's URL of either side leads to the conversation's page.
                single = await client.get(f"/chat/work/dialogues/{conversation.right_id}/")
                assert single.status_code == 302
                assert single.headers["location"].endswith(f"/side-by-side/{conversation.pk}/")

                raw, arrivals = await _send(client, conversation.pk, "你好，今天天气怎么样？")
                _no_secret(raw, "the send's stream")
                names = [name for name, _ in arrivals]
                assert names[0] == "sent" and names[-1] == "controls"
                first = dict(reversed(arrivals))
                # Both columns stream at once: each side's first chunk before either is saved.
                saved = min(first["a:saved"], first["b:saved"])
                assert first["a:chunk"] < saved and first["b:chunk"] < saved
                assert fake.max_in_flight == 2
                # The send's controls (built from the replies' states and the votes it read)
                # are the ones the controls view reads and renders now.
                sent_controls = json.loads(raw.rsplit("event: controls\ndata: ", 1)[1])["html"]
                fresh = await client.get(f"/chat/work/side-by-side/{conversation.pk}/controls/")
                assert "vote-panel" in sent_controls
                assert _without_csrf(sent_controls) == _without_csrf(fresh.text)

                for side in ("a", "b"):
                    stream = await client.get(
                        f"/chat/work/side-by-side/{conversation.pk}/stream/{side}/"
                    )
                    assert stream.status_code == 200
                    _no_secret(stream.text, f"stream {side}")
                    assert f"event: {side}:saved" in stream.text

                vote = await client.post(
                    f"/chat/work/side-by-side/{conversation.pk}/vote/",
                    data={"outcome": "a", "reason": "更具体"},
                    headers={"HX-Request": "true"},  # as the vote panel posts
                )
                assert vote.status_code == 200
                _no_secret(vote.text, "the vote's answer")
                controls = await client.get(f"/chat/work/side-by-side/{conversation.pk}/controls/")
                _no_secret(controls.text, "the controls")
                # The vote's answer (built from what the vote read) is what a fresh read shows.
                assert "vote-panel" not in vote.text
                assert _without_csrf(vote.text) == _without_csrf(controls.text)
                page = await client.get(f"/chat/work/side-by-side/{conversation.pk}/")
                _no_secret(page.text, "the page after the vote")

        run(flow())
    vote = Vote.objects.get()
    assert (vote.turn, vote.outcome, vote.reason) == (1, "a", "更具体")
    assert vote.system_a_id == conversation.left.backend_id


def test_names_are_revealed_after_the_vote_at_the_end_when_the_campaign_says_so(
    asgi_server: ServerThread,
) -> None:
    with FakeOpenAI(reply="好的，我们聊聊吧。") as fake:
        participant, conversation = _setup(
            fake, reveal_after_vote=True, vote_timing=Campaign.VoteTiming.END
        )
        cookies = session_cookies(participant.user)
        left_name = conversation.left.backend.name

        async def flow() -> None:
            async with browser(asgi_server, cookies) as client:
                raw, _ = await _send(client, conversation.pk, "你好，今天天气怎么样？")
                _no_secret(raw, "the send's stream")
                assert 'id=\\"vote-panel\\"' in raw  # the vote at the end is open now
                vote = await client.post(
                    f"/chat/work/side-by-side/{conversation.pk}/vote/", data={"outcome": "tie"}
                )
                assert left_name in vote.text and 'id="revealed"' in vote.text

        run(flow())


def test_a_failed_side_is_retried_alone_and_says_nothing_of_the_backend(
    asgi_server: ServerThread,
) -> None:
    with FakeOpenAI(reply="好的，我们聊聊吧。", fail_times=1, fail_status=500) as fake:
        participant, conversation = _setup(fake)
        cookies = session_cookies(participant.user)

        async def flow() -> tuple[str, str, str]:
            async with browser(asgi_server, cookies) as client:
                raw, arrivals = await _send(client, conversation.pk, "你好，今天天气怎么样？")
                names = {name for name, _ in arrivals}
                failed = next(side for side in "ab" if f"{side}:failed" in names)
                other = "b" if failed == "a" else "a"
                assert f"{other}:saved" in names
                retry = await client.post(
                    f"/chat/work/side-by-side/{conversation.pk}/retry/{failed}/"
                )
                assert retry.status_code == 200
                assert f'id="reply-pending-{failed}"' in retry.text
                stream = await client.get(
                    f"/chat/work/side-by-side/{conversation.pk}/stream/{failed}/"
                )
                return raw, retry.text, stream.text

        raw, retried, streamed = run(flow())
    for where, body in (("send", raw), ("retry", retried), ("stream", streamed)):
        _no_secret(body, where)
    assert "/retry/" in raw and "saved" in streamed
    assert fake.completed >= 2
