import pytest

from annotation.models import Rubric
from annotation.rubric_spec import validate_spec

pytestmark = pytest.mark.django_db


def test_the_preset_rubrics_are_loaded_by_a_migration():
    presets = Rubric.objects.filter(is_preset=True)
    assert set(presets.values_list("key", flat=True)) == {
        "msde",
        "yesno-single-turn",
        "yesno-multi-turn",
        "likert",
        "dslc3-open",
        "dslc3-situation",
        "acute-eval",
    }
    for rubric in presets:
        assert validate_spec(rubric.spec).key == rubric.key
        assert rubric.title["zh-hans"] and rubric.title["en"]


def test_the_msde_preset_has_the_four_dimensions():
    spec = Rubric.objects.get(key="msde", version=1).spec
    assert [q["key"] for q in spec["questions"]] == ["info", "coh", "know", "rec"]


def test_seed_004s_rubrics_have_its_japanese_wording_and_half_points():
    open_track = validate_spec(Rubric.objects.get(key="dslc3-open", version=1).spec)
    labels = {q.key: q.label["ja"] for q in open_track.questions}
    assert labels == {
        "naturalness": "自然性：対話が自然かどうか",
        "topic_following": (
            "話題追従：システムはユーザが選択した話題に関して適切に応答できたかどうか"
        ),
        "topic_providing": (
            "話題提供：システムはユーザが選択した話題に関して新たな情報を提供できたかどうか"
        ),
    }
    assert open_track.overall == "mean"
    situation = validate_spec(Rubric.objects.get(key="dslc3-situation", version=1).spec)
    (question,) = situation.questions
    assert question.label["ja"] == "どれくらいシチュエーションに適しており、かつ、人らしい会話か"
    for q in (*open_track.questions, question):
        assert (q.minimum, q.maximum, q.step) == (1, 5, 0.5)
        assert q.values == (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)


def _texts(node, path=""):
    """Every {language: text} of a spec, with where it is."""
    if isinstance(node, dict):
        if "zh-hans" in node or "en" in node:
            yield path, node
            return
        for key, value in node.items():
            yield from _texts(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _texts(value, f"{path}[{index}]")


def test_every_preset_text_is_given_in_chinese_english_and_japanese():
    for rubric in Rubric.objects.filter(is_preset=True):
        for where, texts in _texts({"title": rubric.title, **rubric.spec}):
            missing = {"zh-hans", "en", "ja"} - {k for k, v in texts.items() if v}
            assert not missing, (rubric.key, where, missing)
