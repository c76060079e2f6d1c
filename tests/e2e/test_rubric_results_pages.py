"""A researcher builds a rubric in the browser and reads a job's results."""

from __future__ import annotations

import pytest

from annotation.models import Rubric
from core.access import Role
from tests.annotation.results.factories import dialogue_with_turns, job_for, rate, single
from tests.chat.factories import BackendFactory
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

# The development machines share two cores among many test runs; a first page can take > 30 s.
SLOW_MACHINE_TIMEOUT_MS = 90_000

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_researcher_builds_a_rubric_and_a_broken_field_is_named(run_in_browser, live_server):
    make_user("rita", Role.RESEARCHER, password="pw-123456")
    base = live_server.url
    msde_pk = Rubric.objects.get(key="msde", version=1).pk

    async def flow(page):
        seen = {}
        page.set_default_timeout(SLOW_MACHINE_TIMEOUT_MS)
        await login(page, base, "rita", "pw-123456")
        await page.goto(f"{base}/annotation/rubrics/")
        await screenshot(page, "rubric-list")
        await page.goto(f"{base}/annotation/rubrics/new/")
        await page.fill("#f-key", "fluency")
        await page.fill("#f-title-zh", "流畅度与信息量")
        await page.fill("#f-title-en", "Fluency and informativeness")
        await page.fill("#q-0-key", "fluent")
        await page.select_option("#q-0-type", "scale")
        await page.fill("#q-0-label_zh", "回复流畅自然吗？")
        await page.fill("#q-0-label_en", "Is the reply fluent and natural?")
        await page.fill("#q-0-min", "0")
        await page.fill("#q-0-max", "0")  # broken: max must exceed min
        await page.get_by_role("button", name="＋ 添加问题").click()
        await page.wait_for_selector("#q-1-key")
        await page.fill("#q-1-key", "informative")
        await page.fill("#q-1-label_zh", "回复提供了有用的信息吗？")
        await page.get_by_role("button", name="＋ 添加问题").click()
        await page.wait_for_selector("#q-2-key")
        await page.locator("#q-2").get_by_role("button", name="删除此问题").click()
        seen["rows_after_remove"] = await page.locator("fieldset.q-row").count()
        async with page.expect_navigation():
            await page.get_by_role("button", name="保存", exact=True).click()
        seen["error_next_to_max"] = await page.locator(
            "#q-0 .has-error .field-error"
        ).all_inner_texts()
        seen["kept_label"] = await page.input_value("#q-1-label_zh")
        await screenshot(page, "rubric-editor-error")
        await page.fill("#q-0-max", "2")
        async with page.expect_navigation():
            await page.get_by_role("button", name="保存", exact=True).click()
        seen["h1"] = await page.locator("h1").inner_text()
        await screenshot(page, "rubric-detail")
        await page.goto(f"{base}/annotation/rubrics/{msde_pk}/")
        seen["msde_levels"] = await page.locator("dl.levels").count()
        await screenshot(page, "rubric-detail-msde")
        return seen

    seen = run_in_browser(flow)
    assert seen["error_next_to_max"] == ["questions[0].max: must be greater than min"]
    assert seen["kept_label"] == "回复提供了有用的信息吗？"
    assert seen["rows_after_remove"] == 2
    assert seen["h1"] == "fluency v1 · 流畅度与信息量"
    assert seen["msde_levels"] == 4  # Info, Coh, Know, Rec with their 0–2 definitions
    keys = [q["key"] for q in Rubric.objects.get(key="fluency").spec["questions"]]
    assert keys == ["fluent", "informative"]


def test_a_researcher_reads_the_results_of_a_seed_001_job(run_in_browser, live_server):
    make_user("rita", Role.RESEARCHER, password="pw-123456")
    job = job_for("yesno-single-turn", name="单轮评测·演示")
    systems = [BackendFactory(name="知识模型-7B"), BackendFactory(name="检索基线")]
    items = [dialogue_with_turns(job.campaign, s) for s in systems for _ in range(3)]
    for r in range(6):
        for i, item in enumerate(items):
            yes = 8 + (r + i) % 3 if i < 3 else 3 + (r + i) % 4
            rate(job, item, f"专家{r + 1}", single(yes, grammatical=int((r + i) % 7 != 0)))
    for i, item in enumerate(items):
        rate(job, item, "outlier", single(10 - (8 if i < 3 else 3)))

    async def flow(page):
        page.set_default_timeout(SLOW_MACHINE_TIMEOUT_MS)
        await login(page, live_server.url, "rita", "pw-123456")
        await page.goto(f"{live_server.url}/annotation/jobs/{job.pk}/results/")
        await screenshot(page, "job-results")
        return {
            "flagged": await page.locator("#rater-deviation tr.flagged td").first.inner_text(),
            "charts": await page.locator("figure.chart svg").count(),
            "top": await page.locator("#system-scores tbody tr").first.inner_text(),
        }

    seen = run_in_browser(flow)
    assert seen["flagged"] == "outlier"
    assert seen["charts"] == 13  # 2 gates + 10 questions + overall
    assert "知识模型-7B" in seen["top"]
