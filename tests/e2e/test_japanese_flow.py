"""A Japanese study in a real browser: a crowdworker whose browser is set to English joins a
Japanese campaign and chats in Japanese; a Japanese expert rates with seed 004's rubric.

Screenshots are checked for tofu (missing glyphs): every character on the page must be covered
by an installed font (fontconfig is what Chromium falls back through on Linux), and the page's
Japanese text must be drawn with a Japanese font, not the Chinese one.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from annotation.models import Assignment, Rating
from chat.models import Backend, Campaign, CampaignBackend, Dialogue, Turn
from core.access import Role
from tests.annotation.factories import dialogue_with_turns, single_rater_job
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

REPLY = "2001年公開の宮崎駿監督の作品で、ベルリン国際映画祭の金熊賞も受賞しています。"
GROUNDING = {
    "knowledge": [
        ["千と千尋の神隠し", "監督", "宮崎駿"],
        ["千と千尋の神隠し", "公開年", "2001年"],
        ["千と千尋の神隠し", "受賞", "第52回ベルリン国際映画祭 金熊賞"],
    ],
    "goal": ["START", "千と千尋の神隠し", "宮崎駿"],
}
UTTERANCE = "『千と千尋の神隠し』を見たことはありますか？"


def uncovered_characters(text: str) -> list[str]:
    """Characters of `text` that no installed font has a glyph for (they would show as tofu)."""
    chars = sorted({c for c in text if ord(c) > 0x7F and not c.isspace()})

    def covered(group: list[str]) -> bool:
        charset = " ".join(f"{ord(c):x}" for c in group)
        result = subprocess.run(
            ["fc-list", f":charset={charset}", "family"], capture_output=True, text=True
        )
        return bool(result.stdout.strip())

    if not chars or covered(chars):
        return []
    return [c for c in chars if not covered([c])]


async def rendering_fonts(page, selector: str) -> set[str]:
    """The platform fonts Chromium actually used for the text in `selector` (DevTools)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("DOM.enable")
    await cdp.send("CSS.enable")
    root = await cdp.send("DOM.getDocument", {"depth": -1})
    node = await cdp.send(
        "DOM.querySelector", {"nodeId": root["root"]["nodeId"], "selector": selector}
    )
    fonts = await cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})
    return {f["familyName"] for f in fonts["fonts"]}


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
    with FakeOpenAI(reply=REPLY, token_delay=0.03) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _fontconfig():
    if shutil.which("fc-list") is None:
        pytest.skip("fontconfig (fc-list) is not installed")


def _japanese_campaign(model: FakeOpenAI) -> Campaign:
    backend = Backend.objects.create(
        name="secret-ja-model",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": model.base_url, "model": "fake-model", "max_retries": 0},
        timeout_s=5,
    )
    dataset = DatasetFactory(skill=skill("knowledge"), language="ja")
    SampleFactory(dataset=dataset, skill=skill("knowledge"), grounding=GROUNDING)
    campaign = Campaign.objects.create(
        name="日本語の知識対話",
        status=Campaign.Status.ACTIVE,
        interface_language="ja",
        instructions={
            "knowledge": {
                "ja": "左側の知識に沿ってモデルと会話し、使った知識にチェックを付けてください。",
                "zh-hans": "请围绕左侧的知识聊天。",
            }
        },
    )
    campaign.skills.add(skill("knowledge"))
    campaign.datasets.add(dataset)
    CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="モデル A")
    return campaign


def test_a_crowdworker_with_an_english_browser_chats_in_a_japanese_campaign(
    run_in_browser, server, model
):
    campaign = _japanese_campaign(model)
    invite = f"{server.url}/chat/join/{campaign.invite_token}/?PROLIFIC_PID=ja-worker"

    async def flow(page):
        seen = {}
        await page.goto(invite)
        seen["join_lang"] = await page.get_attribute("html", "lang")
        seen["join"] = await page.locator("main").inner_text()
        async with page.expect_navigation():  # confirm the join (the login is a POST)
            await page.get_by_role("button", name="開始", exact=True).click()
        # ... and it lands in the chat, welcomed in Japanese
        seen["home"] = await page.locator("main").inner_text()
        seen["counter"] = await page.locator("#turn-counter").inner_text()
        seen["placeholder"] = await page.locator("#utterance").get_attribute("placeholder")

        box = page.locator("#utterance")
        await box.fill(UTTERANCE)
        # Enter that confirms a Japanese IME conversion must not send the message.
        await box.dispatch_event("keydown", {"key": "Enter", "keyCode": 229, "isComposing": True})
        seen["turns_after_ime_enter"] = await page.locator("#turns .turn").count()
        await box.press("Enter")
        await page.locator("#turns .turn-system:not(.pending)").wait_for()
        await page.locator("#reply-pending").wait_for(state="detached")
        seen["bubbles"] = await page.locator("#turns .turn .bubble").all_inner_texts()
        for checkbox in await page.locator("#grounding input[type=checkbox]").all():
            async with page.expect_response(lambda r: r.url.endswith("/grounding/")):
                await checkbox.check()
        await page.locator("#finish-button:not([disabled])").wait_for()
        seen["status"] = await page.locator("#chat-status").inner_text()
        seen["chat_text"] = await page.locator("body").inner_text()
        seen["chat_fonts"] = await rendering_fonts(page, "#turns .turn .bubble")
        await screenshot(page, "ja-chat-knowledge")

        await page.reload()  # what was said and ticked survives a reload, in Japanese
        seen["reload_bubbles"] = await page.locator("#turns .turn .bubble").all_inner_texts()
        seen["reload_lang"] = await page.get_attribute("html", "lang")
        await page.set_viewport_size({"width": 390, "height": 844})  # a phone
        seen["phone_overflow"] = await page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        await screenshot(page, "ja-chat-phone")
        await page.set_viewport_size({"width": 1366, "height": 820})
        async with page.expect_navigation():
            await page.locator("#finish-button").click()
        seen["completion_lang"] = await page.get_attribute("html", "lang")
        seen["completion"] = await page.locator("main").inner_text()
        seen["code"] = await page.locator("#completion-code").inner_text()
        seen["completion_text"] = await page.locator("body").inner_text()
        await screenshot(page, "ja-chat-completion")
        return seen

    seen = run_in_browser(flow, locale="en-US")
    assert seen["join_lang"] == "ja" and "「日本語の知識対話」に参加" in seen["join"]
    assert "「日本語の知識対話」へようこそ！" in seen["home"]
    assert seen["counter"] == "第 1 / 10 ターン"
    assert seen["turns_after_ime_enter"] == 0
    assert seen["bubbles"] == [UTTERANCE, REPLY] == seen["reload_bubbles"]
    assert seen["reload_lang"] == "ja"
    assert seen["phone_overflow"] <= 0  # Japanese text wraps on a 390 px phone
    assert "使用した情報 5 / 5" in seen["status"]  # 3 triples and the 2 topics of the path
    assert "モデル A" in seen["chat_text"] and "secret-ja-model" not in seen["chat_text"]
    assert "Noto Sans CJK JP" in seen["chat_fonts"], seen["chat_fonts"]
    assert seen["completion_lang"] == "ja"
    assert "ご参加ありがとうございました" in seen["completion"]
    assert seen["code"] == campaign.completion_code
    for text in (seen["chat_text"], seen["completion_text"]):
        assert not uncovered_characters(text), uncovered_characters(text)

    dialogue = Dialogue.objects.get(campaign=campaign)
    assert dialogue.status == Dialogue.Status.SUBMITTED
    assert [(t.speaker, t.text) for t in dialogue.turns.all()] == [
        (Turn.Speaker.USER, UTTERANCE),
        (Turn.Speaker.SYSTEM, REPLY),
    ]


