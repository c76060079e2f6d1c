"""A researcher creates an LLM judge, previews its prompt on a real dialogue, runs it (a real
Celery worker calls the fake OpenAI-compatible judge) and sees it ranked in a report, with the
judge-as-rater agreement table."""

import json

import pytest

from core.access import Role
from tests.chat.fake_openai import FakeOpenAI
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot
from tests.judges.helpers import judge_backend
from tests.metrics.reports.factories import msde_study

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

ANSWERS = tuple(
    json.dumps(
        {
            "rationale": f"第{i}个理由",
            "scores": {"naturalness": n, "topic_following": n, "topic_providing": max(1, n - 1)},
        },
        ensure_ascii=False,
    )
    for i, n in enumerate([5, 2, 4, 1, 3])
)


def test_a_researcher_creates_previews_runs_and_reports_a_judge(
    run_in_browser, live_server, celery_worker_process
):
    make_user("rita", Role.RESEARCHER, password="rita-pw-123")
    study = msde_study(dialogues_per_system=2)
    base = live_server.url
    with FakeOpenAI(replies=ANSWERS) as server:
        backend = judge_backend(server)
        dialogue = study.rated[0]

        async def flow(page):
            seen = {}
            page.set_default_timeout(120_000)
            await login(page, base, "rita", "rita-pw-123")
            await page.goto(f"{base}/judges/new/")
            await page.fill("#id_name", "李克特裁判")
            await page.select_option("#id_backend", str(backend.pk))
            await page.select_option("#id_rubric", str(study.job.rubric.pk))
            await screenshot(page, "judge-form")
            await page.click("#save-judge")
            await page.wait_for_url(f"{base}/judges/*/")
            await page.fill("#id_dialogue", str(dialogue.pk))
            await page.click("#preview-button")
            await page.wait_for_selector("#preview pre.prompt")
            seen["preview"] = await page.locator("#preview").inner_text()
            await page.select_option("#id_campaign", str(study.interactive.pk))
            await page.click("#estimate-button")
            await page.wait_for_selector("#estimate dl")
            seen["estimate"] = await page.locator("#estimate").inner_text()
            await screenshot(page, "judge-detail")
            await page.click("#start-run")
            await page.wait_for_url(f"{base}/judges/runs/*/")
            await page.wait_for_function(
                "() => document.querySelector('#run-status')?.textContent.includes('已完成')",
                timeout=180_000,
            )
            await page.reload()
            seen["answers"] = await page.locator("#answers").inner_text()
            await page.click("#answers article a")
            await page.wait_for_selector("#dialogue-view")
            await screenshot(page, "judge-run")
            run_id = page.url.split("/judges/runs/")[1].split("/")[0]
            await page.goto(f"{base}/metrics/reports/new/")
            await page.fill("#id_name", "裁判与专家")
            await page.check(f"input[name=metric_runs][value='{run_id}']")
            await page.check(f"input[name=rating_jobs][value='{study.job.pk}']")
            await page.check("input[name=level][value='dialogue']")
            await page.fill("#id_bootstrap", "100")
            await page.press("#id_seed", "Enter")
            await page.wait_for_url(f"{base}/metrics/reports/*/")
            await page.wait_for_selector("#judges", timeout=180_000)
            seen["correlations"] = await page.locator("#correlations").inner_text()
            seen["judges"] = await page.locator("#judges").inner_text()
            await page.locator("#judges").scroll_into_view_if_needed()
            await screenshot(page, "judge-report")
            return seen

        seen = run_in_browser(flow)
    assert "naturalness" in seen["preview"] and "自然性" in seen["preview"]
    assert "需发送的请求" in seen["estimate"]
    assert "理由" in seen["answers"]
    assert "judge:" in seen["correlations"] and "overall" in seen["correlations"]
    assert "α 裁判–多数" in seen["judges"] and "expert-1" not in seen["judges"].split("\n")[0]
    assert "naturalness" in seen["judges"]
