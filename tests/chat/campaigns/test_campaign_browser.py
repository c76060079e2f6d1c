"""A researcher creates, opens and watches a campaign in a real browser (keyboard first)."""

import pytest
from django.core.management import call_command

from chat.models import Campaign
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant
from tests.e2e.conftest import login, run_in_browser, screenshot  # noqa: F401 - fixture

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_a_researcher_creates_and_opens_a_campaign(run_in_browser, live_server):  # noqa: F811
    call_command("load_demo")
    base = live_server.url

    async def create(page):
        seen = {}
        await login(page, base, "researcher", "researcher-demo")
        await page.goto(f"{base}/chat/campaigns/new/")
        await page.fill("#id_name", "浏览器里建的活动")
        await page.check("input[name=skills][value=knowledge]")
        await page.locator("input[name=backends]").first.check()
        await page.locator("input[name=backends]").nth(1).check()
        await page.check("label:has-text('演示·画像聊天 (') input")  # wrong skill on purpose
        await page.fill("#id_min_turns", "12")
        async with page.expect_navigation():
            await page.click("button[type=submit].primary")
        seen["errors"] = await page.locator("#form-errors").inner_text()
        await screenshot(page, "campaign-form-errors")

        await page.uncheck("label:has-text('演示·画像聊天 (') input")
        await page.check("label:has-text('演示·知识对话 (') input")
        await page.fill("#id_min_turns", "2")
        await page.fill("#id_instructions_knowledge_zh", "请围绕知识自然聊天。")
        await page.focus("#id_acc_flag_threshold")
        async with page.expect_navigation():
            await page.keyboard.press("Enter")  # the keyboard submits the form
        seen["h1"] = await page.locator("h1").inner_text()
        async with page.expect_navigation():
            await page.click("button:has-text('开放')")
        seen["status"] = await page.locator("h1 .status").inner_text()
        return seen

    seen = run_in_browser(create)
    assert "最少轮数（12）不能大于最多轮数（10）" in seen["errors"]
    assert "不在本活动的技能中" in seen["errors"]
    assert seen["h1"].startswith("浏览器里建的活动") and seen["status"] == "进行中"
    campaign = Campaign.objects.get(name="浏览器里建的活动")
    assert campaign.min_turns == 2 and campaign.status == Campaign.Status.ACTIVE

    for _ in range(3):
        scenario_assign_next(participant=participant(campaign))
    participant(campaign, flagged=True, violations=6, source="prolific")

    async def watch(page):
        await login(page, base, "researcher", "researcher-demo")
        await page.goto(f"{base}/chat/campaigns/{campaign.pk}/")
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        await page.click("button[data-copy=invite-url]")
        await page.locator("#copy-status:not(:empty)").wait_for()  # the clipboard is async
        copied = await page.locator("#copy-status").inner_text()
        await screenshot(page, "campaign-detail")
        await page.goto(f"{base}/chat/campaigns/")
        await screenshot(page, "campaign-list")
        return copied, await page.locator("table.table tbody tr").count()

    copied, rows = run_in_browser(watch)
    assert copied == "已复制到剪贴板。"
    assert rows == 4  # the demo campaigns (Chinese, Japanese, the rated study) and this one
