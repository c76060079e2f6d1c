"""After a keyboard decision the address bar shows the item on screen (issue 22 item 16): the
review and rating pages move to the next item, and a reload or a shared link opens that item,
not the one before it."""

import re

import pytest

from annotation.models import Assignment
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, single_rater_job
from tests.conftest import make_user
from tests.e2e.conftest import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_url_follows_the_item_after_each_keyboard_decision(run_in_browser, live_server):
    expert = make_user("kira", Role.EXPERT)
    worker = make_user("wen", Role.CROWDWORKER)
    campaign = CampaignFactory(name="键盘审核")
    submitted = [
        dialogue_with_turns(campaign=campaign, worker=worker, status=Dialogue.Status.SUBMITTED)
        for _ in range(3)
    ]
    accepted = [dialogue_with_turns(campaign=campaign, worker=worker) for _ in range(3)]
    job = single_rater_job(name="键盘评分", campaign=campaign, rubric_key="msde", rater=expert)
    base = live_server.url

    async def flow(page):
        seen = {"review": [], "rate": []}
        await login(page, base, "kira", "pw-123456")
        await page.goto(f"{base}/annotation/review/next/")
        for _ in range(2):
            async with page.expect_navigation():
                await page.keyboard.press("a")
            heading = await page.locator("h1").inner_text()
            seen["review"].append((page.url, re.search(r"#(\d+)", heading).group(1)))
        await page.goto(f"{base}/annotation/rate/{job.pk}/next/")
        for _ in range(2):
            for key in ("2", "1", "2"):
                async with page.expect_response(lambda r: "/answer/" in r.url):
                    await page.keyboard.press(key)
            async with page.expect_navigation():
                await page.keyboard.press("Enter")
            action = await page.locator("#submit-form").get_attribute("action")
            seen["rate"].append((page.url, re.search(r"/item/(\d+)/submit/", action).group(1)))
        return seen

    seen = run_in_browser(flow)
    reviewed = set(
        Dialogue.objects.filter(
            pk__in=[d.pk for d in submitted], reviews__isnull=False
        ).values_list("pk", flat=True)
    )
    assert len(reviewed) == 2
    for url, on_screen in seen["review"]:
        match = re.search(r"/annotation/review/(\d+)/$", url)
        assert match, url  # the dialogue on screen, not review/next/ nor the one just decided
        assert match.group(1) == on_screen
    submitted_items = set(
        Assignment.objects.filter(job=job, status="submitted").values_list("pk", flat=True)
    )
    assert len(submitted_items) == 2 and len(accepted) == 3
    assert [int(item) for _, item in seen["rate"]][-1] not in submitted_items
    for url, item in seen["rate"]:
        match = re.search(r"/annotation/rate/item/(\d+)/$", url)
        assert match, url
        assert match.group(1) == item
