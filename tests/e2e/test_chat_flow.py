"""A crowdworker chats with a streaming model in a real browser, served by uvicorn (ASGI).

Django's `live_server` is a WSGI server, which cannot stream an async response, so these tests
serve `config.asgi.application` with uvicorn in a thread of the test process (same database).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat.models import Backend, Campaign, CampaignBackend, Dialogue, Turn
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

REPLY = "陈凯歌导演的，张国荣和巩俐主演，1993年上映，还拿了戛纳金棕榈奖。"
GROUNDING = {
    "knowledge": [
        ["霸王别姬", "导演", "陈凯歌"],
        ["霸王别姬", "主演", "张国荣"],
        ["霸王别姬", "获奖", "第46届戛纳国际电影节金棕榈奖"],
    ],
    "goal": [["START", "霸王别姬", "陈凯歌"]],
}


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
    with FakeOpenAI(reply=REPLY, token_delay=0.04) as fake:
        yield fake


def _campaign(model: FakeOpenAI) -> Campaign:
    backend = Backend.objects.create(
        name="secret-model-v2",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": model.base_url, "model": "fake-model", "max_retries": 0},
        timeout_s=5,
    )
    dataset = DatasetFactory(skill=skill("knowledge"))
    SampleFactory(dataset=dataset, skill=skill("knowledge"), grounding=GROUNDING)
    campaign = Campaign.objects.create(
        name="知识对话采集",
        status=Campaign.Status.ACTIVE,
        completion_url="https://example.org/done",
        instructions={
            "knowledge": {"zh-hans": "请围绕左侧的知识与话题路径聊天，用过的知识请勾选。"}
        },
    )
    campaign.skills.add(skill("knowledge"))
    campaign.datasets.add(dataset)
    CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="模型 A")
    return campaign


def test_a_worker_chats_ticks_grounding_reloads_and_finishes(run_in_browser, server, model):
    campaign = _campaign(model)
    invite = f"{server.url}/chat/join/{campaign.invite_token}/?PROLIFIC_PID=e2e-worker"

    async def flow(page):
        seen = {}
        await page.goto(invite)
        async with page.expect_navigation():  # confirm the join (the login is a POST)
            await page.get_by_role("button", name="开始", exact=True).click()
        # ... and it lands in the chat
        seen["path"] = page.url.removeprefix(server.url)
        seen["counter"] = await page.locator("#turn-counter").inner_text()

        box = page.locator("#utterance")
        await box.fill("你看过《霸王别姬》吗？")
        # Enter while an input method is composing picks a candidate: nothing is sent.
        await box.dispatch_event("keydown", {"key": "Enter", "keyCode": 229, "isComposing": True})
        await box.press("Shift+Enter")
        seen["after_ime_and_shift_enter"] = await box.input_value()
        seen["turns_before_send"] = await page.locator("#turns .turn").count()
        await box.fill("你看过《霸王别姬》吗？")
        await box.press("Enter")

        # The reply grows token by token before it is complete.
        reply = page.locator("#reply-pending .reply-text")
        await page.wait_for_function(
            "(n) => { const e = document.querySelector('#reply-pending .reply-text');"
            " return e && e.textContent.length > 3 && e.textContent.length < n; }",
            arg=len(REPLY),
        )
        seen["partial"] = await reply.inner_text()
        await page.locator("#reply-pending").wait_for(state="detached")
        seen["bubbles"] = await page.locator("#turns .turn .bubble").all_inner_texts()
        seen["counter_after"] = await page.locator("#turn-counter").inner_text()
        seen["finish_before_ticks"] = await page.locator("#finish-button").is_enabled()

        for checkbox in await page.locator("#grounding input[type=checkbox]").all():
            async with page.expect_response(lambda r: r.url.endswith("/grounding/")):
                await checkbox.check()
        await page.locator("#finish-button:not([disabled])").wait_for()
        seen["ticked"] = await page.locator("#chat-status .ticked").inner_text()
        await screenshot(page, "chat-knowledge")

        await page.reload()
        seen["reload_bubbles"] = await page.locator("#turns .turn .bubble").all_inner_texts()
        seen["reload_checked"] = await page.locator("#grounding input:checked").count()
        seen["reload_counter"] = await page.locator("#turn-counter").inner_text()
        seen["page_text"] = await page.locator("main").inner_text()

        await page.route("https://example.org/**", lambda route: route.fulfill(body="ok"))
        async with page.expect_navigation():
            await page.locator("#finish-button").click()
        seen["code"] = await page.locator("#completion-code").inner_text()
        await screenshot(page, "chat-completion")
        return seen

    seen = run_in_browser(flow)
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert seen["path"] == f"/chat/work/dialogues/{dialogue.pk}/"
    assert seen["counter"] == "第 1 / 10 轮"
    assert seen["after_ime_and_shift_enter"] == "你看过《霸王别姬》吗？\n"
    assert seen["turns_before_send"] == 0
    assert 3 < len(seen["partial"]) < len(REPLY) and REPLY.startswith(seen["partial"])
    assert seen["bubbles"] == ["你看过《霸王别姬》吗？", REPLY]
    assert seen["counter_after"] == "第 2 / 10 轮"
    assert seen["finish_before_ticks"] is False
    assert seen["ticked"] == "已用信息 5 / 5"
    assert seen["reload_bubbles"] == seen["bubbles"]
    assert seen["reload_checked"] == 5
    assert seen["reload_counter"] == "第 2 / 10 轮"
    assert "模型 A" in seen["page_text"] and "secret-model-v2" not in seen["page_text"]
    assert seen["code"] == campaign.completion_code

    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED
    assert [(t.speaker, t.text) for t in dialogue.turns.all()] == [
        (Turn.Speaker.USER, "你看过《霸王别姬》吗？"),
        (Turn.Speaker.SYSTEM, REPLY),
    ]


def test_a_backend_failure_shows_retry_and_retry_brings_the_reply(run_in_browser, server, model):
    campaign = _campaign(model)
    model.set_behaviour(fail_times=1, fail_status=500, reply="<b>不是粗体</b>，这是回复。")
    invite = f"{server.url}/chat/join/{campaign.invite_token}/?worker_id=e2e-2"

    async def flow(page):
        seen = {}
        await page.goto(invite)
        async with page.expect_navigation():  # confirm the join (the login is a POST)
            await page.get_by_role("button", name="开始", exact=True).click()
        # ... and it lands in the chat
        await page.locator("#utterance").fill("你好，你知道霸王别姬吗？")
        await page.locator("#utterance").press("Enter")
        await page.locator("#reply-failed").wait_for()
        seen["error"] = await page.locator("#reply-failed").inner_text()
        await screenshot(page, "chat-backend-error")
        await page.get_by_role("button", name="重试").click()
        await page.locator("#turns .turn-system:not(.pending)").wait_for()
        seen["bubbles"] = await page.locator("#turns .turn .bubble").all_inner_texts()
        seen["bold_tags"] = await page.locator("#turns .turn-system b").count()
        return seen

    seen = run_in_browser(flow)
    assert "暂时连不上模型服务" in seen["error"] and "重试" in seen["error"]
    assert seen["bubbles"] == ["你好，你知道霸王别姬吗？", "<b>不是粗体</b>，这是回复。"]
    assert seen["bold_tags"] == 0


def test_finish_works_right_after_a_streamed_reply_without_a_reload(run_in_browser, server, model):
    """The status bar with the finish form arrives in the stream's `saved` event: its CSRF
    token must be the page's, or 「完成」 answers 403 until the worker reloads."""
    backend = Backend.objects.create(
        name="secret-chitchat",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": model.base_url, "model": "fake-model", "max_retries": 0},
        timeout_s=5,
    )
    dataset = DatasetFactory(skill=skill("chitchat"))
    SampleFactory(dataset=dataset, skill=skill("chitchat"), grounding={})
    SampleFactory(dataset=dataset, skill=skill("chitchat"), grounding={})
    campaign = Campaign.objects.create(
        name="闲聊采集", status=Campaign.Status.ACTIVE, min_turns=1, max_turns=3
    )
    campaign.skills.add(skill("chitchat"))
    campaign.datasets.add(dataset)
    CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="模型 B")
    invite = f"{server.url}/chat/join/{campaign.invite_token}/?worker_id=e2e-csrf"

    async def flow(page):
        seen = {}
        await page.goto(invite)
        async with page.expect_navigation():  # confirm the join (the login is a POST)
            await page.get_by_role("button", name="开始", exact=True).click()
        # ... and it lands in the chat
        await page.locator("#utterance").fill("今天天气真好。")
        await page.locator("#utterance").press("Enter")
        await page.locator("#turns .turn-system:not(.pending)").wait_for()
        await page.locator("#finish-button:not([disabled])").wait_for()
        seen["token"] = await page.locator(
            "#chat-status input[name=csrfmiddlewaretoken]"
        ).get_attribute("value")
        async with page.expect_navigation():
            await page.locator("#finish-button").click()
        seen["url"] = page.url
        seen["code"] = await page.locator("#completion-code").inner_text()
        seen["continue"] = await page.locator("#continue").count()
        return seen

    seen = run_in_browser(flow)
    assert seen["token"]
    assert seen["url"].endswith(f"/chat/work/campaigns/{campaign.pk}/complete/")
    assert seen["code"] == campaign.completion_code
    assert seen["continue"] == 1  # another scenario is left: stop here or continue
    assert Dialogue.objects.get(campaign=campaign).status == Dialogue.Status.SUBMITTED
