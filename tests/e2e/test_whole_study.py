"""The whole first study, through the web pages only, as the three roles (issue 11).

`load_demo`, then: the researcher uploads a dataset, runs both demo backends on it, computes
MSDE-16 from the run's next step; two crowdworkers join by invite link on a 390 px phone, chat
(the reply streams), finish without a reload and get the completion code; an expert reviews;
the researcher makes a 3-expert MSDE rating job from the campaign's next step; three experts
rate; the researcher builds the correlation report from the metric run's next step and opens
every download. The Celery worker draws the figures with `REPORT_FIGURE_FONTS=shipped`: the
installed CJK fonts are hidden from it, as on a fresh machine, and the figures still render
Chinese with the project's own font (no font warning in the report).

Served by uvicorn (ASGI, so the reply streams) in a thread of the test process; a real Celery
worker process runs the static run, the metric run and the report on the configured broker.
Marked `embedded_defaults`: a full `bin/test` (CI) runs it on the embedded defaults of
`make demo` — SQLite and the SQLAlchemy/SQLite broker in a fresh folder — even where the rest of
the suite runs on PostgreSQL and Redis.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from openpyxl import load_workbook

from annotation.models import Assignment, RatingJob
from chat.models import Campaign, Dialogue, StaticRun
from metrics.models import JobStatus, MetricRun, Report
from metrics.reporting.fonts import DEGRADED_MESSAGE, font_status
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.e2e.conftest import login, screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.embedded_defaults,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

DEMO_DATA = Path(__file__).resolve().parents[2] / "workspace" / "demo_data" / "zh_knowledge.jsonl"
SLOW = 240_000  # ms: a shared development machine; the worker does real work


@pytest.fixture
def fonts_hidden(monkeypatch) -> Iterator[None]:
    """Set before the worker starts (it inherits the environment) and for this process."""
    monkeypatch.setenv("REPORT_FIGURE_FONTS", "shipped")
    font_status.cache_clear()
    yield
    font_status.cache_clear()


@pytest.fixture
def server(transactional_db) -> Iterator[ServerThread]:
    running = ServerThread().start()
    try:
        yield running
    finally:
        running.stop()
        drop_other_connections()


async def _new_page(page, *, phone: bool = False):
    browser = page.context.browser
    if phone:
        context = await browser.new_context(
            viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, locale="zh-CN"
        )
    else:
        context = await browser.new_context(viewport={"width": 1366, "height": 820}, locale="zh-CN")
    new = await context.new_page()
    new.set_default_timeout(SLOW)
    return new


async def _select_containing(page, selector: str, fragment: str) -> None:
    """Choose the option of a <select> whose text contains `fragment`."""
    value = await page.eval_on_selector(
        selector,
        "(el, f) => [...el.options].find(o => o.textContent.includes(f))?.value",
        fragment,
    )
    assert value, f"no option containing {fragment!r} in {selector}"
    await page.select_option(selector, value)


async def _chat_and_finish(page, invite: str, worker_id: str, seen: dict) -> None:
    """A crowdworker on a phone: one confirmation (the login is a POST), then the chat; tick,
    send, finish, get the code."""
    await page.goto(f"{invite}?worker_id={worker_id}")
    async with page.expect_navigation():
        await page.get_by_role("button", name="开始", exact=True).click()
    assert "/chat/work/dialogues/" in page.url, page.url
    await screenshot(page, f"study-phone-chat-{worker_id}")
    seen[f"{worker_id}_composer_in_view"] = await page.locator("#utterance").is_visible()
    panel = page.locator("#side-panel")
    seen[f"{worker_id}_panel_folded"] = await panel.get_attribute("open") is None
    await page.locator("#side-panel summary").click()
    for checkbox in await page.locator("#grounding input[type=checkbox]").all():
        async with page.expect_response(lambda r: r.url.endswith("/grounding/")):
            await checkbox.check()
    await page.locator("#utterance").fill("你好，我们聊聊这部电影吧。")
    await page.locator("#utterance").press("Enter")
    await page.locator("#turns .turn-system:not(.pending)").wait_for()
    # Finish right after the streamed reply, no reload (the CSRF dead end of issue 11).
    await page.locator("#finish-button:not([disabled])").wait_for()
    async with page.expect_navigation():
        await page.locator("#finish-button").click()
    seen[f"{worker_id}_code"] = await page.locator("#completion-code").inner_text()
    await screenshot(page, f"study-phone-code-{worker_id}")


async def _rate_everything(page, base: str, job_id: int, username: str) -> int:
    """An expert rates every item of the job with the keyboard; returns how many."""
    await login(page, base, username, "expert-demo")
    rated = 0
    while True:
        await page.goto(f"{base}/annotation/rate/{job_id}/next/")
        if not await page.locator("#answered-count").count():
            return rated
        for _ in range(12):
            answered = await page.locator("#answered-count").inner_text()
            done, total = (int(n) for n in re.findall(r"\d+", answered)[:2])
            if done >= total:
                break
            async with page.expect_response(lambda r: "/answer/" in r.url):
                await page.keyboard.press(str(1 + (rated + done) % 2))
        async with page.expect_navigation():
            await page.keyboard.press("Enter")
        rated += 1


def test_a_first_study_runs_end_to_end_as_three_roles(
    fonts_hidden, run_in_browser, celery_worker_process, server, tmp_path
):
    call_command("load_demo", stdout=io.StringIO())
    dataset_file = tmp_path / "my-knowledge.jsonl"
    dataset_file.write_text(
        "".join(DEMO_DATA.read_text(encoding="utf-8").splitlines(keepends=True)[:4]),
        encoding="utf-8",
    )
    campaign = Campaign.objects.get(name="演示·知识对话采集")
    base = server.url
    invite = f"{base}/chat/join/{campaign.invite_token}/"
    downloads = tmp_path / "downloads"

    async def flow(page):
        seen: dict = {}
        page.set_default_timeout(SLOW)
        # --- Researcher: dataset → static run → metrics -------------------------------------
        await login(page, base, "researcher", "researcher-demo")
        await page.goto(f"{base}/chat/datasets/upload/")
        await page.set_input_files("input[name=file]", str(dataset_file))
        await page.select_option("select[name=source_format]", "jsonl")
        await page.fill("input[name=name]", "我的知识对话测试集")
        await page.select_option("select[name=skill]", "knowledge")
        async with page.expect_navigation():
            await page.click("form button[type=submit].primary")
        assert "/chat/datasets/" in page.url and "upload" not in page.url, page.url

        await page.goto(f"{base}/chat/static-runs/new/")
        await page.fill("input[name=name]", "两个演示模型答题")
        await page.select_option("select[name=dataset]", label="我的知识对话测试集")
        for box in await page.locator("input[name=backends]").all():
            await box.check()
        async with page.expect_navigation():
            await page.click("form button[type=submit].primary")
        await page.locator("#next-step a").wait_for()
        async with page.expect_navigation():
            await page.locator("#next-step a").click()
        await page.fill("input[name=name]", "MSDE-16")
        await page.check("input[name=metrics][value=msde16]")
        await page.locator("#preflight-box .preflight-ok, #preflight-warn").wait_for()
        async with page.expect_navigation():  # below the pre-flight panel, outside the <form>
            await page.get_by_role("button", name="开始计算").click()
        await page.locator("#next-step a").wait_for()
        seen["report_link"] = await page.locator("#next-step a").get_attribute("href")

        # --- Two crowdworkers on phones --------------------------------------------------
        for worker_id in ("prolific-w1", "prolific-w2"):
            phone = await _new_page(page, phone=True)
            await _chat_and_finish(phone, invite, worker_id, seen)
            await phone.context.close()

        # --- Expert: review ---------------------------------------------------------------
        expert = await _new_page(page)
        await login(expert, base, "expert", "expert-demo")
        for _ in range(2):
            await expert.goto(f"{base}/annotation/review/next/")
            seen.setdefault("ticks_seen", []).append(await expert.locator(".used-summary").count())
            async with expert.expect_navigation():
                await expert.keyboard.press("a")  # accept
        await expert.context.close()

        # --- Researcher: rating job from the campaign's next step ----------------------------
        await page.goto(f"{base}/chat/campaigns/{campaign.pk}/")
        async with page.expect_navigation():
            await page.locator("#next-rating-job").click()
        await page.fill("input[name=name]", "MSDE 三人评分")
        await _select_containing(page, "select[name=rubric]", "msde")
        for box in await page.locator("input[name=raters]").all():  # the three demo experts
            await box.check()
        await page.fill("input[name=raters_per_dialogue]", "3")
        async with page.expect_navigation():
            await page.click("form button[type=submit].primary")
        async with page.expect_navigation():
            await page.get_by_role("button", name="开始并分配").click()

        # --- Three experts rate -------------------------------------------------------------
        job_id = int(re.search(r"/jobs/(\d+)/", page.url).group(1))
        for username in ("expert", "expert2", "expert3"):
            rater = await _new_page(page)
            seen[f"rated_{username}"] = await _rate_everything(rater, base, job_id, username)
            await rater.context.close()

        # --- Researcher: the report, and every download read back ----------------------------
        await page.goto(base + seen["report_link"])
        await page.fill("#id_name", "第一项研究")
        await page.check(f"input[name=rating_jobs][value='{job_id}']")
        await page.fill("#id_bootstrap", "100")
        async with page.expect_navigation():
            await page.press("#id_seed", "Enter")
        await page.wait_for_selector("#correlations", timeout=SLOW)
        await screenshot(page, "study-report")
        seen["figures"] = await page.locator(".figures img").count()
        seen["warnings"] = (
            await page.locator("#report-warnings").inner_text()
            if await page.locator("#report-warnings").count()
            else ""
        )
        downloads.mkdir()
        for link in await page.locator(".downloads a.button").all():
            async with page.expect_download() as info:
                await link.click()
            download = await info.value
            target = downloads / download.suggested_filename
            await download.save_as(target)
        return seen

    seen = run_in_browser(flow)

    # Crowdworkers: the chat was usable on a phone and each got the code.
    for worker_id in ("prolific-w1", "prolific-w2"):
        assert seen[f"{worker_id}_code"] == campaign.completion_code
        assert seen[f"{worker_id}_composer_in_view"] and seen[f"{worker_id}_panel_folded"]
    assert seen["ticks_seen"] == [1, 1]  # the reviewer saw the ticked grounding
    assert Dialogue.objects.filter(campaign=campaign, status="accepted").count() == 2
    job = RatingJob.objects.get(name="MSDE 三人评分")
    assert Assignment.objects.filter(job=job, status="submitted").count() == 6
    assert [seen[f"rated_{u}"] for u in ("expert", "expert2", "expert3")] == [2, 2, 2]
    assert StaticRun.objects.get().status == JobStatus.DONE
    assert MetricRun.objects.get(name="MSDE-16").status == JobStatus.DONE

    report = Report.objects.get(name="第一项研究")
    assert report.status == JobStatus.DONE, report.error
    assert DEGRADED_MESSAGE not in seen["warnings"] and "font" not in seen["warnings"].lower()
    assert seen["figures"] > 0

    files = {path.suffix: path for path in downloads.iterdir()}
    assert set(files) == {".csv", ".xlsx", ".json", ".tex", ".zip"}, sorted(files)
    rows = list(csv.DictReader(io.StringIO(files[".csv"].read_text(encoding="utf-8"))))
    assert rows and {"metric", "method"} <= set(rows[0])
    assert load_workbook(files[".xlsx"]).sheetnames[0] == "correlations"
    assert json.loads(files[".json"].read_text(encoding="utf-8"))["groups"] == ["knowledge"]
    assert r"\begin{document}" in files[".tex"].read_text(encoding="utf-8")
    with zipfile.ZipFile(files[".zip"]) as archive:
        names = archive.namelist()
        assert any(n.startswith("figures/") and n.endswith(".png") for n in names)
        readme = archive.read("README.txt").decode()
        # Two systems warn that they cannot be significant; nothing warns about fonts.
        assert "font" not in readme.lower()
