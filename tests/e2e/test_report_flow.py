"""A researcher configures a correlation report, watches it compute, and reads the tables."""

import pytest

from core.access import Role
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.metrics.reports.factories import (
    QUALITY,
    dialogue_score,
    finished_run,
    msde_study,
    turn_scores,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_researcher_configures_a_report_and_reads_tables_and_plots(
    run_in_browser, live_server, celery_worker_process
):
    make_user("rita", Role.RESEARCHER, password="rita-pw-123")
    study = msde_study(dialogues_per_system=2, skills=("knowledge", "chitchat"))
    run = finished_run(study.static, "静态生成·指标", metrics=["F1", "DIST-1", "长度"])
    for i, dialogue in enumerate(study.answers):
        q = QUALITY[dialogue.backend.name]
        dialogue_score(run, dialogue, "F1", q / 10 + 0.02 * (i % 3))
        dialogue_score(run, dialogue, "长度", 10.0)  # constant: undefined correlations
        turn_scores(run, dialogue, "DIST-1", [0.3 + 0.05 * ((q * 3 + i) % 4)])
    base = live_server.url

    async def flow(page):
        seen = {}
        # The development machine is shared: give slow page loads time, not failures.
        page.set_default_timeout(120_000)
        await login(page, base, "rita", "rita-pw-123")
        await page.goto(f"{base}/metrics/reports/new/")
        await page.fill("#id_name", "MSDE 系统级相关性")
        await page.check(f"input[name=metric_runs][value='{run.pk}']")
        # Keyboard: tab to the job checkbox and tick it with the space bar.
        await page.focus(f"input[name=metric_runs][value='{run.pk}']")
        await page.keyboard.press("Tab")
        await page.keyboard.press("Space")
        seen["job_checked"] = await page.is_checked(
            f"input[name=rating_jobs][value='{study.job.pk}']"
        )
        await page.fill("#id_bootstrap", "300")
        await screenshot(page, "report-form")
        log = []
        page.on("request", lambda r: log.append((r.method, r.url)))
        page.on("response", lambda r: log.append((r.status, r.url)))
        # Submit with the keyboard: Enter in the last field.
        await page.press("#id_seed", "Enter")
        try:
            await page.wait_for_url(f"{base}/metrics/reports/*/")
        except Exception as exc:
            raise AssertionError(f"no report page after submitting; traffic: {log}") from exc
        seen["progress_visible"] = await page.locator("#report-progress .progress").is_visible()
        await screenshot(page, "report-progress")
        await page.wait_for_selector("#correlations", timeout=180_000)
        await page.wait_for_load_state("networkidle")
        seen["h1"] = await page.locator("h1").inner_text()
        seen["correlations"] = await page.locator("#correlations").inner_text()
        seen["best_cells"] = await page.locator("#correlations td.best").count()
        seen["systems"] = await page.locator("#systems").inner_text()
        # Figures load lazily; load them all, then check that every one decoded.
        await page.eval_on_selector_all(
            "img[loading=lazy]", "imgs => imgs.forEach(i => i.loading = 'eager')"
        )
        await page.wait_for_function(
            "() => [...document.querySelectorAll('figure.report-figure img')]"
            ".every(i => i.complete)"
        )
        seen["images"] = await page.eval_on_selector_all(
            "figure.report-figure img", "imgs => imgs.map(i => i.naturalWidth > 0)"
        )
        seen["downloads"] = await page.locator(".downloads a.button").count()
        await screenshot(page, "report-detail")
        return seen

    seen = run_in_browser(flow)
    assert seen["job_checked"]
    assert seen["progress_visible"]
    assert seen["h1"].startswith("MSDE 系统级相关性")
    for text in ("F1", "DIST-1", "长度", "knowledge", "chitchat", "Pearson", "Spearman", "无定义"):
        assert text in seen["correlations"], text
    assert "平均" in seen["correlations"] and "nan" not in seen["correlations"].lower()
    assert seen["best_cells"] >= 1
    assert "系统甲" in seen["systems"] and "系统戊" in seen["systems"]
    assert seen["images"] and all(seen["images"])
    assert seen["downloads"] == 5
