"""Exports of a job: raw ratings (one row per rater × dialogue × turn × question) and aggregates,
through `export_ratings` and `export_human_scores`."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Assignment, Rating
from annotation.presets import preset_spec
from annotation.selectors.exports import RAW_COLUMNS
from chat.models import CampaignBackend
from tests.annotation.results.factories import dialogue_with_turns, job_for, model_turn, rate
from tests.chat.factories import BackendFactory, CampaignFactory
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    """MSDE job: system A (2 knowledge dialogues), system B (1); 2 raters each."""
    campaign = CampaignFactory(name="导出活动")
    a, b = BackendFactory(name="系统A"), BackendFactory(name="系统B")
    CampaignBackend.objects.create(campaign=campaign, backend=a, alias="模型甲")
    CampaignBackend.objects.create(campaign=campaign, backend=b, alias="模型乙")
    job = job_for("msde", campaign=campaign, name="MSDE 评分")
    d1 = dialogue_with_turns(campaign, a, external_id="k-1")
    d2 = dialogue_with_turns(campaign, a)
    d3 = dialogue_with_turns(campaign, b, external_id="k-3")
    rate(job, d1, "r1", {"info": 2, "coh": 2, "know": 2})
    rate(job, d1, "r2", {"info": 2, "coh": 1, "know": 1})
    rate(job, d2, "r1", {"info": 1, "coh": 1, "know": 1})
    rate(job, d2, "r2", {"info": 1, "coh": 2, "know": 0})
    rate(job, d3, "r1", {"info": 0, "coh": 1, "know": 1})
    rate(job, d3, "r2", {"info": 1, "coh": 1, "know": 1})
    rate(job, d3, "gold", {"info": 2, "coh": 2, "know": 2}, kind=Assignment.Kind.GOLD)
    return job


def read_csv(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_raw_csv_has_one_row_per_rater_dialogue_and_question(job, tmp_path):
    out = tmp_path / "raw.csv"
    call_command("export_ratings", "--job", "MSDE 评分", "--what", "raw", "--format", "csv",
                 "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = read_csv(out)
    assert tuple(rows[0]) == RAW_COLUMNS
    assert len(rows) == 3 * 2 * 3  # dialogues × raters × questions; the gold item is left out
    first = next(r for r in rows if r["dialogue_external_id"] == "k-1" and r["rater"] == "r2"
                 and r["question"] == "coh")  # fmt: skip
    assert (
        first["job"] == "MSDE 评分" and first["rubric"] == "msde" and first["rubric_version"] == "1"
    )
    assert (first["backend"], first["alias"], first["skill"]) == ("系统A", "模型甲", "knowledge")
    assert (first["value"], first["turn"], first["turn_id"], first["text"]) == ("1.0", "", "", "")
    assert first["time_spent_s"] == "90.0" and first["submitted_at"]
    assert len({(r["dialogue_id"], r["rater"], r["question"]) for r in rows}) == len(rows)


def test_raw_jsonl_carries_the_model_turn_index_for_turn_level_questions(tmp_path):
    job = job_for("yesno-multi-turn")
    dialogue = dialogue_with_turns(job.campaign, BackendFactory(), model_turns=2)
    keys = [q["key"] for q in preset_spec("yesno-multi-turn")["questions"]]
    rate(job, dialogue, "r1", {(k, t): 1 for k in keys for t in (0, 1)})
    out = tmp_path / "raw.jsonl"
    call_command("export_ratings", "--campaign", job.campaign.name, "--what", "raw",
                 "--format", "jsonl", "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 16
    second = [r for r in rows if r["turn"] == 1]
    assert len(second) == 8 and {r["turn_id"] for r in second} == {model_turn(dialogue, 1).pk}


def test_export_human_scores_at_system_level_has_means_and_ranks(job, tmp_path):
    out = tmp_path / "system.csv"
    call_command("export_human_scores", "--campaign", "导出活动", "--level", "system",
                 "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = read_csv(out)
    assert list(rows[0]) == ["unit", "skill", "dimension", "mean", "std", "n", "ci_low",
                             "ci_high", "n_incomplete", "n_unanswered", "rank"]  # fmt: skip
    table = {(r["unit"], r["dimension"]): r for r in rows}
    # A: info dialogue means 2 and 1 → 1.5 (n 2, std 0.7071); B: 0.5
    assert float(table[("系统A", "info")]["mean"]) == pytest.approx(1.5)
    assert table[("系统A", "info")]["n"] == "2" and table[("系统A", "info")]["rank"] == "1"
    assert float(table[("系统A", "info")]["std"]) == pytest.approx(0.70711, abs=1e-5)
    assert float(table[("系统B", "info")]["mean"]) == pytest.approx(0.5)
    assert table[("系统B", "info")]["rank"] == "2"
    assert table[("系统B", "info")]["std"] == "" and table[("系统B", "info")]["ci_low"] == ""
    # overall: A's dialogues (2+2+2)/3, (2+1+1)/3 → 5/3 ; (1+1+1)/3, (1+2+0)/3 → 1 ; mean 4/3
    assert float(table[("系统A", "overall")]["mean"]) == pytest.approx(4 / 3)
    assert {r["skill"] for r in rows} == {"knowledge"}


def test_export_human_scores_at_dialogue_level_names_dialogues_by_external_id(job, tmp_path):
    out = tmp_path / "dialogue.csv"
    call_command("export_human_scores", "--campaign", "导出活动", "--job", "MSDE 评分",
                 "--level", "dialogue", "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = read_csv(out)
    assert list(rows[0]) == ["unit", "skill", "dimension", "mean", "std", "n", "ci_low", "ci_high",
                             "n_incomplete", "n_unanswered"]  # fmt: skip
    units = {r["unit"] for r in rows}
    unnamed = job.campaign.dialogues.get(external_id="")
    assert units == {"k-1", "k-3", f"d{unnamed.pk}"}
    coh = next(r for r in rows if r["unit"] == "k-1" and r["dimension"] == "coh")
    assert (float(coh["mean"]), coh["n"]) == (1.5, "2")


def test_aggregates_export_as_jsonl_too(job, tmp_path):
    out = tmp_path / "system.jsonl"
    call_command("export_ratings", "--job", "MSDE 评分", "--what", "system", "--format", "jsonl",
                 "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    info_b = next(r for r in rows if r["unit"] == "系统B" and r["dimension"] == "info")
    assert info_b == {"unit": "系统B", "skill": "knowledge", "dimension": "info", "mean": 0.5,
                      "std": None, "n": 1, "ci_low": None, "ci_high": None, "n_incomplete": 0,
                      "n_unanswered": 0, "rank": 2}  # fmt: skip


def test_a_campaign_with_several_jobs_needs_job(job, tmp_path):
    job_for("likert", campaign=job.campaign, name="Likert 评分")
    with pytest.raises(CommandError, match="has 2 rating jobs .* pick one with --job"):
        call_command("export_human_scores", "--campaign", "导出活动", "--level", "system",
                     "--output", str(tmp_path / "x.csv"))  # fmt: skip
    with pytest.raises(CommandError, match="no campaign named 'nope'"):
        call_command("export_human_scores", "--campaign", "nope", "--level", "system",
                     "--output", str(tmp_path / "x.csv"))  # fmt: skip
    with pytest.raises(CommandError, match="belongs to campaign '导出活动', not 'other'"):
        call_command("export_ratings", "--job", "MSDE 评分", "--campaign", "other", "--what",
                     "raw", "--format", "csv", "--output", str(tmp_path / "x.csv"))  # fmt: skip


OVERALL_ONLY = {
    "key": "overall-only",
    "version": 1,
    "title": {"en": "Overall"},
    "questions": [
        {
            "key": "overall",
            "type": "likert",
            "points": 5,
            "level": "dialogue",
            "label": {"en": "Overall, how good was the dialogue?"},
        }
    ],
}


def test_a_question_keyed_overall_is_refused_while_the_rubric_has_an_overall_score():
    from annotation.rubric_spec import RubricSpecError, validate_spec

    with pytest.raises(RubricSpecError) as caught:
        validate_spec(OVERALL_ONLY | {"overall": "mean"})
    assert caught.value.errors[0][0] == "questions[0].key"
    assert '"overall" names the rubric\'s overall score (overall: "mean")' in str(caught.value)
    with pytest.raises(RubricSpecError):
        validate_spec(OVERALL_ONLY)  # "overall" defaults to "mean"


def test_an_overall_only_rubric_exports_one_row_per_system_with_plain_ranks(tmp_path):
    from annotation.models import RatingJob
    from annotation.services.rubrics import rubric_create

    rubric = rubric_create(spec=OVERALL_ONLY | {"overall": "none"})
    campaign = CampaignFactory(name="总体评分")
    job = RatingJob.objects.create(
        name="overall", campaign=campaign, rubric=rubric, status=RatingJob.Status.OPEN
    )
    for name, score in (("S1", 5), ("S2", 3), ("S3", 4)):
        dialogue = dialogue_with_turns(campaign, BackendFactory(name=name))
        rate(job, dialogue, "r1", {"overall": score})
    out = tmp_path / "system.csv"
    call_command("export_human_scores", "--campaign", "总体评分", "--level", "system",
                 "--output", str(out), stdout=io.StringIO())  # fmt: skip
    rows = read_csv(out)
    # one row per system (not two), and ranks 1, 2, 3 (not 1, 1, 3, 3, 5, 5)
    assert sorted((r["unit"], r["dimension"], r["rank"]) for r in rows) == [
        ("S1", "overall", "1"),
        ("S2", "overall", "3"),
        ("S3", "overall", "2"),
    ]


def test_the_migration_releases_the_overall_key_of_stored_rubrics():
    import importlib

    from django.apps import apps

    from annotation.models import Rubric

    stored = Rubric.objects.create(key="old-overall", version=1, spec=OVERALL_ONLY, title={})
    untouched = Rubric.objects.get(key="msde", version=1)
    migration = importlib.import_module("annotation.migrations.0004_overall_key_reserved")
    migration.release_overall_key(apps, None)
    stored.refresh_from_db()
    assert (
        stored.spec["overall"] == "none" and stored.spec["questions"] == OVERALL_ONLY["questions"]
    )
    assert Rubric.objects.get(pk=untouched.pk).spec == untouched.spec


def test_raw_csv_download_writes_formula_cells_as_text(researcher_client):
    """A dialogue id and a system name that a spreadsheet would run are written as text."""
    campaign = CampaignFactory(name="公式活动")
    backend = BackendFactory(name="@SUM(1+1)")
    job = job_for("msde", campaign=campaign, name="公式")
    dialogue = dialogue_with_turns(campaign, backend, external_id='=HYPERLINK("http://x.test")')
    rate(job, dialogue, "r1", {"info": 2, "coh": 1, "know": 0})
    response = researcher_client.get(reverse("annotation:job-export", args=[job.pk, "raw", "csv"]))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(streamed_bytes(response).decode())))
    assert {r["dialogue_external_id"] for r in rows} == {'\'=HYPERLINK("http://x.test")'}
    assert {r["backend"] for r in rows} == {"'@SUM(1+1)"}
    assert sorted(r["value"] for r in rows) == ["0.0", "1.0", "2.0"]
    assert Rating.objects.filter(assignment__job=job).count() == 3  # an export changes nothing
