"""Side-by-side chat in a real browser (uvicorn, Debian's Chromium): both columns stream at
once, no system's name reaches the DOM or any response, voting per turn and at the end, and the
phone layout (two panes with tabs, the hidden pane's tab showing that it streams)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chat.models import Backend, Campaign, CampaignBackend, Dialogue, SideBySide, Vote
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

REPLY = "我最喜欢秋天，天气凉快，树叶也很好看，适合出去散步。"
SECRETS = (
    "Qwen-Secret-7B",
    "Llama-Hidden-13B",
    "model-left-x",
    "model-right-y",
    "别名甲",
    "别名乙",
)


@pytest.fixture
def server(transactional_db) -> Iterator[ServerThread]:
    running = ServerThread().start()
    try:
        yield running
    finally:
        running.stop()
        drop_other_connections()


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=REPLY, token_delay=0.05) as fake:
        yield fake


def _campaign(model: FakeOpenAI, **fields: Any) -> Campaign:
    dataset = DatasetFactory(skill=skill("chitchat"))
    SampleFactory(dataset=dataset, skill=skill("chitchat"))
    campaign = Campaign.objects.create(
        name="并排对比采集",
        mode=Campaign.Mode.SIDE_BY_SIDE,
        status=Campaign.Status.ACTIVE,
        max_turns=3,
        min_turns=1,
        **fields,
    )
    campaign.skills.add(skill("chitchat"))
    campaign.datasets.add(dataset)
    for name, model_name, alias in (
        ("Qwen-Secret-7B", "model-left-x", "别名甲"),
        ("Llama-Hidden-13B", "model-right-y", "别名乙"),
    ):
        backend = Backend.objects.create(
            name=name,
            adapter=Backend.Adapter.OPENAI,
            config={"base_url": model.base_url, "model": model_name, "max_retries": 0},
            timeout_s=5,
        )
        CampaignBackend.objects.create(campaign=campaign, backend=backend, alias=alias)
    return campaign


async def _join(page: Any, server: ServerThread, campaign: Campaign, worker: str) -> None:
    await page.goto(f"{server.url}/chat/join/{campaign.invite_token}/?PROLIFIC_PID={worker}")
    async with page.expect_navigation():
        await page.get_by_role("button", name="开始", exact=True).click()
    await page.locator("#sbs").wait_for()


def _record_responses(page: Any) -> list[Any]:
    responses: list[Any] = []

    def keep(response: Any) -> None:
        responses.append(response)

    page.on("response", keep)
    return responses


async def _leaks(page: Any, responses: list[Any]) -> list[str]:
    """Every secret found in the DOM or in a response body (HTML, JSON, event streams)."""
    found = []
    bodies = [("DOM", await page.content())]
    from playwright.async_api import Error as PlaywrightError

    for response in responses:
        if 300 <= response.status < 400:
            continue  # a redirect has no body
        try:
            bodies.append((response.url, await response.text()))
        except PlaywrightError:  # a body the browser did not keep
            continue
    for where, body in bodies:
        for secret in SECRETS:
            if secret.casefold() in body.casefold():
                found.append(f"{secret} in {where}")
    return found


BOTH_STREAMING = """(n) => ['a', 'b'].every((side) => {
  const e = document.querySelector('#reply-pending-' + side + ' .reply-text');
  return e && e.textContent.length > 2 && e.textContent.length < n;
})"""


def test_both_columns_stream_at_once_and_a_vote_each_turn(run_in_browser, server, model):
    campaign = _campaign(model)

    async def flow(page):
        seen: dict[str, Any] = {}
        responses = _record_responses(page)
        await _join(page, server, campaign, "e2e-sbs-1")
        seen["path"] = page.url.removeprefix(server.url)
        await page.locator("#utterance").fill("你最喜欢哪个季节？")
        await page.locator("#utterance").press("Enter")
        # Both columns grow at the same time, before either reply is complete.
        await page.wait_for_function(BOTH_STREAMING, arg=len(REPLY))
        seen["partial"] = [
            await page.locator(f"#reply-pending-{side} .reply-text").inner_text() for side in "ab"
        ]
        for side in "ab":
            await page.locator(f"#reply-pending-{side}").wait_for(state="detached")
        await page.locator("#vote-panel").wait_for()
        seen["send_locked"] = await page.locator("#sbs-send").is_disabled()
        seen["columns"] = [
            await page.locator(f"#turns-{side} .turn .bubble").all_inner_texts() for side in "ab"
        ]
        seen["labels"] = await page.locator(".pane-title").all_inner_texts()
        await screenshot(page, "side-by-side-vote")
        await page.locator("#vote-reason").fill("B 更具体")
        async with page.expect_response(lambda r: r.url.endswith("/vote/")):
            await page.locator("#vote-b").click()
        await page.locator("#sbs-send:not([disabled])").wait_for()
        seen["vote_panel_after"] = await page.locator("#vote-panel").count()
        seen["votes_given"] = await page.locator("#votes-given").inner_text()
        seen["leaks"] = await _leaks(page, responses)
        async with page.expect_navigation():
            await page.locator("#finish-button").click()
        seen["after_finish"] = await page.locator("main").inner_text()
        seen["leaks_after_finish"] = await _leaks(page, responses)
        return seen

    seen = run_in_browser(flow)
    conversation = SideBySide.objects.get(campaign=campaign)
    assert seen["path"] == f"/chat/work/side-by-side/{conversation.pk}/"
    for partial in seen["partial"]:
        assert REPLY.startswith(partial) and 2 < len(partial) < len(REPLY)
    assert seen["send_locked"] is True
    assert seen["columns"] == [["你最喜欢哪个季节？", REPLY]] * 2
    assert seen["labels"] == ["A", "B"]
    assert seen["vote_panel_after"] == 0 and "1" in seen["votes_given"]
    assert seen["leaks"] == [] and seen["leaks_after_finish"] == []
    vote = Vote.objects.get()
    assert (vote.turn, vote.outcome, vote.reason) == (1, "b", "B 更具体")
    assert vote.system_a_id == conversation.left.backend_id
    assert set(Dialogue.objects.filter(campaign=campaign).values_list("status", flat=True)) == {
        Dialogue.Status.SUBMITTED
    }


def test_phone_layout_tabs_show_the_hidden_pane_streaming_and_the_vote_at_the_end(
    run_in_browser, server, model
):
    campaign = _campaign(model, vote_timing=Campaign.VoteTiming.END, reveal_after_vote=True)

    async def flow(page):
        seen: dict[str, Any] = {}
        await page.set_viewport_size({"width": 390, "height": 844})
        await _join(page, server, campaign, "e2e-sbs-2")
        seen["tabs_visible"] = await page.locator(".sbs-tabs").is_visible()
        seen["b_hidden"] = not await page.locator("#pane-b").is_visible()
        await page.locator("#utterance").fill("你最喜欢哪个季节？")
        await page.locator("#utterance").press("Enter")
        # The hidden pane streams too, and its tab says so.
        await page.wait_for_function(BOTH_STREAMING, arg=len(REPLY))
        seen["b_tab_streaming"] = await page.locator("#tab-b.streaming").count()
        await screenshot(page, "side-by-side-phone-streaming")
        for side in "ab":
            await page.locator(f"#reply-pending-{side}").wait_for(state="detached")
        await page.locator("#vote-panel").wait_for()
        seen["b_tab_after"] = await page.locator("#tab-b.streaming").count()
        await page.locator("#tab-b").click()
        seen["b_visible_after_tab"] = await page.locator("#pane-b").is_visible()
        seen["a_hidden_after_tab"] = not await page.locator("#pane-a").is_visible()
        seen["finish_before_vote"] = await page.locator("#finish-button").is_enabled()
        async with page.expect_response(lambda r: r.url.endswith("/vote/")):
            await page.locator("#vote-tie").click()
        await page.locator("#revealed").wait_for()
        seen["revealed"] = await page.locator("#revealed").inner_text()
        seen["finish_after_vote"] = await page.locator("#finish-button").is_enabled()
        await page.locator("#sbs-send[disabled]").wait_for()  # no turn after the vote
        seen["send_after_vote"] = await page.locator("#sbs-send").is_enabled()
        await screenshot(page, "side-by-side-phone-revealed")
        return seen

    seen = run_in_browser(flow)
    assert seen["tabs_visible"] and seen["b_hidden"]
    assert seen["b_tab_streaming"] == 1 and seen["b_tab_after"] == 0
    assert seen["b_visible_after_tab"] and seen["a_hidden_after_tab"]
    assert seen["finish_before_vote"] is False and seen["finish_after_vote"] is True
    assert seen["send_after_vote"] is False
    conversation = SideBySide.objects.get(campaign=campaign)
    assert conversation.left.backend.name in seen["revealed"]
    assert Vote.objects.get().outcome == "tie"
