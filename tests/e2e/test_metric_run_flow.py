"""A researcher runs lexical metrics over a campaign from the UI while a real worker scores it."""

import pytest
from django.urls import reverse

from core.access import Role
from metrics.models import MetricRun
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.metrics.runs.factories import make_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

METRICS = ["f1", "bleu-1", "bleu-2", "rouge-l", "dist-1", "dist-2", "cider"]


def test_a_researcher_runs_metrics_and_browses_the_system_table(
    run_in_browser, live_server, celery_worker_process
):
    make_user("lin", Role.RESEARCHER, password="lin-pass-123")
    study = make_study(dialogues_per_cell=4)
    base = live_server.url
    # Import the URLconf (and with it torch) now: on a busy machine the first request would
    # otherwise spend longer than the browser's navigation timeout importing it.
    reverse("metrics:metric-run-create")

    async def flow(page):
        seen = {}
        await login(page, base, "lin", "lin-pass-123")
        await page.goto(f"{base}/metrics/runs/new/")
        await page.fill("input[name=name]", "词汇指标·演示")
        await page.check("input[name=target][value=campaign]")
        await page.select_option("select[name=campaign]", str(study.campaign.pk))
        for name in METRICS:
            await page.check(f"input[name=metrics][value={name}]")
        await screenshot(page, "metric-run-form")
        async with page.expect_navigation():
            await page.click("button[type=submit].primary")
        seen["bar_at_start"] = await page.locator(".progress .bar").count()
        # Generous: the worker imports torch first, and the machine is shared.
        await page.wait_for_selector("#run-status:has-text('已完成')", timeout=180_000)
        seen["progress"] = await page.locator("#run-progress").inner_text()
        seen["headers"] = (
            await page.locator("#system-table table").first.locator("thead th").all_inner_texts()
        )
        seen["tables"] = await page.locator("#system-table h3").all_inner_texts()
        await screenshot(page, "metric-run-detail")
        async with page.expect_navigation():
            await page.click("a:has-text('按轮次浏览')")
        seen["turn_rows"] = await page.locator("table.scores tbody tr").count()
        await screenshot(page, "metric-run-turns")
        return seen

    seen = run_in_browser(flow)
    run = MetricRun.objects.get()
    assert run.status == "done" and run.progress_done == run.progress_total == 4 * 5
    assert seen["bar_at_start"] == 1
    assert f"已完成 {run.progress_total} / {run.progress_total}" in seen["progress"]
    assert seen["headers"] == ["指标", "系统乙", "系统甲"]
    assert seen["tables"] == ["技能：chitchat", "技能：knowledge", "全部技能"]
    assert seen["turn_rows"] == 20
