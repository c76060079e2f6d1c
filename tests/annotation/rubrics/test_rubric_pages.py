"""The rubric builder pages and API: list, detail, the structured and JSON editors, versions."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.forms_rubrics import editor_from_spec
from annotation.models import RatingJob, Rubric
from tests.chat.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def form_post(**overrides) -> dict:
    """A structured-editor post: one scale question (row index 3, as after removals)."""
    data = {
        "mode": "form",
        "key": "fluency",
        "title_zh": "流畅度",
        "title_en": "Fluency",
        "overall": "mean",
        "min_raters": "3",
        "extra": "{}",
        "q-3-key": "fluent",
        "q-3-type": "scale",
        "q-3-level": "dialogue",
        "q-3-label_zh": "回复流畅吗？",
        "q-3-label_en": "Is the reply fluent?",
        "q-3-min": "0",
        "q-3-max": "2",
        "q-3-extra": "{}",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_the_list_shows_every_rubric_with_its_versions_and_presets(researcher_client):
    response = researcher_client.get(reverse("annotation:rubric-list"))
    assert response.status_code == 200
    html = response.content.decode()
    for key in ("msde", "yesno-single-turn", "yesno-multi-turn", "likert"):
        assert f"<code>{key}</code>" in html
    assert html.count("预设") >= 4


def test_the_detail_page_shows_questions_labels_levels_skills_and_gates(researcher_client):
    msde = Rubric.objects.get(key="msde", version=1)
    html = researcher_client.get(reverse("annotation:rubric-detail", args=[msde.pk])).content
    html = html.decode()
    info = msde.spec["questions"][0]
    assert info["label"]["zh-hans"] in html and info["label"]["en"] in html
    assert info["levels"]["2"]["zh-hans"] in html
    assert "knowledge, recommendation, persona" in html  # Know's skills
    single = Rubric.objects.get(key="yesno-single-turn", version=1)
    html = researcher_client.get(reverse("annotation:rubric-detail", args=[single.pk])).content
    assert "门槛题" in html.decode() and "normalised_100" in html.decode()


def test_the_structured_editor_creates_a_rubric(researcher_client):
    response = researcher_client.post(reverse("annotation:rubric-create"), form_post())
    rubric = Rubric.objects.get(key="fluency")
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:rubric-detail", args=[rubric.pk])
    assert rubric.spec == {
        "key": "fluency", "version": 1, "title": {"zh-hans": "流畅度", "en": "Fluency"},
        "overall": "mean", "min_raters": 3,
        "questions": [{"key": "fluent", "type": "scale", "level": "dialogue",
                       "label": {"zh-hans": "回复流畅吗？", "en": "Is the reply fluent?"},
                       "min": 0, "max": 2}],
    }  # fmt: skip


def test_the_structured_editor_takes_a_step_and_the_detail_page_shows_it(researcher_client):
    url = reverse("annotation:rubric-create")
    response = researcher_client.post(
        url, form_post(**{"q-3-min": "1", "q-3-max": "5", "q-3-step": "0.5"})
    )
    assert response.status_code == 302
    rubric = Rubric.objects.get(key="fluency")
    assert rubric.spec["questions"][0]["step"] == 0.5
    html = researcher_client.get(reverse("annotation:rubric-detail", args=[rubric.pk])).content
    assert "1–5 （步长 0.5）" in html.decode()
    bad = researcher_client.post(
        url, form_post(**{"key": "other", "q-3-max": "2", "q-3-step": "0.75"})
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    step_field = html[html.index('id="q-3-step"') :]
    assert "questions[0].step: must divide the range 0..2 into whole steps" in step_field[:600]


def test_a_broken_form_is_refused_with_the_message_next_to_the_field(researcher_client):
    response = researcher_client.post(
        reverse("annotation:rubric-create"), form_post(**{"q-3-max": "0", "q-3-key": "Bad"})
    )
    assert response.status_code == 400
    html = response.content.decode()
    row = html[html.index('id="q-3"') :]
    max_field = row[row.index('id="q-3-max"') :]
    assert "questions[0].max: must be greater than min" in max_field[:600]
    key_field = row[row.index('id="q-3-key"') :]
    assert "questions[0].key: must be a slug" in key_field[:600]
    assert 'value="Bad"' in key_field[:300]  # what was typed is kept
    assert not Rubric.objects.filter(key="fluency").exists()


def test_the_json_editor_names_syntax_and_spec_errors(researcher_client):
    url = reverse("annotation:rubric-create")
    response = researcher_client.post(url, {"mode": "json", "spec_json": '{"key": "x",'})
    assert response.status_code == 400
    assert "json: line 1, column 13" in response.content.decode()
    spec = {"key": "x", "title": {"en": "X"}, "questions": [{"key": "q", "type": "yesno"}]}
    response = researcher_client.post(url, {"mode": "json", "spec_json": json.dumps(spec)})
    assert response.status_code == 400
    assert "questions[0].level: is required" in response.content.decode()
    spec["questions"][0].update(level="turn", label={"zh-hans": "好吗？"})
    response = researcher_client.post(url, {"mode": "json", "spec_json": json.dumps(spec)})
    assert response.status_code == 302
    assert Rubric.objects.get(key="x").spec["questions"][0]["level"] == "turn"


def test_editing_a_used_rubric_in_the_form_creates_the_next_version(researcher_client):
    researcher_client.post(reverse("annotation:rubric-create"), form_post())
    rubric = Rubric.objects.get(key="fluency")
    RatingJob.objects.create(name="j", campaign=CampaignFactory(), rubric=rubric)
    edit = reverse("annotation:rubric-edit", args=[rubric.pk])
    page = researcher_client.get(edit).content.decode()
    assert "保存为 v2" in page
    response = researcher_client.post(edit, form_post(title_zh="流利度"))
    v2 = Rubric.objects.get(key="fluency", version=2)
    assert response["Location"] == reverse("annotation:rubric-detail", args=[v2.pk])
    assert v2.title["zh-hans"] == "流利度"
    assert Rubric.objects.get(pk=rubric.pk).title["zh-hans"] == "流畅度"


def test_a_preset_edited_in_the_form_keeps_its_level_definitions(researcher_client):
    msde = Rubric.objects.get(key="msde", version=1)
    page = researcher_client.get(reverse("annotation:rubric-edit", args=[msde.pk]))
    assert page.status_code == 200
    # Re-post what the form shows, as the browser would, with one label changed.
    data = {"mode": "form", "key": "msde", "title_zh": msde.spec["title"]["zh-hans"],
            "title_en": msde.spec["title"]["en"], "overall": "mean", "min_raters": "3",
            "extra": "{}"}  # fmt: skip
    for row in editor_from_spec(msde.spec).rows:
        for name, value in row.values.items():
            if name == "levels" or value is False or value == "" or value == []:
                continue
            data[f"q-{row.index}-{name}"] = value if isinstance(value, list) else str(value)
    data["q-0-label_zh"] = "信息丰富度"
    response = researcher_client.post(reverse("annotation:rubric-edit", args=[msde.pk]), data)
    assert response.status_code == 302
    v2 = Rubric.objects.get(key="msde", version=2)
    assert v2.spec["questions"][0]["label"]["zh-hans"] == "信息丰富度"
    assert v2.spec["questions"][0]["levels"] == msde.spec["questions"][0]["levels"]
    assert v2.spec["questions"][2]["skills"] == msde.spec["questions"][2]["skills"]


def test_copying_a_preset_prefills_the_editor_without_its_key(researcher_client):
    single = Rubric.objects.get(key="yesno-single-turn")
    html = researcher_client.get(
        reverse("annotation:rubric-create") + f"?from={single.pk}"
    ).content.decode()
    assert 'name="key" value=""' in html
    assert 'value="relevance_content"' in html and html.count('class="card q-row"') == 12


def test_htmx_adds_a_question_row_and_the_next_index(researcher_client):
    response = researcher_client.get(
        reverse("annotation:rubric-question-row"), {"index": "7"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert 'id="q-7"' in html and 'name="q-7-key"' in html
    assert 'id="next-index"' in html and 'value="8"' in html and 'hx-swap-oob="true"' in html


def test_the_api_lists_creates_and_versions_rubrics(researcher_client):
    listed = researcher_client.get("/api/rubrics/").json()
    assert {"msde", "likert"} <= {r["key"] for r in listed}
    assert all(r["is_preset"] for r in listed if r["key"] == "msde")
    spec = {"key": "api-rubric", "title": {"en": "API"},
            "questions": [{"key": "ok", "type": "yesno", "level": "dialogue",
                           "label": {"en": "OK?"}}]}  # fmt: skip
    created = researcher_client.post(
        "/api/rubrics/", {"spec": spec}, content_type="application/json"
    )
    assert created.status_code == 201 and created.json()["version"] == 1
    pk = created.json()["id"]
    assert researcher_client.get(f"/api/rubrics/{pk}/").json()["spec"]["key"] == "api-rubric"
    new = researcher_client.post(
        f"/api/rubrics/{pk}/versions/", {"spec": spec}, content_type="application/json"
    )
    assert new.status_code == 201 and new.json()["version"] == 2
    spec["questions"][0]["type"] = "stars"
    refused = researcher_client.post(
        f"/api/rubrics/{pk}/versions/", {"spec": spec}, content_type="application/json"
    )
    assert refused.status_code == 400
    assert {"path": "questions[0].type", "message": "must be one of scale, likert, yesno, "
            "choice, text"} in refused.json()["errors"]  # fmt: skip


@pytest.mark.parametrize("client_name", ["expert_client", "crowdworker_client"])
def test_only_researchers_use_the_rubric_builder(request, client_name):
    client = request.getfixturevalue(client_name)
    msde = Rubric.objects.get(key="msde", version=1)
    for url in (
        reverse("annotation:rubric-list"),
        reverse("annotation:rubric-detail", args=[msde.pk]),
        reverse("annotation:rubric-edit", args=[msde.pk]),
        reverse("annotation:rubric-create"),
        "/api/rubrics/",
        f"/api/rubrics/{msde.pk}/",
    ):
        assert client.get(url).status_code == 403, url
    assert client.post("/api/rubrics/", {}, content_type="application/json").status_code == 403


def test_the_detail_page_lists_half_point_level_definitions_in_order(researcher_client):
    from annotation.services.rubrics import rubric_create

    rubric = rubric_create(
        spec={
            "key": "half", "version": 1, "title": {"en": "Half"},
            "questions": [{"key": "quality", "type": "likert", "points": 5, "step": 0.5,
                           "level": "dialogue", "label": {"en": "Quality"},
                           "levels": {"5": {"en": "great"}, "2.5": {"en": "so-so"},
                                      "1": {"en": "poor"}}}],
        }
    )  # fmt: skip
    response = researcher_client.get(reverse("annotation:rubric-detail", args=[rubric.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("poor") < html.index("so-so") < html.index("great")
