"""Rubric builder services: validation messages by path, and versioning of used rubrics."""

from __future__ import annotations

import copy

import pytest

from annotation.models import RatingJob, Rubric
from annotation.presets import preset_spec
from annotation.rubric_spec import RubricSpecError
from annotation.services.rubrics import rubric_create, rubric_edit, rubric_new_version
from tests.chat.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def spec(**changes) -> dict:
    base = {
        "key": "fluency",
        "version": 1,
        "title": {"zh-hans": "流畅度", "en": "Fluency"},
        "overall": "mean",
        "questions": [
            {"key": "fluent", "type": "scale", "min": 0, "max": 2, "level": "dialogue",
             "label": {"zh-hans": "流畅吗？", "en": "Fluent?"}},
        ],
    }  # fmt: skip
    base.update(changes)
    return base


def question(**changes) -> dict:
    q = copy.deepcopy(spec()["questions"][0])
    q.update(changes)
    return {k: v for k, v in q.items() if v is not None}


@pytest.mark.parametrize(
    ("broken", "path", "message"),
    [
        (spec(key="Bad Key"), "key", "must be a slug"),
        (spec(title=None), "title", "is required"),
        (spec(overall="median"), "overall", "must be one of mean, sum, normalised_100, none"),
        (spec(questions=[]), "questions", "must be a non-empty list"),
        (spec(questions=[question(type="stars")]), "questions[0].type", "must be one of"),
        (spec(questions=[question(max=0)]), "questions[0].max", "must be greater than min"),
        (spec(questions=[question(min=None)]), "questions[0].min", "is required"),
        (
            spec(questions=[question(), question()]),
            "questions[1].key",
            'duplicate of questions[0].key ("fluent")',
        ),
        (
            spec(questions=[question(gate=True)]),
            "questions[0].gate",
            "only yesno questions can be gates",
        ),
        (spec(questions=[question(lable={"en": "x"})]), "questions[0].lable", "unknown field"),
        (
            spec(questions=[question(levels={"3": {"en": "x"}})]),
            "questions[0].levels.3",
            "not a value of the scale (0..2)",
        ),
        (
            spec(questions=[question(label={"fr": "x"})]),
            "questions[0].label.fr",
            "unknown language",
        ),
        (
            spec(questions=[question(level="turn")], overall="normalised_100"),
            "questions[0].max_turns",
            "required for turn-level questions",
        ),
        (
            spec(
                questions=[
                    question(type="choice", min=None, max=None, options=[{"label": {"en": "a"}}])
                ]
            ),
            "questions[0].options",
            "must be a list of at least 2 options",
        ),
        (
            spec(questions=[question(type="likert", min=None, max=None, points=11)]),
            "questions[0].points",
            "must be an integer from 2 to 10",
        ),
        (spec(questions=[question(skills=[])]), "questions[0].skills", "must be a non-empty list"),
    ],
)
def test_each_broken_spec_is_refused_with_its_path_and_message(broken, path, message):
    with pytest.raises(RubricSpecError) as caught:
        rubric_create(spec=broken)
    assert any(p == path and message in m for p, m in caught.value.errors), caught.value.errors
    assert not Rubric.objects.filter(key="fluency").exists()


def test_a_new_rubric_is_version_1_whatever_the_spec_says():
    rubric = rubric_create(spec=spec(version=7))
    assert (rubric.key, rubric.version, rubric.spec["version"], rubric.is_preset) == (
        "fluency", 1, 1, False)  # fmt: skip
    assert rubric.title == {"zh-hans": "流畅度", "en": "Fluency"}


def test_an_existing_key_cannot_be_created_again():
    rubric_create(spec=spec())
    with pytest.raises(RubricSpecError, match='key: a rubric "fluency" exists'):
        rubric_create(spec=spec())
    with pytest.raises(RubricSpecError, match='key: a rubric "msde" exists'):
        rubric_create(spec=preset_spec("msde"))


def test_an_unused_version_is_edited_in_place():
    rubric = rubric_create(spec=spec())
    edited = rubric_edit(rubric=rubric, spec=spec(title={"zh-hans": "流利度"}))
    assert edited.pk == rubric.pk and edited.version == 1
    assert Rubric.objects.get(pk=rubric.pk).title == {"zh-hans": "流利度"}


def test_a_used_version_is_immutable_and_an_edit_creates_the_next_version():
    rubric = rubric_create(spec=spec())
    RatingJob.objects.create(name="j", campaign=CampaignFactory(), rubric=rubric)
    edited = rubric_edit(rubric=rubric, spec=spec(title={"zh-hans": "流利度"}))
    assert (edited.key, edited.version) == ("fluency", 2) and edited.pk != rubric.pk
    assert edited.spec["version"] == 2
    rubric.refresh_from_db()
    assert rubric.title == {"zh-hans": "流畅度", "en": "Fluency"} and rubric.spec["version"] == 1


def test_a_preset_is_never_edited_in_place():
    msde = Rubric.objects.get(key="msde", version=1)
    changed = copy.deepcopy(msde.spec)
    changed["questions"][0]["label"]["zh-hans"] = "信息量"
    edited = rubric_edit(rubric=msde, spec=changed)
    assert (edited.version, edited.is_preset) == (2, False)
    msde.refresh_from_db()
    assert msde.spec["questions"][0]["label"]["zh-hans"] != "信息量"


def test_a_new_version_follows_the_latest_and_keeps_the_key():
    rubric = rubric_create(spec=spec())
    v2 = rubric_new_version(rubric=rubric, spec=spec())
    v3 = rubric_new_version(rubric=rubric, spec=spec())  # from v1 still comes after v2
    assert (v2.version, v3.version) == (2, 3)
    with pytest.raises(RubricSpecError, match='key: cannot change "fluency"'):
        rubric_new_version(rubric=rubric, spec=spec(key="other"))
    with pytest.raises(RubricSpecError, match="questions\\[0\\].max: must be greater than min"):
        rubric_new_version(rubric=rubric, spec=spec(questions=[question(max=-1)]))
    assert Rubric.objects.filter(key="fluency").count() == 3
