"""The backends API: researcher only, validated writes, deactivate, test connection."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Backend
from tests.chat.factories import BackendFactory, DatasetFactory
from tests.chat.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_is_for_researchers_only(expert, crowdworker) -> None:
    backend = BackendFactory()
    for user in (expert, crowdworker):
        client = _api(user)
        assert client.get(reverse("api-backend-list")).status_code == 403
        assert client.post(reverse("api-backend-list"), {}, format="json").status_code == 403
        assert client.get(reverse("api-backend-detail", args=[backend.pk])).status_code == 403
        assert (
            client.patch(
                reverse("api-backend-detail", args=[backend.pk]), {"active": False}, format="json"
            ).status_code
            == 403
        )
        assert client.post(reverse("api-backend-test", args=[backend.pk])).status_code == 403
        assert client.post(reverse("api-backend-deactivate", args=[backend.pk])).status_code == 403
    backend.refresh_from_db()
    assert backend.active


def test_create_list_and_retrieve_without_the_secret(
    researcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TEST_KEY", "sk-never-shown")
    client = _api(researcher)
    response = client.post(
        reverse("api-backend-list"),
        {
            "name": "vllm-qwen",
            "adapter": "openai",
            "config": {"base_url": "http://127.0.0.1:8000/v1", "model": "qwen", "top_p": 0.9},
            "api_key_env": "API_TEST_KEY",
            "concurrency_limit": 8,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["api_key_env"] == "API_TEST_KEY" and body["api_key_set"] is True
    assert body["concurrency_limit"] == 8 and body["timeout_s"] == 60.0
    backend = Backend.objects.get(name="vllm-qwen")
    assert backend.created_by == researcher
    listing = client.get(reverse("api-backend-list"), {"adapter": "openai"})
    assert [b["name"] for b in listing.json()["results"]] == ["vllm-qwen"]
    detail = client.get(reverse("api-backend-detail", args=[backend.pk]))
    assert "sk-never-shown" not in listing.content.decode() + detail.content.decode()


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"config": {"base_url": "http://x/v1"}}, "config.model", "required by the 'openai'"),
        (
            {"config": {"base_url": "http://x/v1", "model": "m", "temperature": 3}},
            "config.temperature",
            "must be ≤ 2",
        ),
        (
            {
                "config": {
                    "base_url": "http://x/v1",
                    "model": "m",
                    "prompt_templates": {"knowledge": "$oops"},
                }
            },
            "config.prompt_templates.knowledge",
            "unknown placeholder $oops",
        ),
        ({"concurrency_limit": 0}, "concurrency_limit", "between 1 and"),
        ({"timeout_s": -1}, "timeout_s", "more than 0"),
    ],
)
def test_invalid_backends_are_refused_naming_the_field(
    researcher, payload: dict, field: str, message: str
) -> None:
    body = {"name": "坏的", "adapter": "openai", **payload}
    response = _api(researcher).post(reverse("api-backend-list"), body, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert message in response.json()["detail"]
    assert not Backend.objects.filter(name="坏的").exists()


def test_patch_updates_some_fields_and_validates_the_whole(researcher) -> None:
    DatasetFactory(name="库")
    backend = BackendFactory(adapter="retrieval", config={"method": "tfidf", "dataset": "库"})
    url = reverse("api-backend-detail", args=[backend.pk])
    client = _api(researcher)
    response = client.patch(url, {"timeout_s": 12.5, "description": "基线"}, format="json")
    assert response.status_code == 200
    backend.refresh_from_db()
    assert backend.timeout_s == 12.5 and backend.description == "基线"
    response = client.patch(url, {"adapter": "openai"}, format="json")  # config no longer fits
    assert response.status_code == 400
    assert response.json()["field"] == "config.base_url"
    backend.refresh_from_db()
    assert backend.adapter == "retrieval"


def test_deactivate(researcher) -> None:
    backend = BackendFactory()
    response = _api(researcher).post(reverse("api-backend-deactivate", args=[backend.pk]))
    assert response.status_code == 200 and response.json()["active"] is False
    backend.refresh_from_db()
    assert not backend.active


def test_test_connection_reports_reply_and_latency(researcher) -> None:
    with FakeOpenAI(reply="在的！") as server:
        backend = BackendFactory(
            adapter="openai", config={"base_url": server.base_url, "model": "fake"}
        )
        response = _api(researcher).post(
            reverse("api-backend-test", args=[backend.pk]), {"message": "在吗"}, format="json"
        )
    body = response.json()
    assert response.status_code == 200
    assert body["ok"] is True and body["reply"] == "在的！" and body["error"] == ""
    assert body["latency_ms"] >= 0


def test_test_connection_reports_a_timeout(researcher) -> None:
    with FakeOpenAI(stall_s=3) as server:
        backend = BackendFactory(
            adapter="openai", timeout_s=0.3, config={"base_url": server.base_url, "model": "f"}
        )
        body = _api(researcher).post(reverse("api-backend-test", args=[backend.pk])).json()
    assert body["ok"] is False and body["error_kind"] == "timeout"
    assert "0.3 s" in body["error"]


def test_the_schema_documents_the_endpoints() -> None:
    """Generated for this area's routes only, so other areas' schema issues do not mask ours."""
    from django.urls import include, path
    from drf_spectacular.generators import SchemaGenerator

    from chat import api_urls

    ours = [p for p in api_urls.urlpatterns if (p.name or "").startswith("api-backend")]
    schema = SchemaGenerator(patterns=[path("api/", include(ours))]).get_schema(public=True)
    paths = schema["paths"]
    assert set(paths) == {
        "/api/backends/",
        "/api/backends/{id}/",
        "/api/backends/{id}/deactivate/",
        "/api/backends/{id}/test/",
    }
    assert set(paths["/api/backends/{id}/"]) >= {"get", "put", "patch"}
    test_op = paths["/api/backends/{id}/test/"]["post"]
    assert "BackendTestOutput" in str(test_op["responses"]["200"])
    assert "api_key_set" in schema["components"]["schemas"]["BackendOutput"]["properties"]
