"""An ACUTE-Eval job end to end in a real browser: a careless rater fails the onboarding pair
and is blocked, a careful one passes, compares two dialogues side by side with a reason per
question, and the researcher sees the votes, the onboarding results and the exclusion."""

import pytest

from annotation.models import Assignment, JobRater
from annotation.services.rating_jobs import gold_pair_set, job_open
from chat.models import Vote
from core.access import Role
from tests.annotation.pairwise.builders import acute_job, dialogue, study
from tests.chat.factories import SampleFactory
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTIONS = ("engaging", "interesting", "humanlike", "knowledgeable")


async def _answer(page, side_of, reason):
    for key in QUESTIONS:
        await page.locator(f"#q-{key} input[value='{side_of(key)}']").check()
        await page.fill(f"#reason-{key}", reason)
    async with page.expect_navigation():
        await page.locator("#submit-button").click()


def test_an_acute_job_with_an_onboarding_failure(run_in_browser, live_server):
    s = study(n_scenarios=1, n_systems=2, n_raters=2)
    careful, careless = s.raters
    for user in s.raters:
        user.set_password("pw-123456")
        user.save()
    make_user("rita", Role.RESEARCHER)
    scenario = SampleFactory()
    good = dialogue(s.campaign, s.systems[0], scenario, ["你好", "你好！今天过得怎么样？"])
    broken = dialogue(s.campaign, s.systems[1], scenario, ["你好", "的的的的 的的的的的"])
    job = acute_job(s, per_pair=1, name="ACUTE 闲聊")
    gold_pair_set(job=job, better=good, worse=broken, purpose="onboarding")
    job_open(job=job)
    base = live_server.url

    async def flow(page):
        seen = {}

        async def good_side():
            text = await page.locator("#dialogue-left").inner_text()
            return "left" if "今天过得怎么样" in text else "right"

        # The careless rater picks the broken dialogue in the onboarding pair.
        await login(page, base, careless.username, "pw-123456")
        await page.goto(f"{base}/annotation/rate/{job.pk}/next/")
        seen["onboarding_tag"] = await page.locator("#onboarding-tag").count()
        seen["judge"] = await page.locator("#judge-speaker").inner_text()
        wrong = "right" if await good_side() == "left" else "left"
        await _answer(page, lambda key: wrong, "随便选的")
        seen["careless_done"] = await page.locator(".card p.error").inner_text()

        # The careful rater passes, then compares a real pair.
        await page.context.clear_cookies()
        await login(page, base, careful.username, "pw-123456")
        await page.goto(f"{base}/annotation/rate/{job.pk}/next/")
        right = await good_side()
        await _answer(page, lambda key: right, "另一边答非所问")
        seen["real_has_onboarding_tag"] = await page.locator("#onboarding-tag").count()
        seen["columns"] = await page.locator(".pair-columns > section").count()
        await screenshot(page, "acute-compare")
        # A missing reason is refused, naming the question; nothing is stored.
        for key in QUESTIONS:
            await page.locator(f"#q-{key} input[value='left']").check()
            await page.fill(f"#reason-{key}", "左边更自然")
        await page.evaluate(
            "document.getElementById('reason-humanlike').removeAttribute('required')"
        )
        await page.fill("#reason-humanlike", "")
        async with page.expect_navigation():
            await page.locator("#submit-button").click()
        seen["refused"] = await page.locator("#submit-error").inner_text()
        await page.fill("#reason-humanlike", "左边像人在说话")
        async with page.expect_navigation():
            await page.locator("#submit-button").click()

        # The researcher sees onboarding results, the votes and the panel slot.
        await page.context.clear_cookies()
        await login(page, base, "rita", "pw-123456")
        await page.goto(f"{base}/annotation/jobs/{job.pk}/")
        seen["raters"] = await page.locator("#pairwise-raters tbody").inner_text()
        seen["votes_rows"] = await page.locator("#pairwise-votes tbody tr").count()
        seen["slot"] = await page.locator("#job-panels").count()
        await screenshot(page, "acute-job")
        return seen

    seen = run_in_browser(flow)
    assert seen["onboarding_tag"] == 1
    assert "被评价的说话人" in seen["judge"]
    assert "未达到要求" in seen["careless_done"]
    assert JobRater.objects.get(job=job, rater=careless).state == JobRater.State.FAILED_SCREENING
    assert seen["real_has_onboarding_tag"] == 0 and seen["columns"] == 2
    assert "humanlike.reason" in seen["refused"]
    assert "未通过" in seen["raters"] and "已通过" in seen["raters"]
    assert seen["votes_rows"] == 4 and seen["slot"] == 1
    votes = Vote.objects.filter(source=job.vote_source)
    assert votes.count() == 4 and set(votes.values_list("voter_user", flat=True)) == {careful.pk}
    real = Assignment.objects.get(job=job, kind=Assignment.Kind.REAL)
    assert real.rater_id == careful.pk and real.status == Assignment.Status.SUBMITTED
    assert {v.reason for v in votes} == {"左边更自然", "左边像人在说话"}
