"""Reviewers, raters and the dataset page read grounding as people write it, from one template,
and the reviewer sees which items the worker ticked as used."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Dialogue
from chat.selectors.collection import grounding_view
from core.access import Role
from tests.annotation.factories import dialogue_with_turns
from tests.chat.factories import DatasetFactory, SampleFactory, skill
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

KNOWLEDGE = {
    "knowledge": [["流浪地球", "导演", "郭帆"], ["流浪地球", "主演", "吴京"]],
    "goal": [["START", "流浪地球", "吴京"]],
    "situation": "聊天 时间 : 晚上",
}
RECOMMENDATION = {
    "user_profile": {"姓名": "王小明", "喜欢 的 明星": ["周杰伦", "林俊杰"]},
    "goal": ["寒暄", "音乐推荐 『 晴天 』"],
}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_values_read_as_text_never_as_python_reprs() -> None:
    view = grounding_view(skill="recommendation", grounding=RECOMMENDATION)
    texts = [item.text for section in view.sections for item in section.items]
    assert texts == ["姓名：王小明", "喜欢 的 明星：周杰伦、林俊杰", "寒暄", "音乐推荐 『 晴天 』"]
    knowledge = grounding_view(skill="knowledge", grounding=KNOWLEDGE, used=["knowledge:1"])
    assert [i.text for i in knowledge.sections[1].items] == ["流浪地球", "吴京"]  # no START
    assert [i.used for i in knowledge.sections[0].items] == [False, True]
    assert knowledge.situation == "聊天 时间 : 晚上" and knowledge.used_count == 1


def _review_page(dialogue: Dialogue) -> str:
    reviewer = make_user("rev", Role.EXPERT)
    response = _client(reviewer).get(reverse("annotation:review-dialogue", args=[dialogue.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_reviewer_sees_the_items_the_worker_ticked_as_used() -> None:
    dialogue = dialogue_with_turns(status=Dialogue.Status.SUBMITTED)
    dialogue.grounding = KNOWLEDGE
    dialogue.grounding_used = ["knowledge:1", "goal:0"]
    dialogue.save()
    page = _review_page(dialogue)
    assert "工作者勾选为“已用”的信息：2 / 4" in page
    assert page.count('class="used"') == 2 and page.count("✓</span>") == 2
    assert "START" not in page and "[&#x27;" not in page and "['" not in page


def test_the_dataset_page_uses_the_same_rendering() -> None:
    dataset = DatasetFactory(skill=skill("recommendation"))
    SampleFactory(dataset=dataset, skill=skill("recommendation"), grounding=RECOMMENDATION)
    researcher = make_user("res", Role.RESEARCHER)
    page = _client(researcher).get(reverse("chat:dataset-detail", args=[dataset.pk]))
    html = page.content.decode()
    assert "喜欢 的 明星：周杰伦、林俊杰" in html and "grounding-view" in html
    assert "[&#x27;周杰伦" not in html
