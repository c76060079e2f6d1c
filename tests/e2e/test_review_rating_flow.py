"""An expert reviews a dialogue, then rates it with the keyboard on the MSDE rubric."""

import pytest

from annotation.models import Assignment, Rating
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


def test_an_expert_reviews_then_rates_with_the_keyboard_and_answers_survive_a_reload(
    run_in_browser, live_server
):
    expert = make_user("eddie", Role.EXPERT)
    worker = make_user("cora", Role.CROWDWORKER)
    make_user("rita", Role.RESEARCHER)
    campaign = CampaignFactory(name="知识对话评测")
    dialogue = dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.SUBMITTED,
        skill_key="knowledge",
        alias="模型 A",
        texts=[
            ("user", "你好，最近在看什么电影？"),
            ("system", "在看《流浪地球》，导演是郭帆，你看过吗？"),
            ("user", "看过，特效很好。<script>alert(1)</script>"),
            ("system", "是的，它改编自刘慈欣的同名小说。"),
        ],
    )
    job = single_rater_job(name="MSDE 知识对话", campaign=campaign, rubric_key="msde", rater=expert)
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "eddie", "pw-123456")
        await page.goto(f"{base}/annotation/review/next/")
        await screenshot(page, "review-dialogue")
        seen["review_alias"] = await page.locator(".meta strong").inner_text()
        async with page.expect_navigation():
            await page.keyboard.press("a")  # accept
        await page.goto(f"{base}/")
        async with page.expect_navigation():
            await page.locator("a", has_text="继续评分").first.click()
        seen["xofy"] = await page.locator("#xofy").inner_text()
        # MSDE knowledge: info, coh, know — answered by digits, each autosaved.
        for key in ("2", "1", "2"):
            async with page.expect_response(lambda r: "/answer/" in r.url):
                await page.keyboard.press(key)
        await page.wait_for_selector("#q-know .q-status .ok")
        await page.keyboard.press("k")  # back to coh
        async with page.expect_response(lambda r: "/answer/" in r.url):
            await page.keyboard.press("0")  # revise coh
        await page.reload()
        seen["after_reload"] = {
            key: await page.locator(f"#q-{key} input:checked").get_attribute("value")
            for key in ("info", "coh", "know")
        }
        seen["answered"] = await page.locator("#answered-count").inner_text()
        await page.locator("#q-info input:checked").focus()
        await screenshot(page, "annotate-msde")
        async with page.expect_navigation():
            await page.keyboard.press("Enter")
        seen["done"] = await page.locator("h1").inner_text()
        seen["done_text"] = await page.locator(".card p").first.inner_text()

        await page.context.clear_cookies()
        await login(page, base, "rita", "pw-123456")
        await page.goto(f"{base}/annotation/jobs/{job.pk}/")
        seen["rater_row"] = await page.locator("#rater-table tbody tr").first.inner_text()
        await screenshot(page, "job-detail")
        return seen

    seen = run_in_browser(flow)
    assert seen["review_alias"] == "模型 A"
    assert seen["xofy"] == "第 1 / 1 条"
    assert seen["after_reload"] == {"info": "2", "coh": "0", "know": "2"}
    assert seen["answered"] == "已答 3 / 3 题"
    assert seen["done"] == "MSDE 知识对话"
    assert "都已完成" in seen["done_text"]
    assert seen["rater_row"].split()[:5] == ["eddie", "可评分", "1", "1", "0"]
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.ACCEPTED
    assignment = Assignment.objects.get(job=job, rater=expert)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert {r.question: r.value for r in Rating.objects.filter(assignment=assignment)} == {
        "info": 2.0,
        "coh": 0.0,
        "know": 2.0,
    }


def test_yes_no_gates_come_first_on_the_seed_001_rubric(run_in_browser, live_server):
    expert = make_user("eddie", Role.EXPERT)
    campaign = CampaignFactory(name="单轮是非题")
    dialogue_with_turns(
        campaign=campaign,
        skill_key="chitchat",
        alias="系统 B",
        texts=[
            ("user", "周末有什么推荐的活动？"),
            ("system", "可以去爬山，空气好，还能锻炼身体。"),
        ],
    )
    job = single_rater_job(
        name="是非题评分", campaign=campaign, rubric_key="yesno-single-turn", rater=expert
    )
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "eddie", "pw-123456")
        await page.goto(f"{base}/annotation/rate/{job.pk}/next/")
        second_level = page.locator("#q-relevance_content input[type=radio]").first
        seen["locked_before"] = await second_level.is_disabled()
        async with page.expect_response(lambda r: "/answer/" in r.url):
            await page.keyboard.press("y")  # grammatical: yes
        async with page.expect_response(lambda r: "/answer/" in r.url):
            await page.keyboard.press("n")  # unacceptable content: no
        seen["locked_after"] = await second_level.is_disabled()
        async with page.expect_response(lambda r: "/answer/" in r.url):
            await page.keyboard.press("y")  # relevance_content
        await page.wait_for_selector("#q-relevance_content .q-status .ok")
        await screenshot(page, "annotate-yesno")
        async with page.expect_response(lambda r: "/submit/" in r.url):
            await page.keyboard.press("Enter")
        seen["missing"] = await page.locator("#submit-error").inner_text()
        return seen

    seen = run_in_browser(flow)
    assert seen["locked_before"] is True
    assert seen["locked_after"] is False
    assert "relevance_logic" in seen["missing"] and "relevance_content" not in seen["missing"]
    assignment = Assignment.objects.get(job=job)
    answers = {r.question: r.value for r in Rating.objects.filter(assignment=assignment)}
    assert answers == {"grammatical": 1.0, "unacceptable": 0.0, "relevance_content": 1.0}