def test_a_japanese_expert_rates_with_the_seed_004_open_track_rubric(run_in_browser, live_server):
    expert = make_user("kenji", Role.EXPERT)
    worker = make_user("hanako", Role.CROWDWORKER)
    campaign = Campaign.objects.create(
        name="対話コンペ 3 オープントラック", interface_language="ja"
    )
    campaign.skills.add(skill("chitchat"))
    dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        skill_key="chitchat",
        alias="システム A",
        texts=[
            ("user", "こんにちは。最近、映画を見に行きましたか？"),
            ("system", "先週『君の名は。』を見直しました。映像がとてもきれいですね。"),
            ("user", "新海誠監督の作品ですよね。音楽もいいですよね。"),
            ("system", "そうですね。RADWIMPS の曲が場面によく合っていました。"),
        ],
    )
    Dialogue.objects.filter(campaign=campaign).update(grounding={})
    job = single_rater_job(
        name="オープントラックの評定", campaign=campaign, rubric_key="dslc3-open", rater=expert
    )
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "kenji", "pw-123456")
        seen["home_lang"] = await page.get_attribute("html", "lang")
        async with page.expect_navigation():
            await page.locator("a", has_text="評定を続ける").first.click()
        seen["questions"] = await page.locator(".q-label").all_inner_texts()
        seen["xofy"] = await page.locator("#xofy").inner_text()
        for key in ("4", "3"):  # whole points by digit keys
            async with page.expect_response(lambda r: "/answer/" in r.url):
                await page.keyboard.press(key)
        seen["offered"] = await page.locator("#q-topic_providing input[type=radio]").evaluate_all(
            "inputs => inputs.map(i => i.value)"
        )
        async with page.expect_response(lambda r: "/answer/" in r.url):  # a half point
            await page.locator('#q-topic_providing input[value="4.5"]').check()
        seen["answered"] = await page.locator("#answered-count").inner_text()
        seen["page_text"] = await page.locator("body").inner_text()
        seen["fonts"] = await rendering_fonts(page, "main h1")
        await screenshot(page, "ja-annotate-dslc3-open")
        async with page.expect_navigation():
            await page.keyboard.press("Enter")
        seen["done"] = await page.locator("main").inner_text()
        await screenshot(page, "ja-annotate-done")
        return seen

    seen = run_in_browser(flow, locale="ja-JP")
    assert seen["home_lang"] == "ja"
    labels = " ".join(seen["questions"])
    assert "自然性：対話が自然かどうか" in labels
    assert "話題追従：システムはユーザが選択した話題に関して適切に応答できたかどうか" in labels
    assert (
        "話題提供：システムはユーザが選択した話題に関して新たな情報を提供できたかどうか" in labels
    )
    assert seen["xofy"] == "1 / 1 件目"
    # seed 004's published scores have half points: the 5-point scale steps by 0.5
    assert seen["offered"] == ["1", "1.5", "2", "2.5", "3", "3.5", "4", "4.5", "5"]
    assert "Noto Sans CJK JP" in seen["fonts"], seen["fonts"]
    assert not uncovered_characters(seen["page_text"]), uncovered_characters(seen["page_text"])
    assert "ありがとうございました" in seen["done"]
    ratings = Rating.objects.filter(assignment__job=job)
    assert {r.question: r.value for r in ratings} == {
        "naturalness": 4.0,
        "topic_following": 3.0,
        "topic_providing": 4.5,
    }
    assert Assignment.objects.get(job=job).status == Assignment.Status.SUBMITTED
