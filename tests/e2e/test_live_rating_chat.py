"""A rate-while-chatting chat in a real browser (seed 001's multi-turn protocol): the worker's
own bubbles stay readable once the rating form appears, answering unlocks the composer, and
Back after 「完成」 never shows an open chat (screenshots in var/screenshots)."""

from __future__ import annotations

import re

import pytest

from annotation.selectors.rating import model_turns
from annotation.services.live import live_rating_save
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns
from tests.annotation.results.factories import MULTI_KEYS
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# The bubble's text colour and the first opaque background behind it, as the browser paints them.
COLOURS = """(selector) => {
  const bubble = document.querySelector(selector);
  const clear = (c) => c === "transparent" || /^rgba\\(.*, 0\\)$/.test(c);
  let node = bubble;
  while (node && clear(getComputedStyle(node).backgroundColor)) node = node.parentElement;
  const background = node ? getComputedStyle(node).backgroundColor : "rgb(255, 255, 255)";
  return [getComputedStyle(bubble).color, background];
}"""


def _rgb(css: str) -> tuple[float, float, float]:
    red, green, blue = (float(v) for v in re.findall(r"[\d.]+", css)[:3])
    return red, green, blue


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2.x contrast ratio of two CSS colours (relative luminance, sRGB)."""

    def luminance(css: str) -> float:
        def channel(value: float) -> float:
            c = value / 255
            return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

        red, green, blue = (channel(v) for v in _rgb(css))
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_contrast_ratio_matches_the_wcag_reference_values():
    assert contrast_ratio("rgb(255, 255, 255)", "rgb(0, 0, 0)") == pytest.approx(21.0)
    # white on the old light grey (#eef1f6) is the unreadable bubble
    assert contrast_ratio("rgb(255, 255, 255)", "rgb(238, 241, 246)") < 1.2


def test_the_workers_bubbles_stay_readable_with_the_rating_form_and_answers_unlock_sending(
    run_in_browser, live_server
):
    worker = make_user("li", Role.CROWDWORKER)
    campaign = CampaignFactory(name="边聊边评", rate_while_chatting=True, min_turns=1)
    dialogue = dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        skill_key="chitchat",
        texts=[("user", "你喜欢看电影吗？"), ("system", "喜欢，最近在看科幻片。")],
    )
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "li", "pw-123456")
        await page.goto(f"{base}/chat/work/dialogues/{dialogue.pk}/")
        await page.locator("form.live-rating").wait_for()
        seen["locked"] = await page.locator("#send-button").is_disabled()
        seen["hint"] = await page.locator("#finish-hint").inner_text()
        seen["user"] = await page.evaluate(COLOURS, ".turn-user .bubble")
        seen["model"] = await page.evaluate(COLOURS, ".turn-system .bubble")
        for key in MULTI_KEYS:
            radio = f"form.live-rating input[name={key}][value='1']"
            await page.locator(radio).check()
            # the server's form (the answer saved: rendered `checked`) has replaced the old one
            await page.locator(radio + "[checked]").wait_for()
        await page.locator("#send-button:not([disabled])").wait_for()
        seen["user_after"] = await page.evaluate(COLOURS, ".turn-user .bubble")
        await screenshot(page, "chat-live-rating")
        return seen

    seen = run_in_browser(flow)
    assert seen["locked"] is True and "8 个评分问题" in seen["hint"]
    for foreground, background in (seen["user"], seen["model"], seen["user_after"]):
        assert contrast_ratio(foreground, background) >= 4.5, (foreground, background)


def test_back_after_finish_shows_the_dialogue_submitted_not_an_open_chat(
    run_in_browser, live_server
):
    worker = make_user("zhao", Role.CROWDWORKER)
    campaign = CampaignFactory(name="边聊边评-完成", rate_while_chatting=True, min_turns=1)
    dialogue = dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        skill_key="chitchat",
        texts=[("user", "今天天气怎么样？"), ("system", "晴天，很适合出去走走。")],
    )
    (reply,) = model_turns(dialogue)
    live_rating_save(turn=reply, user=worker, answers=dict.fromkeys(MULTI_KEYS, 1))
    base = live_server.url
    chat_url = f"{base}/chat/work/dialogues/{dialogue.pk}/"

    async def flow(page):
        seen = {}
        await login(page, base, "zhao", "pw-123456")
        await page.goto(chat_url)
        seen["open"] = await page.locator("#send-button").is_enabled()
        async with page.expect_navigation():
            await page.locator("#finish-button").click()
        await page.go_back()
        await page.wait_for_load_state()
        seen["url"] = page.url
        seen["send_buttons"] = await page.locator("#send-button").count()
        seen["text"] = await page.locator("main").inner_text()
        await screenshot(page, "chat-back-after-finish")
        # A copy restored from the back/forward cache reloads itself (chat.js).
        async with page.expect_navigation():
            await page.evaluate(
                "window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))"
            )
        seen["reloaded"] = page.url
        return seen

    seen = run_in_browser(flow)
    assert seen["open"] is True
    assert seen["url"] == chat_url
    assert seen["send_buttons"] == 0 and "这个对话已提交" in seen["text"]
    assert seen["reloaded"] == chat_url
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED
