"""Every API endpoint parses like the others (issue 23, item 10): whatever endpoint takes a body,
deep nesting, a NUL character or a lone surrogate is a 400 (never a 500), and free text and
structured fields are bounded field by field, not only by the 10 MB body cap.

The endpoints come from the published OpenAPI schema, so a new endpoint is covered the day it
is added."""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from chat.models import Backend, Campaign, Dataset, Dialogue
from core.api import TEXT_MAX_LENGTH, model_bounds
from workspace.demo import RATED_STUDY, demo_load

pytestmark = pytest.mark.django_db

DEEP = "[" * 3000 + "]" * 3000
BIG_CONFIG = {"dataset": "演示·闲聊", "ngram_range": list(range(1001))}
BAD_BODIES = {
    "deep nesting": '{"name": ' + DEEP + "}",
    "NUL": '{"name": "a\\u0000b", "description": "x"}',
    "lone surrogate": '{"name": "\\ud800", "description": "x"}',
}


def _schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _body_operations() -> list[tuple[str, str, list[str]]]:
    """(method, path, content types) of every operation that takes a request body."""
    found = []
    for path, operations in _schema()["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if content:
                found.append((method, path, list(content)))
    return found


def _fill(path: str) -> str:
    """The path with each parameter set to an object that exists (after the demo), so the
    view reaches its body instead of answering 404."""
    rated = Campaign.objects.get(name=RATED_STUDY)
    ids = {
        "backends": Backend.objects.order_by("pk").first().pk,
        "campaigns": rated.pk,
        "review/policies": rated.pk,
        "review/dialogues": Dialogue.objects.filter(campaign=rated).first().pk,
        "rating-jobs": rated.rating_jobs.first().pk,
        "datasets": Dataset.objects.order_by("pk").first().pk,
    }
    for prefix, pk in ids.items():
        if path.startswith(f"/api/{prefix}/{{"):
            return re.sub(r"\{[^}]+\}", str(pk), path, count=1).replace("{rater_id}", "1")
    return re.sub(r"\{[^}]+\}", "987654", path)


@pytest.fixture
def api(researcher) -> APIClient:
    demo_load()
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def _unbounded(schema: dict, node: dict, where: str, seen: frozenset[str] = frozenset()) -> list:
    """Each input value under ``node`` that no bound in the schema limits: a string without
    maxLength, an array without maxItems, a number without maximum, a free-form object or JSON
    value without BoundedJSONField's ``x-max-values``. Choices (enum), booleans and uploaded
    files (``format: binary``, bounded by the upload limits) are bounded by what they are."""
    for key in ("allOf", "oneOf", "anyOf"):
        if key in node:
            return [p for sub in node[key] for p in _unbounded(schema, sub, where, seen)]
    if "$ref" in node:
        if node["$ref"] in seen:
            return []
        seen = seen | {node["$ref"]}
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    kind = node.get("type")
    if node.get("readOnly") or "enum" in node or kind == "boolean":
        return []
    if kind == "string":
        bounded = "maxLength" in node or node.get("format") == "binary"
        return [] if bounded else [f"{where}: string without maxLength"]
    if kind in ("integer", "number"):
        return [] if "maximum" in node else [f"{where}: {kind} without maximum"]
    if kind == "array":
        found = [] if "maxItems" in node else [f"{where}: array without maxItems"]
        return found + _unbounded(schema, node.get("items", {}), f"{where}[]", seen)
    if kind == "object" and "properties" in node:
        return [
            p
            for name, child in node["properties"].items()
            for p in _unbounded(schema, child, f"{where}.{name}", seen)
        ]
    return [] if "x-max-values" in node else [f"{where}: JSON value without x-max-values"]


def test_every_request_body_field_is_bounded_in_the_schema() -> None:
    """Every input of every endpoint has a bound of its own, read from the published schema
    (so a new endpoint or field is covered the day it is added): a 9 MB backend description or
    a million-item report config was accepted with only the 10 MB body cap in the way."""
    schema = _schema()
    unbounded, checked = [], 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for content_type, body in operation.get("requestBody", {}).get("content", {}).items():
                checked += 1
                where = f"{method.upper()} {path} ({content_type})"
                unbounded += _unbounded(schema, body["schema"], where)
    assert checked >= 30
    assert not unbounded, "\n".join(unbounded)


def test_the_schema_documents_a_json_field_s_bounds() -> None:
    config = _schema()["components"]["schemas"]["ReportInput"]["properties"]["config"]
    assert config["x-max-values"] == 1000
    assert config["x-max-string-length"] > 0 and config["x-max-depth"] > 0


@pytest.mark.parametrize(
    ("model", "field", "bounds"),
    [
        (Backend, "name", {"max_length": 120}),  # a CharField: its own max_length
        (Backend, "description", {"max_length": TEXT_MAX_LENGTH}),  # a TextField: the API's
        (Campaign, "max_turns", {"min_value": 0, "max_value": 32767}),  # its column's range
        (Campaign, "opening_seed", {"min_value": -(2**31), "max_value": 2**31 - 1}),
        (Dialogue, "id", {"min_value": -(2**63), "max_value": 2**63 - 1}),
    ],
)
def test_model_bounds_are_the_model_field_s(model, field, bounds) -> None:
    assert model_bounds(model, field) == bounds
    assert model_bounds(model, field, min_value=1)["min_value"] == 1


def test_every_endpoint_answers_400_to_deep_nesting_nul_and_lone_surrogates(api) -> None:
    operations = _body_operations()
    assert len(operations) >= 30  # the schema really lists the API
    answered: dict[str, set[int]] = {}
    for method, path, content_types in operations:
        url = _fill(path)
        for problem, body in BAD_BODIES.items():
            if "application/json" in content_types:
                response = getattr(api, method)(url, body, content_type="application/json")
            else:  # an upload endpoint: the problem in each of its text fields
                text = "a\x00b" if problem == "NUL" else "x"
                response = getattr(api, method)(url, {"name": text, "campaign": text})
            assert response.status_code != 500, (method, path, problem)
            answered.setdefault(f"{method} {path}", set()).add(response.status_code)
            # Refused before the body is read (a role the researcher lacks, an object this
            # test has not made), or the body's problem named with a 400.
            assert response.status_code in (400, 403, 404), (method, path, problem)
    # Not a test that cannot fail: most endpoints did read the bad body and refuse it.
    refused = [op for op, codes in answered.items() if codes == {400}]
    assert len(refused) >= 20, answered


def test_a_json_field_in_a_form_is_parsed_safely(api) -> None:
    """A multipart/form field holding JSON (a metric run's settings with its upload) went
    through DRF's json.loads: 3,000 nested lists raised RecursionError, a 500."""
    campaign = Campaign.objects.get(name=RATED_STUDY)
    response = api.post(
        "/api/metric-runs/",
        {"name": "深", "metrics": ["f1"], "campaign": campaign.pk, "settings": DEEP},
    )
    assert response.status_code == 400
    assert "nested deeper" in response.json()["settings"][0]
    assert not campaign.metric_runs.filter(name="深").exists()


def test_metric_runs_use_the_api_s_json_parser(api) -> None:
    campaign = Campaign.objects.get(name=RATED_STUDY)
    response = api.post(
        "/api/metric-runs/",
        '{"name": "坏", "metrics": ["f1"], "campaign": '
        + str(campaign.pk)
        + ', "settings": {"lang": "\\ud800"}}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "surrogate" in response.json()["detail"]
    assert not campaign.metric_runs.exists()


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "post",
            "/api/backends/",
            {"adapter": "retrieval", "description": "长" * (TEXT_MAX_LENGTH + 1)},
            "description",
        ),
        ("post", "/api/backends/", {"adapter": "retrieval", "config": BIG_CONFIG}, "config"),
        (
            "post",
            "/api/reports/",
            {"config": {"metric_runs": list(range(1001))}},
            "config",
        ),
        ("post", "/api/metric-runs/", {"metrics": ["f1"] * 201}, "metrics"),
    ],
)
def test_free_text_and_structured_fields_are_bounded(api, method, url, body, field) -> None:
    response = getattr(api, method)(url, {"name": "界", **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Backend.objects.filter(name="界").exists()
