"""Researcher pages for backends: list, create, edit, deactivate, test connection."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from chat.models import Backend
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory
from tests.chat.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db


def _form(**overrides: object) -> dict:
    data = {
        "name": "我的模型",
        "adapter": "openai",
        "description": "",
        "api_key_env": "",
        "concurrency_limit": "2",
        "timeout_s": "5",
        "config": json.dumps({"base_url": "http://127.0.0.1:9/v1", "model": "m"}),
    }
    data.update({k: str(v) for k, v in overrides.items()})
    return data


@pytest.mark.parametrize(
    "name",
    ["chat:backend-list", "chat:backend-create"],
)
def test_pages_are_for_researchers_only(name: str, expert_client, crowdworker_client) -> None:
    for client in (expert_client, crowdworker_client):
        assert client.get(reverse(name)).status_code == 403


def test_detail_edit_test_and_deactivate_are_for_researchers_only(
    expert_client, crowdworker_client
) -> None:
    backend = BackendFactory()
    for client in (expert_client, crowdworker_client):
        assert client.get(reverse("chat:backend-detail", args=[backend.pk])).status_code == 403
        assert client.get(reverse("chat:backend-edit", args=[backend.pk])).status_code == 403
        assert client.post(reverse("chat:backend-test", args=[backend.pk])).status_code == 403
        response = client.post(reverse("chat:backend-set-active", args=[backend.pk]))
        assert response.status_code == 403
    backend.refresh_from_db()
    assert backend.active


def test_the_list_shows_backends_and_whether_their_key_is_set(
    researcher_client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SET_KEY_VAR", "sk-top-secret")
    BackendFactory(name="有密钥", adapter="openai", api_key_env="SET_KEY_VAR")
    BackendFactory(name="缺密钥", adapter="openai", api_key_env="UNSET_KEY_VAR_1")
    BackendFactory(name="停用的", active=False)
    page = researcher_client.get(reverse("chat:backend-list")).content.decode()
    assert "有密钥" in page and "缺密钥" in page and "停用的" in page
    assert "SET_KEY_VAR</code> 已设置" in page
    assert "UNSET_KEY_VAR_1</code> 未设置" in page
    assert "sk-top-secret" not in page
    page = researcher_client.get(reverse("chat:backend-list"), {"active": "0"}).content.decode()
    assert "停用的" in page and "有密钥" not in page


def test_a_researcher_creates_a_backend_with_a_prompt_template(researcher_client, researcher):
    data = _form(prompt_knowledge="知识：\n$knowledge")
    response = researcher_client.post(reverse("chat:backend-create"), data)
    backend = Backend.objects.get(name="我的模型")
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:backend-detail", args=[backend.pk])
    assert backend.config == {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "prompt_templates": {"knowledge": "知识：\n$knowledge"},
    }
    assert backend.concurrency_limit == 2 and backend.timeout_s == 5.0
    assert backend.created_by == researcher


@pytest.mark.parametrize(
    ("overrides", "field_message"),
    [
        (
            {"config": '{"base_url": "http://x/v1",\n "model": }'},
            "不是合法的 JSON（第 2 行第 11 列）",
        ),
        ({"config": json.dumps({"base_url": "http://x/v1"})}, "model: required by the"),
        (
            {"config": json.dumps({"base_url": "ftp://x", "model": "m"})},
            "base_url: expected an http:// or https:// URL",
        ),
        (
            {"config": json.dumps({"base_url": "http://x/v1", "model": "m", "temprature": 1})},
            "temprature: unknown key for the",
        ),
        ({"prompt_persona": "人设：$persona"}, "unknown placeholder $persona at line 1, column 4"),
        ({"api_key_env": "sk-abc-123"}, "not the key itself"),
        ({"adapter": "retrieval", "config": json.dumps({"dataset": "没有"})}, "no dataset named"),
    ],
)
def test_bad_input_is_refused_with_the_field_named_and_nothing_saved(
    researcher_client, overrides: dict, field_message: str
) -> None:
    response = researcher_client.post(reverse("chat:backend-create"), _form(**overrides))
    assert response.status_code == 400
    assert field_message in response.content.decode()
    assert not Backend.objects.filter(name="我的模型").exists()


def test_a_duplicate_name_is_refused(researcher_client) -> None:
    BackendFactory(name="我的模型")
    response = researcher_client.post(reverse("chat:backend-create"), _form())
    assert response.status_code == 400
    assert "already exists" in response.content.decode()


def test_editing_keeps_templates_and_validates(researcher_client) -> None:
    dataset = DatasetFactory(name="检索库")
    backend = BackendFactory(
        name="检索",
        adapter="retrieval",
        config={"method": "tfidf", "dataset": "检索库", "prompt_templates": {"chitchat": "嗨"}},
    )
    url = reverse("chat:backend-edit", args=[backend.pk])
    page = researcher_client.get(url).content.decode()
    assert "检索库" in page and "\n嗨</textarea>" in page
    response = researcher_client.post(
        url,
        _form(
            name="检索-改",
            adapter="retrieval",
            config=json.dumps({"method": "bm25", "dataset": dataset.name, "k1": 1.5}),
            prompt_chitchat="嗨",
        ),
    )
    assert response.status_code == 302
    backend.refresh_from_db()
    assert backend.name == "检索-改"
    assert backend.config == {
        "method": "bm25",
        "dataset": "检索库",
        "k1": 1.5,
        "prompt_templates": {"chitchat": "嗨"},
    }
    response = researcher_client.post(
        url, _form(adapter="retrieval", config=json.dumps({"method": "lsa", "dataset": "检索库"}))
    )
    assert response.status_code == 400
    assert "method: &#x27;lsa&#x27; is not one of: tfidf, bm25" in response.content.decode()
    backend.refresh_from_db()
    assert backend.config["method"] == "bm25"


def test_deactivate_and_reactivate(researcher_client) -> None:
    backend = BackendFactory()
    url = reverse("chat:backend-set-active", args=[backend.pk])
    assert researcher_client.post(url, {"active": "0"}).status_code == 302
    backend.refresh_from_db()
    assert not backend.active
    researcher_client.post(url, {"active": "1"})
    backend.refresh_from_db()
    assert backend.active


def test_the_detail_page_shows_templates_and_escapes_config(researcher_client) -> None:
    backend = BackendFactory(
        adapter="openai", config={"base_url": "http://x/v1", "model": "<b>m</b>"}
    )
    page = researcher_client.get(reverse("chat:backend-detail", args=[backend.pk])).content.decode()
    assert "&lt;b&gt;m&lt;/b&gt;" in page and "<b>m</b>" not in page
    assert "你是一个知识型对话助手" in page  # the default knowledge template
    assert 'hx-post="' + reverse("chat:backend-test", args=[backend.pk]) in page


def test_test_connection_from_the_page_shows_the_reply_escaped(researcher_client) -> None:
    with FakeOpenAI(reply="<script>alert(1)</script>") as server:
        backend = BackendFactory(
            adapter="openai", config={"base_url": server.base_url, "model": "fake"}
        )
        response = researcher_client.post(
            reverse("chat:backend-test", args=[backend.pk]),
            {"message": "测试一下"},
            HTTP_HX_REQUEST="true",
        )
        assert server.requests[-1].json["messages"][-1] == {"role": "user", "content": "测试一下"}
    page = response.content.decode()
    assert response.status_code == 200
    assert "连接成功" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
    assert "<html" not in page  # only the partial


def test_test_connection_shows_the_error(researcher_client) -> None:
    with FakeOpenAI(fail_times=10, fail_status=503, retry_after=0) as server:
        backend = BackendFactory(
            adapter="openai",
            config={"base_url": server.base_url, "model": "fake", "max_retries": 0},
        )
        response = researcher_client.post(reverse("chat:backend-test", args=[backend.pk]))
    page = response.content.decode()
    assert "连接失败" in page and "HTTP 503" in page and "unavailable" in page
    assert "<html" in page  # without htmx: the whole page


def test_test_connection_of_the_demo_retrieval_backend(researcher_client) -> None:
    dataset = DatasetFactory(name="小库")
    SampleFactory(dataset=dataset, context=["你好"], references=["你好呀，今天过得怎么样？"])
    backend = BackendFactory(config={"method": "bm25", "dataset": "小库"})
    response = researcher_client.post(
        reverse("chat:backend-test", args=[backend.pk]), HTTP_HX_REQUEST="true"
    )
    assert "你好呀，今天过得怎么样？" in response.content.decode()


def test_the_form_help_names_the_adapter_keys_and_the_key_state(
    researcher_client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HELP_KEY_VAR", "sk-hidden")
    response = researcher_client.get(
        reverse("chat:backend-form-help"),
        {"adapter": "retrieval", "api_key_env": "HELP_KEY_VAR"},
        HTTP_HX_REQUEST="true",
    )
    page = response.content.decode()
    assert "<code>k1</code>" in page and "<code>dataset</code><strong>*</strong>" in page
    assert "服务器环境中已设置 HELP_KEY_VAR" in page
    assert "sk-hidden" not in page
