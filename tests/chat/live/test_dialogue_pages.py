"""The chat page's other actions: grounding ticks, the finish rule, submit, resume, re-collect,
the completion page, the crowdworker home, and who may see what."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Dialogue, Turn
from chat.selectors.collection import chat_state, grounding_sections
from chat.services import collection
from core.access import Role
from tests.chat.live.conftest import browser, read_events, run, session_cookies
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _talk(dialogue: Dialogue, turns: int) -> None:
    """`turns` finished turns (utterance + reply), as if chatted."""
    start = dialogue.turns.count()
    for i in range(turns):
        index = start + 2 * i
        Turn.objects.create(dialogue=dialogue, index=index, speaker="user", text=f"问{i}")
        Turn.objects.create(dialogue=dialogue, index=index + 1, speaker="system", text=f"答{i}")


def _tick(client: Client, dialogue: Dialogue, *ids: str, htmx: bool = True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    url = reverse("chat:live-grounding", args=[dialogue.pk])
    return client.post(url, {"used": list(ids)}, **headers)


def test_the_page_shows_grounding_instructions_alias_and_counter_but_never_the_model_name(
    make_chat,
):
    chat = make_chat()
    page = _client(chat.worker).get(reverse("chat:live-dialogue", args=[chat.dialogue.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "霸王别姬" in html and "陈凯歌" in html and "1993年" in html
    assert html.count('name="used"') == 4  # two triples, two topics of the path
    assert "START" not in html
    assert "话题路径" in html and "请围绕知识聊天。" in html
    assert "模型 A" in html and chat.backend.name not in html
    assert "第 1 / 10 轮" in html
    assert 'id="finish-button" disabled' in html.replace("\n", "")


def test_the_grounding_panel_follows_the_skill():
    recommendation = grounding_sections(
        skill="recommendation",
        grounding={
            "user_profile": {"姓名": "王小明", "喜欢的明星": ["周杰伦"]},
            "goal": ["寒暄", "音乐推荐 『晴天』"],
            "knowledge": [["周杰伦", "代表作", "晴天"]],
        },
    )
    assert [s.key for s in recommendation] == ["user_profile", "goal"]
    assert [i.text for i in recommendation[0].items] == ["姓名：王小明", "喜欢的明星：周杰伦"]
    persona = grounding_sections(
        skill="persona", grounding={"persona": {"bot": ["我是护士"], "user": ["我是学生"]}}
    )
    assert [(s.key, [i.id for i in s.items]) for s in persona] == [
        ("persona.bot", ["persona.bot:0"]),
        ("persona.user", ["persona.user:0"]),
    ]
    assert grounding_sections(skill="chitchat", grounding={"knowledge": [["a", "b", "c"]]}) == []
    duconv = grounding_sections(
        skill="knowledge",
        grounding={
            "knowledge": [["流浪地球", "导演", "郭帆"]],
            "goal": [["START", "流浪地球", "吴京"], ["流浪地球", "主演", "吴京"]],
        },
    )
    assert [(i.id, i.text) for i in duconv[1].items] == [
        ("goal:0", "流浪地球"),
        ("goal:1", "吴京"),
        ("goal:2", "流浪地球 · 主演 · 吴京"),
    ]
    flat = grounding_sections(
        skill="knowledge", grounding={"goal": ["START", "霸王别姬", "张国荣"]}
    )
    assert [i.text for i in flat[0].items] == ["霸王别姬", "张国荣"]


def test_ticks_are_saved_and_unknown_items_are_refused(make_chat):
    chat = make_chat()
    client = _client(chat.worker)
    response = _tick(client, chat.dialogue, "knowledge:1", "goal:0")
    assert response.status_code == 200
    assert 'id="chat-status"' in response.content.decode()
    assert "已用信息 2 / 4" in response.content.decode()
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.grounding_used == ["knowledge:1", "goal:0"]

    refused = _tick(client, chat.dialogue, "knowledge:0", "knowledge:9")
    assert refused.status_code == 422 and "knowledge:9" in refused.content.decode()
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.grounding_used == ["knowledge:1", "goal:0"]


def test_finish_needs_every_item_ticked_or_max_turns_and_at_least_min_turns(make_chat):
    chat = make_chat(max_turns=3, min_turns=2)
    dialogue = chat.dialogue
    client = _client(chat.worker)
    _talk(dialogue, 1)
    _tick(client, dialogue, "knowledge:0", "knowledge:1", "goal:0", "goal:1")
    dialogue.refresh_from_db()
    assert not collection.can_finish(dialogue=dialogue)  # everything ticked, but 1 < min 2
    assert chat_state(dialogue=dialogue).finish_hint == "至少需要 2 轮对话。"
    _talk(dialogue, 1)
    assert collection.can_finish(dialogue=dialogue)

    _tick(client, dialogue, "knowledge:0")
    dialogue.refresh_from_db()
    assert not collection.can_finish(dialogue=dialogue)  # 2 turns, one item left unticked
    Turn.objects.create(dialogue=dialogue, index=4, speaker="user", text="最后一句")
    assert not collection.can_finish(dialogue=dialogue)  # a reply is still awaited
    Turn.objects.create(dialogue=dialogue, index=5, speaker="system", text="好的")
    state = chat_state(dialogue=dialogue)
    assert state.turns_done == 3 and state.turn_number == 3
    assert state.can_finish and not state.can_send  # max turns reached


def test_a_chitchat_dialogue_finishes_after_min_turns(make_chat):
    chat = make_chat(grounding={}, skill_key="chitchat", min_turns=2)
    _talk(chat.dialogue, 1)
    assert not collection.can_finish(dialogue=chat.dialogue)
    _talk(chat.dialogue, 1)
    assert collection.can_finish(dialogue=chat.dialogue)


def test_submit_is_refused_before_the_finish_rule_holds(make_chat):
    chat = make_chat()
    _talk(chat.dialogue, 1)
    response = _client(chat.worker).post(
        reverse("chat:live-submit", args=[chat.dialogue.pk]), follow=True
    )
    assert "请用完并勾选全部信息，或聊满 10 轮。" in response.content.decode()
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.status == Dialogue.Status.IN_PROGRESS
    assert chat.dialogue.submitted_at is None


def test_submit_hands_the_dialogue_in_and_shows_the_completion_code(make_chat):
    chat = make_chat(completion_url="https://app.prolific.com/submissions/complete")
    client = _client(chat.worker)
    _talk(chat.dialogue, 1)
    _tick(client, chat.dialogue, "knowledge:0", "knowledge:1", "goal:0", "goal:1")
    response = client.post(reverse("chat:live-submit", args=[chat.dialogue.pk]))
    # One scenario and one model: nothing else to chat about, so the worker is done.
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:live-completion", args=[chat.campaign.pk])
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.status == Dialogue.Status.SUBMITTED
    assert chat.dialogue.submitted_at is not None

    page = client.get(response["Location"]).content.decode()
    assert chat.campaign.completion_code in page
    assert f"cc={chat.campaign.completion_code}" in page  # the redirect back to the site
    home = client.get(reverse("home")).content.decode()
    assert "已完成的活动" in home and chat.campaign.completion_code in home

    again = client.post(reverse("chat:live-submit", args=[chat.dialogue.pk]), follow=True)
    assert "这个对话已经提交过了。" in again.content.decode()


def _second_scenario(chat):
    return chat.dialogue.scenario.__class__.objects.create(
        dataset=chat.dialogue.scenario.dataset,
        index=99,
        external_id="second",
        skill=chat.dialogue.skill,
        grounding={"knowledge": [["活着", "作者", "余华"]]},
    )


def test_after_each_submit_the_worker_may_stop_with_the_code_or_continue(make_chat):
    # The default campaign: no cap per worker, more scenarios left after the first dialogue.
    chat = make_chat(completion_url="https://app.prolific.com/submissions/complete")
    assert chat.campaign.per_worker_cap == 0
    second = _second_scenario(chat)
    client = _client(chat.worker)
    _talk(chat.dialogue, 1)
    _tick(client, chat.dialogue, "knowledge:0", "knowledge:1", "goal:0", "goal:1")
    response = client.post(reverse("chat:live-submit", args=[chat.dialogue.pk]))

    assert response["Location"] == reverse("chat:live-completion", args=[chat.campaign.pk])
    page = client.get(response["Location"]).content.decode()
    code = chat.campaign.completion_code
    assert f'id="completion-code">{code}<' in page and f'data-copy-text="{code}"' in page
    assert f"cc={code}" in page and 'id="stop"' in page  # stop: back to the site with the code
    assert "data-redirect-url" not in page  # no automatic redirect while work remains
    assert 'id="continue"' in page
    assert not Dialogue.objects.filter(status=Dialogue.Status.IN_PROGRESS).exists()
    home = client.get(reverse("home")).content.decode()
    assert code in home and "开始下一段对话" in home  # the code stays on the worker home

    response = client.post(reverse("chat:live-next", args=[chat.campaign.pk]))
    following = Dialogue.objects.get(worker=chat.worker, status=Dialogue.Status.IN_PROGRESS)
    assert following.scenario == second
    assert response["Location"] == reverse("chat:live-dialogue", args=[following.pk])
    assert "余华" in client.get(response["Location"]).content.decode()
    assert code in client.get(reverse("home")).content.decode()


def test_the_code_stays_on_the_home_page_after_a_dialogue_is_rejected(make_chat):
    chat = make_chat()
    _second_scenario(chat)
    client = _client(chat.worker)
    _talk(chat.dialogue, 1)
    _tick(client, chat.dialogue, "knowledge:0", "knowledge:1", "goal:0", "goal:1")
    response = client.post(reverse("chat:live-submit", args=[chat.dialogue.pk]))
    code = chat.campaign.completion_code
    assert code in client.get(response["Location"]).content.decode()  # shown once

    Dialogue.objects.filter(pk=chat.dialogue.pk).update(
        status=Dialogue.Status.REJECTED, rejection_reason="回复太短。"
    )
    home = client.get(reverse("home"))
    assert home.status_code == 200
    page = home.content.decode()
    assert f'data-copy-text="{code}"' in page  # the code is still there to copy
    assert "回复太短。" in page and "重新采集" in page  # and the re-collection is asked for
    completion = client.get(reverse("chat:live-completion", args=[chat.campaign.pk]))
    assert completion.status_code == 200 and code in completion.content.decode()
    assert Dialogue.objects.get(pk=chat.dialogue.pk).status == Dialogue.Status.REJECTED


def test_no_code_before_the_first_submitted_dialogue(make_chat):
    chat = make_chat()
    client = _client(chat.worker)
    response = client.get(reverse("chat:live-completion", args=[chat.campaign.pk]))
    assert response.status_code == 409
    assert chat.campaign.completion_code not in response.content.decode()
    assert chat.campaign.completion_code not in client.get(reverse("home")).content.decode()


def test_skipping_returns_the_scenario_to_the_pool_at_once_with_the_reason(make_chat):
    chat = make_chat()
    second = _second_scenario(chat)
    client = _client(chat.worker)
    page = client.get(reverse("chat:live-dialogue", args=[chat.dialogue.pk])).content.decode()
    assert "跳过这个场景" in page and 'value="unclear"' in page

    url = reverse("chat:live-abandon", args=[chat.dialogue.pk])
    refused = client.post(url, {"reason": ""}, follow=True)
    assert "请选择跳过或放弃的原因。" in refused.content.decode()
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.status == Dialogue.Status.IN_PROGRESS

    response = client.post(url, {"reason": "unfamiliar", "note": "没看过这部电影", "then": "next"})
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.status == Dialogue.Status.ABANDONED
    assert (chat.dialogue.abandon_reason, chat.dialogue.abandon_note) == (
        "unfamiliar",
        "没看过这部电影",
    )
    following = Dialogue.objects.get(worker=chat.worker, status=Dialogue.Status.IN_PROGRESS)
    assert following.scenario == second
    assert response["Location"] == reverse("chat:live-dialogue", args=[following.pk])

    # Another worker gets the skipped scenario now, not after the reservation timeout.
    from chat.services.scenario_assignment import scenario_assign_next

    other = make_user("dora", Role.CROWDWORKER)
    participant = chat.participant.__class__.objects.create(campaign=chat.campaign, user=other)
    assert scenario_assign_next(participant=participant).scenario == chat.dialogue.scenario

    researcher = make_user("rhea", Role.RESEARCHER)
    detail = _client(researcher).get(reverse("chat:campaign-detail", args=[chat.campaign.pk]))
    assert "已放弃或跳过 1 段" in detail.content.decode()
    assert "不熟悉这个话题 1" in detail.content.decode()

    again = client.post(url, {"reason": "other"}, follow=True)
    assert "只有进行中的对话才能跳过或放弃。" in again.content.decode()


def test_abandoning_and_stopping_leads_to_the_code_when_one_dialogue_was_submitted(make_chat):
    chat = make_chat()
    _second_scenario(chat)
    client = _client(chat.worker)
    _talk(chat.dialogue, 1)
    _tick(client, chat.dialogue, "knowledge:0", "knowledge:1", "goal:0", "goal:1")
    client.post(reverse("chat:live-submit", args=[chat.dialogue.pk]))
    client.post(reverse("chat:live-next", args=[chat.campaign.pk]))
    following = Dialogue.objects.get(worker=chat.worker, status=Dialogue.Status.IN_PROGRESS)
    _talk(following, 1)
    response = client.post(
        reverse("chat:live-abandon", args=[following.pk]),
        {"reason": "model_broken", "then": "stop"},
    )
    assert response["Location"] == reverse("chat:live-completion", args=[chat.campaign.pk])
    page = client.get(response["Location"]).content.decode()
    assert chat.campaign.completion_code in page
    following.refresh_from_db()
    assert following.status == Dialogue.Status.ABANDONED and following.turns.count() == 2


def test_completion_codes_avoid_look_alike_characters():
    from chat.models import Campaign

    codes = {Campaign(name=f"c{i}").completion_code for i in range(200)}
    assert len(codes) == 200
    assert all(len(code) == 8 and not set(code) & set("IlL1O0o") for code in codes)
    assert all(code == code.upper() for code in codes)


def test_a_reload_shows_the_same_turns_and_ticks(make_chat):
    chat = make_chat()
    client = _client(chat.worker)
    _talk(chat.dialogue, 2)
    _tick(client, chat.dialogue, "knowledge:1")
    html = client.get(reverse("chat:live-dialogue", args=[chat.dialogue.pk])).content.decode()
    assert [html.index(t) for t in ("问0", "答0", "问1", "答1")] == sorted(
        html.index(t) for t in ("问0", "答0", "问1", "答1")
    )
    assert 'value="knowledge:1" id="g-knowledge-1" checked' in html
    assert 'value="knowledge:0" id="g-knowledge-0">' in html
    assert "第 3 / 10 轮" in html


def test_a_rejected_dialogue_comes_back_with_its_reason_and_is_recollected(make_chat):
    chat = make_chat()
    _talk(chat.dialogue, 1)
    Dialogue.objects.filter(pk=chat.dialogue.pk).update(
        status=Dialogue.Status.REJECTED, rejection_reason="知识没有用上，回复太短。"
    )
    client = _client(chat.worker)
    home = client.get(reverse("home")).content.decode()
    assert "知识没有用上，回复太短。" in home and "重新采集" in home
    page = client.get(reverse("chat:live-dialogue", args=[chat.dialogue.pk])).content.decode()
    assert "知识没有用上，回复太短。" in page and 'id="composer"' not in page

    response = client.post(reverse("chat:live-recollect", args=[chat.dialogue.pk]))
    fresh = Dialogue.objects.get(recollection_of=chat.dialogue)
    assert response["Location"] == reverse("chat:live-dialogue", args=[fresh.pk])
    assert (fresh.backend, fresh.scenario, fresh.status) == (
        chat.backend,
        chat.dialogue.scenario,
        Dialogue.Status.IN_PROGRESS,
    )
    assert fresh.turns.count() == 0
    assert "知识没有用上" not in client.get(reverse("home")).content.decode()


def test_the_home_page_offers_to_continue_or_start(make_chat):
    chat = make_chat()
    client = _client(chat.worker)
    home = client.get(reverse("home")).content.decode()
    assert "继续对话" in home and reverse("chat:live-dialogue", args=[chat.dialogue.pk]) in home
    chat.dialogue.delete()
    home = client.get(reverse("home")).content.decode()
    assert "开始对话" in home and reverse("chat:live-next", args=[chat.campaign.pk]) in home
    response = client.post(reverse("chat:live-next", args=[chat.campaign.pk]))
    started = Dialogue.objects.get(worker=chat.worker)
    assert response["Location"] == reverse("chat:live-dialogue", args=[started.pk])


def test_another_workers_dialogue_is_not_found(make_chat):
    chat = make_chat()
    other = make_user("mallory", Role.CROWDWORKER)
    client = _client(other)
    for name in ("live-dialogue",):
        assert client.get(reverse(f"chat:{name}", args=[chat.dialogue.pk])).status_code == 404
    for name in ("live-send", "live-grounding", "live-submit", "live-retry", "live-recollect"):
        url = reverse(f"chat:{name}", args=[chat.dialogue.pk])
        assert client.post(url, {"text": "你好", "used": ["goal:0"]}).status_code == 404
    assert chat.dialogue.turns.count() == 0
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.grounding_used == []


def test_researchers_cannot_chat_as_workers(make_chat, researcher):
    chat = make_chat()
    client = _client(researcher)
    assert client.get(reverse("chat:live-dialogue", args=[chat.dialogue.pk])).status_code == 403
    url = reverse("chat:live-send", args=[chat.dialogue.pk])
    assert client.post(url, {"text": "你好"}).status_code == 403
    assert client.post(reverse("chat:live-next", args=[chat.campaign.pk])).status_code == 403
    assert chat.dialogue.turns.count() == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_stream_is_refused_to_others_through_the_asgi_app(asgi_server, make_chat):
    chat = make_chat()
    other = session_cookies(make_user("mallory", Role.CROWDWORKER))
    researcher = session_cookies(make_user("rita", Role.RESEARCHER))
    owner = session_cookies(chat.worker)
    url = f"/chat/work/dialogues/{chat.dialogue.pk}/stream/"

    async def flow():
        statuses = []
        for cookies in (other, researcher, None):
            async with browser(asgi_server, cookies) as client:
                statuses.append((await client.get(url)).status_code)
        async with browser(asgi_server, owner) as client:
            events = await read_events(client, chat.dialogue.pk)
        return statuses, events

    statuses, events = run(flow())
    assert statuses == [404, 403, 403]
    # Nothing to answer yet: the owner is told so, and no model is called.
    assert [e.name for e in events] == ["failed"]
    assert "没有等待模型回复的话" in events[0].data["html"]


def test_the_invite_link_lands_in_the_chat_and_hides_the_internal_username(make_chat):
    chat = make_chat()
    _second_scenario(chat)  # the first one is cora's
    client = Client()
    url = reverse("chat:campaign-join", args=[chat.campaign.invite_token])
    assert client.get(url + "?PROLIFIC_PID=p-77").status_code == 200  # confirm: login is a POST
    response = client.post(url, {"worker_id": "p-77", "source": "prolific"})
    dialogue = Dialogue.objects.get(worker__participations__external_id="p-77")
    assert response["Location"] == reverse("chat:live-dialogue", args=[dialogue.pk])
    page = client.get(response["Location"]).content.decode()
    worker = dialogue.worker
    assert worker.get_username() not in page
    assert '<span class="role role-crowdworker">众包工作者</span>' in page


def test_the_chat_page_is_never_stored_so_back_after_finish_fetches_it_again(make_chat):
    """A stored copy would come back on the browser's Back after 「完成」 looking open."""
    chat = make_chat()
    page = _client(chat.worker).get(reverse("chat:live-dialogue", args=[chat.dialogue.pk]))
    assert page.status_code == 200
    assert "no-store" in page["Cache-Control"]
    chat.dialogue.refresh_from_db()
    assert chat.dialogue.status == Dialogue.Status.IN_PROGRESS
