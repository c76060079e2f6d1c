"""A researcher runs a static generation over a demo dataset and downloads the answers."""

import json

import pytest
from django.core.management import call_command

from chat.models import Dialogue, StaticRun
from core.models import JobStatus
from tests.e2e.conftest import login, screenshot

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_a_researcher_runs_both_retrieval_backends_watches_progress_and_downloads_jsonl(
    run_in_browser, live_server, celery_worker_process, tmp_path
):
    call_command("load_demo")
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "researcher", "researcher-demo")
        await page.goto(f"{base}/chat/static-runs/")
        await screenshot(page, "static-run-list-empty")
        async with page.expect_navigation():
            await page.click("text=新建静态生成")
        await page.fill("input[name=name]", "演示·闲聊·两种检索")
        await page.select_option("select[name=dataset]", label="演示·闲聊")
        await page.check("label:has-text('检索-TFIDF') input")
        await page.check("label:has-text('检索-BM25') input")
        await page.fill("input[name=sample_size]", "6")
        await page.fill("input[name=seed]", "7")
        await screenshot(page, "static-run-create")
        async with page.expect_navigation():
            await page.keyboard.press("Enter")
        seen["bar"] = await page.locator("#progress .progress").count()
        await screenshot(page, "static-run-progress")
        # htmx polls the progress every second and reloads the page once the run is finished.
        await page.wait_for_selector("#run-status.run-done", timeout=90_000)
        await page.wait_for_load_state("networkidle")
        seen["progress"] = await page.locator("#progress-text").inner_text()
        seen["answer_rows"] = await page.locator("table.answers tbody tr").count()
        seen["header"] = await page.locator("table.answers thead").inner_text()
        await screenshot(page, "static-run-done")
        async with page.expect_download() as download_info:
            await page.click("#download-jsonl")
        download = await download_info.value
        target = tmp_path / "answers.jsonl"
        await download.save_as(str(target))
        await page.goto(f"{base}/chat/static-runs/")
        seen["list_row"] = await page.locator("table.table tbody tr").first.inner_text()
        await screenshot(page, "static-run-list")
        return seen, target

    seen, target = run_in_browser(flow)
    assert seen["bar"] == 1
    assert seen["progress"].startswith("已完成 12 / 12（100%），失败 0")
    assert seen["answer_rows"] == 6
    assert "演示·闲聊·两种检索" in seen["list_row"] and "12 / 12" in seen["list_row"]
    assert "检索-TFIDF" in seen["header"] and "检索-BM25" in seen["header"]
    run = StaticRun.objects.get()
    assert run.status == JobStatus.DONE
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12 == Dialogue.objects.filter(static_run=run).count()
    assert {line["system"] for line in lines} == {"检索-TFIDF", "检索-BM25"}
    assert all(line["turns"][-1]["speaker"] == "system" for line in lines)
    assert all(line["status"] == "accepted" for line in lines)


def test_a_bad_dialogue_file_is_refused_on_the_import_page_with_its_line(
    run_in_browser, live_server, tmp_path
):
    call_command("load_demo")
    bad = tmp_path / "dialogues.jsonl"
    good = {
        "id": "a",
        "system": "外部模型",
        "skill": "chitchat",
        "language": "zh",
        "turns": [{"speaker": "user", "text": "你好"}, {"speaker": "system", "text": "你好呀"}],
    }
    wrong = {**good, "id": "b", "turns": [{"speaker": "bot", "text": "嗨"}]}
    bad.write_text(
        "\n".join(json.dumps(o, ensure_ascii=False) for o in (good, wrong)), encoding="utf-8"
    )

    async def flow(page):
        await login(page, live_server.url, "researcher", "researcher-demo")
        await page.goto(f"{live_server.url}/chat/dialogues/import/")
        await page.set_input_files("input[name=file]", str(bad))
        await page.fill("input[name=campaign]", "竞赛日志")
        await page.click("button[type=submit].primary")
        await page.locator("#import-error").wait_for()  # the form is posted by htmx
        await screenshot(page, "dialogue-import-error")
        chosen = await page.eval_on_selector("input[name=file]", "el => el.files.length")
        return await page.locator("#import-error").inner_text(), chosen

    error, chosen = run_in_browser(flow)
    assert chosen == 1  # the refused file is still chosen for a second try
    assert 'line 2, field \'turns[0].speaker\': expected "user" or "system"' in error
    assert not Dialogue.objects.filter(campaign__name="竞赛日志").exists()
