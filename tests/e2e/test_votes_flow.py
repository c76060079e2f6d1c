"""A researcher imports pairwise votes on a study's page, sees a refused line, then the counts,
the export links and the flagged identity leaks, and edits the study's identity words."""

import json

import pytest

from chat.models import Campaign, Vote
from core.access import Role
from tests.chat.factories import CampaignFactory
from tests.conftest import make_user
from tests.e2e.conftest import login, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def conv(answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": "你是谁？"}, {"role": "assistant", "content": answer}]


def test_a_researcher_imports_votes_and_reviews_the_identity_leaks(
    run_in_browser, live_server, tmp_path
):
    make_user("rita", Role.RESEARCHER)
    study = CampaignFactory(
        name="偏好研究", mode=Campaign.Mode.IMPORTED, status=Campaign.Status.DRAFT
    )
    records = [
        {
            "question_id": f"q{i}",
            "model_a": "甲模型",
            "model_b": "乙模型",
            "winner": ["model_a", "model_b", "tie", "tie (bothbad)"][i % 4],
            "judge": f"rater-{i % 3}",
            "language": "Chinese",
            "conversation_a": conv("我是 ChatGPT，由 OpenAI 训练的模型。" if i % 2 else "你好。"),
            "conversation_b": conv("我是一个乐于助人的助手。"),
        }
        for i in range(8)
    ]
    good = tmp_path / "votes.jsonl"
    good.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        good.read_text("utf-8") + '{"model_a": "甲模型", "model_b": "甲模型", "winner": "tie"}\n',
        "utf-8",
    )

    async def flow(page):
        seen = {}
        base = live_server.url
        await login(page, base, "rita", "pw-123456")
        await page.goto(f"{base}/chat/campaigns/{study.pk}/#votes")
        await page.set_input_files("#votes input[name=file]", str(bad))
        await page.click("#votes button[type=submit].primary")
        await page.locator("#import-error").wait_for()
        await screenshot(page, "votes-panel-error")
        seen["error"] = await page.locator("#import-error").inner_text()
        seen["chosen"] = await page.eval_on_selector(
            "#votes input[name=file]", "el => el.files.length"
        )
        await page.set_input_files("#votes input[name=file]", str(good))
        async with page.expect_navigation():
            await page.click("#votes button[type=submit].primary")
        await page.locator("#vote-exports").wait_for()
        await page.locator("#votes").scroll_into_view_if_needed()
        await screenshot(page, "votes-panel")
        seen["counts"] = await page.locator("#vote-counts").inner_text()
        async with page.expect_navigation():
            await page.click("#vote-counts a.stat")
        await screenshot(page, "votes-identity-leaks")
        seen["rows"] = await page.locator("#leaks tbody tr").count()
        await page.fill("textarea[name=words]", "小助手\n乐于助人")
        async with page.expect_navigation():
            await page.click("#identity-words button[type=submit]")
        seen["words"] = await page.input_value("textarea[name=words]")
        await page.goto(f"{base}/chat/campaigns/{study.pk}/votes/leaks/")
        await page.set_viewport_size({"width": 1366, "height": 1400})
        await screenshot(page, "votes-identity-words")
        return seen

    seen = run_in_browser(flow)
    assert "line 9, field 'model_b': a system cannot be compared with itself" in seen["error"]
    assert seen["chosen"] == 1
    assert seen["counts"].split() == [
        "8",
        "人工投票",
        "0",
        "LLM",
        "评审投票",
        "4",
        "泄露模型身份（已标记）",
    ]
    assert seen["rows"] == 4
    assert seen["words"] == "小助手\n乐于助人"
    assert Vote.objects.filter(campaign=study).count() == 8
