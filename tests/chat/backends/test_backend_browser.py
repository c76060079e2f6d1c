"""A researcher registers an OpenAI-compatible backend and tests it, in a real browser."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from chat.models import Backend
from tests.chat.fake_openai import FakeOpenAI
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_register_an_endpoint_and_test_the_connection(run_in_browser, live_server) -> None:
    call_command("load_demo")
    base = live_server.url
    with FakeOpenAI(reply="<b>你好</b>，我是测试模型。", token_delay=0.01) as server:

        async def flow(page):
            seen = {}
            await login(page, base, "researcher", "researcher-demo")
            await page.goto(f"{base}/chat/backends/")
            seen["rows"] = await page.locator("table.table tbody tr").count()
            await screenshot(page, "backend-list")
            async with page.expect_navigation():
                await page.click("text=新建后端")

            await page.fill("#id_name", "本地 vLLM")
            await page.fill("#id_config", '{"base_url": "x"')
            async with page.expect_navigation():
                await page.click("button[type=submit].primary")
            seen["json_error"] = await page.locator(".errorlist").first.inner_text()
            await screenshot(page, "backend-form-error")

            await page.fill("#id_api_key_env", "NOT_SET_IN_TESTS_VAR")
            await page.locator("#id_api_key_env").dispatch_event("change")
            await page.wait_for_selector("#env-state")
            seen["env_state"] = await page.locator("#env-state").inner_text()
            await page.fill("#id_api_key_env", "")
            config = {"base_url": server.base_url, "model": "fake", "temperature": 0.2}
            await page.fill("#id_config", json.dumps(config))
            await page.fill("#id_prompt_knowledge", "请根据知识聊天：\n$knowledge")
            async with page.expect_navigation():
                await page.click("button[type=submit].primary")
            seen["h1"] = await page.locator("h1").inner_text()

            await page.fill("#test-message", "你好呀")
            await page.click("#test-connection button[type=submit]")
            await page.wait_for_selector("#test-reply")
            seen["reply"] = await page.locator("#test-reply").inner_text()
            seen["bold_tags"] = await page.locator("#test-reply b").count()
            await screenshot(page, "backend-detail-tested")
            return seen

        seen = run_in_browser(flow)
        sent = server.requests[-1].json
    # The demo retrieval backends: three Chinese (good, baseline, streamed), two Japanese; and
    # the rated study's two imported systems (knowledge template, random reply).
    assert seen["rows"] == 7
    assert "不是合法的 JSON" in seen["json_error"]
    assert "没有设置 NOT_SET_IN_TESTS_VAR" in seen["env_state"]
    assert seen["h1"].startswith("本地 vLLM")
    assert seen["reply"] == "<b>你好</b>，我是测试模型。"  # shown as text
    assert seen["bold_tags"] == 0
    assert sent["messages"][-1] == {"role": "user", "content": "你好呀"}
    backend = Backend.objects.get(name="本地 vLLM")
    assert backend.config["prompt_templates"] == {"knowledge": "请根据知识聊天：\n$knowledge"}
