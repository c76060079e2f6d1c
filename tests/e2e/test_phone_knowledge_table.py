"""The chat page's knowledge table on a phone (375×740): it fits its card, and no cell is
squeezed into a column of one or two characters (issue 22 item 17)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat.models import Backend, Campaign, CampaignBackend
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.chat.live.asgi_server import ServerThread, drop_other_connections
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# DuConv-like knowledge: long objects (an award, a comment) beside short subjects and relations.
GROUNDING = {
    "knowledge": [
        ["霸王别姬", "导演", "陈凯歌"],
        ["霸王别姬", "获奖", "第46届戛纳国际电影节金棕榈奖（1993年，与《钢琴课》并列）"],
        [
            "霸王别姬",
            "评论",
            "影片以京剧艺人半个世纪的悲欢离合，折射出中国社会的巨大变迁，令人动容。",
        ],
        ["张国荣", "代表作", "阿飞正传、春光乍泄、霸王别姬"],
        # Long subjects and relations happen too (an award as the subject, a film's full title).
        ["第46届戛纳国际电影节金棕榈奖", "获奖影片", "霸王别姬"],
        ["大话西游之大圣娶亲", "主要成就", "香港电影金像奖最佳编剧提名"],
    ],
    "goal": [["START", "霸王别姬", "陈凯歌"]],
}


@pytest.fixture
def server(transactional_db) -> Iterator[ServerThread]:
    running = ServerThread().start()
    try:
        yield running
    finally:
        running.stop()
        drop_other_connections()


def _campaign() -> Campaign:
    backend = Backend.objects.create(
        name="m",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 0},
        timeout_s=5,
    )
    dataset = DatasetFactory(skill=skill("knowledge"))
    SampleFactory(dataset=dataset, skill=skill("knowledge"), grounding=GROUNDING)
    campaign = Campaign.objects.create(name="手机知识表", status=Campaign.Status.ACTIVE)
    campaign.skills.add(skill("knowledge"))
    campaign.datasets.add(dataset)
    CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="模型 A")
    return campaign


MEASURE = """() => {
  const table = document.querySelector('#grounding table.triples');
  const card = table.closest('.chat-side');
  const cardBox = card.getBoundingClientRect();
  const cells = [...table.querySelectorAll('td:not(.tick)')].map(td => {
    const box = td.getBoundingClientRect();
    const font = parseFloat(getComputedStyle(td).fontSize);
    return {text: td.textContent.trim(), width: box.width, right: box.right, font};
  });
  return {
    cardLeft: cardBox.left, cardRight: cardBox.right,
    tableRight: table.getBoundingClientRect().right,
    pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
    cells,
  };
}"""


def test_the_knowledge_table_fits_a_phone_and_keeps_cells_readable(run_in_browser, server):
    campaign = _campaign()
    invite = f"{server.url}/chat/join/{campaign.invite_token}/?PROLIFIC_PID=phone-worker"

    async def flow(page):
        await page.set_viewport_size({"width": 375, "height": 740})
        await page.goto(invite)
        async with page.expect_navigation():
            await page.get_by_role("button", name="开始", exact=True).click()
        await page.wait_for_selector("#grounding table.triples", state="attached")
        # On a phone the panel starts folded above the chat: the worker opens it.
        if not await page.evaluate("document.getElementById('side-panel').open"):
            await page.locator("#side-panel > summary").click()
        await page.wait_for_selector("#grounding table.triples")
        measured = await page.evaluate(MEASURE)
        await screenshot(page, "chat-knowledge-table-375")
        return measured

    seen = run_in_browser(flow)
    assert seen["pageOverflow"] <= 0
    assert seen["tableRight"] <= seen["cardRight"] + 0.5  # the table stays inside its card
    for cell in seen["cells"]:
        assert cell["right"] <= seen["cardRight"] + 0.5, cell
        # At least three characters a line wherever the text is longer than that.
        if len(cell["text"]) >= 3:
            assert cell["width"] >= 3 * cell["font"] - 1, cell
