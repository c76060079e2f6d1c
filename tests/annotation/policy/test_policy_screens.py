"""The review-policy page and the job page's gold / quality sections in a real browser:
keyboard use, htmx swaps, screenshots at 1366×820."""

import pytest

from annotation.models import GoldItem, ReviewPolicy
from annotation.services.rating_jobs import job_create
from annotation.services.review import review_policy_set, review_submit
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_researcher_sets_the_review_policy_and_gold_items_in_the_browser(
    run_in_browser, live_server
):
    make_user("rita", Role.RESEARCHER)
    campaign = CampaignFactory(name="知识对话评测")
    waiting = [
        dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED) for _ in range(3)
    ]
    review_policy_set(campaign=campaign, reviewers_per_dialogue=3, decision_rule="all")
    reviewers = experts(2, prefix="rev")
    review_submit(dialogue=waiting[0], reviewer=reviewers[0], decision="accept")
    review_submit(dialogue=waiting[0], reviewer=reviewers[1], decision="accept")
    review_submit(dialogue=waiting[1], reviewer=reviewers[0], decision="accept")
    job = job_create(
        name="多轮是非题评分",
        campaign=campaign,
        rubric=rubric("yesno-multi-turn"),
        created_by=None,
        raters=experts(2, prefix="rater"),
        raters_per_dialogue=2,
        allow_below_minimum=True,
    )
    gold = dialogue_with_turns(
        campaign=campaign,
        skill_key="chitchat",
        texts=[
            ("user", "周末去哪儿玩？"),
            ("system", "可以去爬山，<b>天气</b>不错。"),
            ("user", "好主意"),
            ("system", "记得带水。"),
        ],
    )
    gold.external_id = "lccc-7"
    gold.save()
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "rita", "pw-123456")
        await page.goto(f"{base}/annotation/campaigns/{campaign.pk}/review-policy/")
        await page.fill("#id_reviewers_per_dialogue", "3")
        await page.check("input[name=decision_rule][value=majority]")
        await screenshot(page, "review-policy")
        await page.focus("#id_reviewers_per_dialogue")
        async with page.expect_navigation():
            await page.keyboard.press("Enter")
        seen["policy"] = await page.locator("#current-policy").inner_text()
        seen["row"] = await page.locator(f"#waiting-{waiting[0].pk}").inner_text()

        await page.goto(f"{base}/annotation/jobs/{job.pk}/")
        await page.fill("#id_gold_rate", "0.9")
        await page.click("#quality-form button[type=submit]")
        await page.wait_for_selector("#quality-error")
        seen["quality_error"] = await page.locator("#quality-error").inner_text()
        await page.fill("#id_gold_rate", "0.1")
        await page.click("#quality-form button[type=submit]")
        await page.wait_for_selector("#quality-error", state="detached")

        await page.fill("#id_dialogue", "lccc-7")
        await page.keyboard.press("Enter")  # loads the questions of this dialogue (htmx)
        await page.wait_for_selector("select[name='a-relevance_topic-t0']")
        seen["reply"] = await page.locator(".gold-reply").first.inner_text()
        await page.select_option("select[name='a-relevance_topic-t0']", "1")
        await page.select_option("select[name='a-divergence_new-t1']", "0")
        await screenshot(page, "job-gold-form")
        await page.click("#gold-answers button.primary")
        await page.wait_for_selector("#gold-table code")
        seen["table"] = await page.locator("#gold-table").inner_text()
        await page.evaluate("window.scrollTo(0, document.querySelector('#quality').offsetTop)")
        await screenshot(page, "job-gold-quality")
        return seen

    seen = run_in_browser(flow)
    assert "3" in seen["policy"] and "多数通过" in seen["policy"]
    assert "2 / 3" in seen["row"]
    policy = ReviewPolicy.objects.get(campaign=campaign)
    assert (policy.reviewers_per_dialogue, policy.decision_rule) == (3, "majority")
    assert "gold_rate：必须在 0 到 0.5 之间" in seen["quality_error"]
    job.refresh_from_db()
    assert job.quality_settings["gold_rate"] == 0.1
    assert seen["reply"] == "可以去爬山，<b>天气</b>不错。"  # model output stays text
    item = GoldItem.objects.get(job=job)
    assert item.dialogue == gold and len(item.answers) == 2
    assert "relevance_topic" in seen["table"] and "第 2 个模型回复" in seen["table"]
