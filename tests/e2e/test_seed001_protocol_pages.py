"""Seed 001's protocol in the browser: the unanswered-questions warning on the annotation page
and the "cannot continue" control on a live-rated chat (screenshots in var/screenshots)."""

import pytest

from annotation.models import Assignment
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import (
    CampaignFactory,
    dialogue_with_turns,
    single_rater_job,
)
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_unanswered_questions_are_warned_about_then_submitted_as_zero(run_in_browser, live_server):
    expert = make_user("eddie", Role.EXPERT)
    campaign = CampaignFactory(name="单轮是非题")
    dialogue_with_turns(
        campaign=campaign,
        skill_key="chitchat",
        texts=[("user", "周末有什么推荐的活动？"), ("system", "可以去爬山。")],
    )
    job = single_rater_job(
        name="是非题评分", campaign=campaign, rubric_key="yesno-single-turn", rater=expert
    )
    base = live_server.url

    async def flow(page):
        await login(page, base, "eddie", "pw-123456")
        await page.goto(f"{base}/annotation/rate/{job.pk}/next/")
        async with page.expect_response(lambda r: "/answer/" in r.url):
            await page.keyboard.press("y")
        async with page.expect_response(lambda r: "/submit/" in r.url):
            await page.keyboard.press("Enter")
        warning = await page.locator("#unanswered-warning").inner_text()
        await screenshot(page, "annotate-unanswered-warning")
        async with page.expect_navigation():
            await page.click("#confirm-unanswered")
        return warning

    warning = run_in_browser(flow)
    assert "未回答的问题计 0 分" in warning
    assert Assignment.objects.get(job=job).status == Assignment.Status.SUBMITTED


def test_the_live_chat_offers_cannot_continue_on_a_phone(run_in_browser, live_server):
    worker = make_user("wang", Role.CROWDWORKER)
    campaign = CampaignFactory(name="多轮测试", rate_while_chatting=True, min_turns=3)
    dialogue = dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        texts=[("user", "你喜欢看电影吗？"), ("system", "喜欢，最近在看科幻片。")],
    )
    base = live_server.url

    async def flow(page):
        await page.set_viewport_size({"width": 390, "height": 844})
        await login(page, base, "wang", "pw-123456")
        await page.goto(f"{base}/chat/work/dialogues/{dialogue.pk}/")
        counter = await page.locator("#turn-counter").inner_text()
        await screenshot(page, "chat-cannot-continue-390")
        async with page.expect_navigation():
            await page.click("#cannot-continue")
        return counter

    counter = run_in_browser(flow)
    assert "/ 5" in counter
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED and dialogue.cannot_continue
