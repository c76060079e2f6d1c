"""The judge page names its sampling settings in words, in the page's language: never the
stored JSON (a Python dict such as "{'n': 1, …}")."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import reverse

from judges import services
from tests.annotation.factories import rubric
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge():
    with FakeOpenAI(reply_fn=answer_for) as server:
        yield services.judge_create(
            name="三次采样",
            backend=judge_backend(server),
            rubric=rubric("msde"),
            sampling={"n": 3, "temperature": 0.7, "aggregate": "majority", "geval": True},
        )


def _sampling(html: str) -> str:
    return re.search(r'<dd id="judge-sampling">(.*?)</dd>', html, flags=re.S).group(1)


def test_the_judge_page_lists_the_sampling_settings_in_words(researcher_client, judge):
    response = researcher_client.get(reverse("judges:judge-detail", args=[judge.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "{&#x27;n&#x27;" not in html and "{'n'" not in html
    assert (
        _sampling(html)
        == "采样次数 n 3 · 多次采样的汇总 多数投票 · 温度 0.7 · G-Eval 按对数概率加权打分"
    )


def test_the_sampling_settings_read_in_english(researcher_client, judge):
    researcher_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    response = researcher_client.get(reverse("judges:judge-detail", args=[judge.pk]))
    assert response.status_code == 200
    assert _sampling(response.content.decode()) == (
        "Samples n 3 · Aggregation over samples Majority vote · Temperature 0.7"
        " · G-Eval scores weighted by log-probabilities"
    )
