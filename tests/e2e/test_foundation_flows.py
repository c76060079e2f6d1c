"""A researcher, an expert and a crowdworker use the site in a real browser."""

import pytest
from django.core.management import call_command

from chat.models import Campaign, Dataset
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_demo_users_land_on_their_role_home_pages(run_in_browser, live_server):
    call_command("load_demo")
    base = live_server.url

    async def flow(page):
        seen = {}
        await login(page, base, "researcher", "researcher-demo")
        seen["researcher_h1"] = await page.locator("h1").inner_text()
        await screenshot(page, "home-researcher")
        await page.goto(f"{base}/chat/datasets/")
        seen["dataset_rows"] = await page.locator("table.table tbody tr").count()
        async with page.expect_navigation():
            await page.locator("a", has_text="演示·知识对话").first.click()
        seen["samples_on_page"] = await page.locator(".sample").count()
        await screenshot(page, "dataset-detail")

        await page.context.clear_cookies()
        await login(page, base, "expert", "expert-demo")
        seen["expert_h1"] = await page.locator("h1").inner_text()
        await screenshot(page, "home-expert")

        await page.context.clear_cookies()
        await login(page, base, "worker", "worker-demo")
        seen["worker_h1"] = await page.locator("h1").inner_text()
        response = await page.goto(f"{base}/chat/datasets/")
        seen["worker_datasets_status"] = response.status
        return seen

    seen = run_in_browser(flow)
    assert seen == {
        "researcher_h1": "研究者工作台",
        "dataset_rows": Dataset.objects.count(),  # the Chinese and the Japanese demo datasets
        "samples_on_page": 20,
        "expert_h1": "专家工作台",
        "worker_h1": "我的对话任务",
        "worker_datasets_status": 403,
    }


def test_a_malformed_dataset_is_refused_with_the_line_and_nothing_is_stored(
    run_in_browser, live_server, tmp_path
):
    call_command("load_demo")
    before = Dataset.objects.count()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "context": ["你好"], "response": "你好呀"}\n'
        '{"id": "b", "context": ["在吗"], "response": "在"}\n'
        '{"id": "c", "context": ["最近怎么样"], "response": 42}\n',
        encoding="utf-8",
    )

    async def flow(page):
        await login(page, live_server.url, "researcher", "researcher-demo")
        await page.goto(f"{live_server.url}/chat/datasets/upload/")
        await page.set_input_files("input[name=file]", str(bad))
        await page.fill("input[name=name]", "坏文件")
        await page.select_option("select[name=skill]", "chitchat")
        await page.click("button[type=submit].primary")
        await page.locator("#import-error").wait_for()  # the form is posted by htmx
        await screenshot(page, "dataset-upload-error")
        error = await page.locator("#import-error").inner_text()
        chosen = await page.eval_on_selector("input[name=file]", "el => el.files.length")
        name = await page.input_value("input[name=name]")
        # A corrected file goes in with one more click: the rest of the form was kept.
        bad.write_text(bad.read_text(encoding="utf-8").replace(": 42", ': "好"'), encoding="utf-8")
        await page.set_input_files("input[name=file]", str(bad))
        async with page.expect_navigation():
            await page.click("button[type=submit].primary")
        return error, chosen, name, page.url

    error, chosen, name, landed = run_in_browser(flow)
    assert "line 3" in error and "response" in error
    assert chosen == 1 and name == "坏文件"  # the refusal kept the form as it was
    assert Dataset.objects.count() == before + 1 and "/chat/datasets/" in landed


def test_a_crowdworker_joins_through_an_invite_link(run_in_browser, live_server):
    call_command("load_demo")
    campaign = Campaign.objects.get(name="演示·知识对话采集")
    url = f"{live_server.url}/chat/join/{campaign.invite_token}/?PROLIFIC_PID=abc123"

    async def flow(page):
        await page.goto(url)
        async with page.expect_navigation():  # confirm the join (the login is a POST)
            await page.get_by_role("button", name="开始", exact=True).click()
        await page.wait_for_load_state("networkidle")
        await screenshot(page, "home-crowdworker-joined")
        return await page.locator("h1").inner_text(), await page.locator("main").inner_text()

    heading, body = run_in_browser(flow)
    # Joining leads straight into the first dialogue, with the resume code shown once.
    assert heading.startswith("与模型对话") and "演示·知识对话采集" in heading
    participant = campaign.participants.get()
    assert participant.external_id == "abc123"
    assert participant.resume_code in body


def test_the_interface_switches_to_english(run_in_browser, live_server):
    call_command("load_demo")

    async def flow(page):
        await login(page, live_server.url, "researcher", "researcher-demo")
        async with page.expect_navigation():
            await page.select_option("#lang-select", "en")
        await screenshot(page, "home-researcher-en")
        return await page.locator("h1").inner_text()

    assert run_in_browser(flow) == "Researcher workspace"
