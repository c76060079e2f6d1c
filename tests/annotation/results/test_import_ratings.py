"""`import_ratings`: a good file becomes a submitted imported job; any bad row refuses it all."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from annotation.models import Assignment, Rating, RatingJob
from annotation.selectors.human_scores import (
    human_scores,
    job_scores,
    normalised_system_scores,
)
from annotation.services.rating_import import RatingImportError, ratings_import
from core.access import Role, has_role
from tests.annotation.results.factories import dialogue_with_turns, model_turn
from tests.chat.factories import BackendFactory, CampaignFactory
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

GOOD_MSDE = """dialogue_id,rater,question,value
d1,alice,info,2
d1,alice,coh,1
d1,alice,know,2
d2,alice,info,1
d2,alice,coh,2
d1,bob,info,1
d1,bob,coh,1
d1,bob,know,0
"""


@pytest.fixture
def campaign():
    campaign = CampaignFactory(name="已评对话")
    dialogue_with_turns(
        campaign, BackendFactory(name="S1"), skill_key="knowledge", model_turns=2, external_id="d1"
    )
    dialogue_with_turns(campaign, BackendFactory(name="S2"), skill_key="chitchat", external_id="d2")
    return campaign


def run(text: str, rubric: str = "msde", campaign: str = "已评对话"):
    return ratings_import(
        fileobj=io.BytesIO(text.encode("utf-8")), campaign_name=campaign, rubric_ref=rubric
    )


def test_a_good_file_creates_a_submitted_imported_job_with_expert_raters(campaign):
    result = run(GOOD_MSDE)
    assert (result.ratings, result.dialogues, result.raters) == (8, 2, 2)
    assert result.new_raters == ["alice", "bob"]
    job = result.job
    assert (job.campaign, job.rubric.key, job.rubric.version) == (campaign, "msde", 1)
    assert set(job.assignments.values_list("status", "kind")) == {("submitted", "real")}
    assert job.assignments.count() == 3
    alice = User.objects.get(username="alice")
    assert has_role(alice, Role.EXPERT) and not alice.has_usable_password()
    scores = human_scores(job=job, level="dialogue")
    info = next(s for s in scores if s.dimension == "info" and s.backend == "S1")
    assert (info.value, info.n_raters) == (1.5, 2)


def test_a_second_import_replaces_the_answers_it_repeats(campaign):
    run(GOOD_MSDE)
    result = run(GOOD_MSDE.replace("d1,bob,info,1", "d1,bob,info,2"))
    assert RatingJob.objects.count() == 1 and Rating.objects.count() == 8
    assert result.new_raters == []
    bob_info = Rating.objects.get(assignment__rater__username="bob", question="info")
    assert bob_info.value == 2.0


def test_turn_level_ratings_land_on_the_model_turns(campaign):
    keys = [
        "relevance_topic", "relevance_previous", "relevance_context", "relevance_logic",
        "divergence_new", "divergence_deepen", "divergence_invite", "divergence_continue",
    ]  # fmt: skip
    lines = ["dialogue_id,rater,question,value,turn"]
    lines += [
        f"d1,carol,{k},{'是' if i % 2 else 'no'},{t}" for t in (0, 1) for i, k in enumerate(keys)
    ]
    result = run("\n".join(lines) + "\n", rubric="yesno-multi-turn:1")
    assert result.ratings == 16
    dialogue = campaign.dialogues.get(external_id="d1")
    second = Rating.objects.get(question="relevance_previous", turn=model_turn(dialogue, 1))
    assert second.value == 1.0


MULTI_TURN_KEYS = [
    "relevance_topic", "relevance_previous", "relevance_context", "relevance_logic",
    "divergence_new", "divergence_deepen", "divergence_invite", "divergence_continue",
]  # fmt: skip


def test_a_multi_turn_sheet_with_a_missing_answer_imports_and_scores_it_0(campaign):
    """Seed 001's multi-turn score has a fixed denominator (2 × 4 indicators × 5 turns per
    chat): an answer the sheet lacks earns 0 and the chat counts as incomplete."""
    lines = ["dialogue_id,rater,question,value,turn"]
    lines += [f"d1,carol,{k},1,0" for k in MULTI_TURN_KEYS]
    lines += [f"d1,carol,{k},1,1" for k in MULTI_TURN_KEYS[:7]]  # 7 of 8 on the second reply
    result = run("\n".join(lines) + "\n", rubric="yesno-multi-turn")
    assert (result.ratings, result.incomplete) == (15, 1)
    assert Rating.objects.filter(assignment__job=result.job).count() == 15
    scores = job_scores(job=result.job)
    (unit,) = scores.unit_scores
    assert (unit.points, unit.max_points, unit.n_unanswered) == (15.0, 40.0, 1)
    assert scores.completeness()["n_incomplete_units"] == 1
    (pooled,) = [s for s in normalised_system_scores(job=result.job) if s.skill is None]
    assert pooled.score == pytest.approx(37.5)


def test_the_command_warns_about_dialogues_with_missing_answers(campaign, tmp_path):
    path = tmp_path / "multi.csv"
    rows = [f"d1,dave,{k},0,0" for k in MULTI_TURN_KEYS[:7]]
    path.write_text("dialogue_id,rater,question,value,turn\n" + "\n".join(rows) + "\n")
    out = io.StringIO()
    call_command(
        "import_ratings", str(path), campaign="已评对话", rubric="yesno-multi-turn", stdout=out
    )
    assert "1 rated dialogue(s) miss answers" in out.getvalue()
    assert Rating.objects.filter(assignment__rater__username="dave").count() == 7


@pytest.mark.parametrize(
    ("replace", "by", "expected"),
    [
        (
            "d2,alice,info,1",
            "dx,alice,info,1",
            "row 5, column 'dialogue_id': no dialogue with id 'dx'",
        ),
        ("d2,alice,info,1", ",alice,info,1", "row 5, column 'dialogue_id': is empty"),
        ("d2,alice,info,1", "d2,,info,1", "row 5, column 'rater': is empty"),
        ("d2,alice,info,1", "d2,al ice!,info,1", "row 5, column 'rater': 'al ice!' is not a valid"),
        (
            "d2,alice,info,1",
            "d2,alice,infos,1",
            "row 5, column 'question': unknown question 'infos'",
        ),
        (
            "d2,alice,coh,2",
            "d2,alice,know,2",
            "row 6, column 'question': know: not asked for 'chitchat'",
        ),
        (
            "d1,bob,know,0",
            "d1,bob,know,3",
            "row 9, column 'value': know: expected a whole number from 0 to 2, got '3'",
        ),
        ("d1,bob,know,0", "d1,bob,know,1.5", "row 9, column 'value'"),
        ("d1,bob,know,0", "d1,bob,know,", "row 9, column 'value': is empty"),
        ("d1,bob,coh,1", "d1,bob,info,1", "row 8: the same answer as row 7"),
        (
            "d2,alice,coh,2\n",
            "",
            "row 5, column 'question': incomplete: unit 'd2', rater 'alice': no answer for coh",
        ),
        (
            "dialogue_id,rater,question,value",
            "dialogue_id,rater,question",
            "row 1: missing column(s): value",
        ),
        (
            "dialogue_id,rater,question,value",
            "dialogue_id,rater,question,value,score",
            "row 1: unknown column(s): score",
        ),
        ("d1,bob,coh,1", "d1,bob,coh,1,extra", "row 8: 5 cells, but the header has 4 columns"),
    ],
)
def test_every_kind_of_bad_row_is_named_and_nothing_is_imported(campaign, replace, by, expected):
    bad = GOOD_MSDE.replace(replace, by, 1)
    assert bad != GOOD_MSDE
    with pytest.raises(RatingImportError) as caught:
        run(bad)
    assert str(caught.value).startswith(expected), str(caught.value)
    assert not Rating.objects.exists() and not Assignment.objects.exists()
    assert not RatingJob.objects.exists()
    assert not User.objects.filter(username__in=["alice", "bob"]).exists()


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "d1,carol,info,1,0",
            "row 2, column 'turn': info: a dialogue-level question takes no turn",
        ),
        ("d1,carol,info,1,x", "row 2, column 'turn': expected a whole number ≥ 0"),
    ],
)
def test_a_turn_on_a_dialogue_level_question_is_refused(campaign, row, expected):
    with pytest.raises(RatingImportError, match="^" + expected):
        run("dialogue_id,rater,question,value,turn\n" + row + "\n")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "d1,carol,relevance_topic,1,",
            "row 2, column 'turn': relevance_topic: a turn-level question needs",
        ),
        (
            "d1,carol,relevance_topic,1,2",
            "row 2, column 'turn': dialogue 'd1' has 2 model turn(s), so turn 2 is out of range",
        ),
        (
            "d2,carol,relevance_topic,maybe,0",
            "row 2, column 'value': relevance_topic: expected yes or no",
        ),
    ],
)
def test_turn_level_rows_need_a_turn_in_range(campaign, row, expected):
    with pytest.raises(RatingImportError) as caught:
        run("dialogue_id,rater,question,value,turn\n" + row + "\n", rubric="yesno-multi-turn")
    assert str(caught.value).startswith(expected), str(caught.value)
    assert not Rating.objects.exists()


def test_a_rater_name_of_an_account_without_the_expert_role_is_refused(campaign):
    make_user("bob", Role.CROWDWORKER)
    with pytest.raises(RatingImportError, match="^row 7, column 'rater': user 'bob' exists"):
        run(GOOD_MSDE)
    assert not Rating.objects.exists()


def test_bad_arguments_and_files_are_named(campaign):
    with pytest.raises(RatingImportError, match="--campaign: no campaign named 'nope'"):
        run(GOOD_MSDE, campaign="nope")
    with pytest.raises(RatingImportError, match="--rubric: rubric 'msde' has no version 9"):
        run(GOOD_MSDE, rubric="msde:9")
    with pytest.raises(RatingImportError, match="--rubric: no rubric with key 'zzz'"):
        run(GOOD_MSDE, rubric="zzz")
    with pytest.raises(RatingImportError, match="row 1: the file is empty"):
        run("")
    with pytest.raises(RatingImportError, match="row 2: no ratings after the header row"):
        run("dialogue_id,rater,question,value\n")
    with pytest.raises(RatingImportError, match="row 3: not valid UTF-8"):
        ratings_import(
            fileobj=io.BytesIO(b"dialogue_id,rater,question,value\nd1,a,info,1\nd1,\xff,coh,1\n"),
            campaign_name="已评对话",
            rubric_ref="msde",
        )


def test_the_command_imports_and_reports_errors(campaign, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text(GOOD_MSDE, encoding="utf-8-sig")  # a BOM, as spreadsheet programs write
    out = io.StringIO()
    call_command(
        "import_ratings", str(good), "--campaign", "已评对话", "--rubric", "msde", stdout=out
    )
    assert "Imported 8 ratings of 2 dialogues by 2 raters" in out.getvalue()
    bad = tmp_path / "bad.csv"
    bad.write_text(GOOD_MSDE.replace("d1,bob,know,0", "d1,bob,know,7"), encoding="utf-8")
    with pytest.raises(CommandError, match=r"bad.csv: row 9, column 'value'"):
        call_command("import_ratings", str(bad), "--campaign", "已评对话", "--rubric", "msde")


HALF_POINT_RUBRIC = {
    "key": "half-likert",
    "version": 1,
    "title": {"en": "Overall quality, half points"},
    "questions": [
        {
            "key": "quality",
            "type": "likert",
            "points": 5,
            "step": 0.5,
            "level": "dialogue",
            "label": {"en": "Quality"},
        }
    ],
}


def test_a_rubric_with_step_half_imports_half_points_and_refuses_quarter_points(campaign):
    from annotation.services.rubrics import rubric_create

    rubric_create(spec=HALF_POINT_RUBRIC)
    text = "dialogue_id,rater,question,value\nd1,ann,quality,1.5\nd2,ann,quality,3.5\n"
    result = run(text, rubric="half-likert")
    assert result.ratings == 2
    assert sorted(Rating.objects.values_list("value", flat=True)) == [1.5, 3.5]
    with pytest.raises(RatingImportError) as caught:
        run(text.replace("3.5", "3.25"), rubric="half-likert")
    assert (
        "row 3, column 'value': quality: expected a number from 1 to 5 in steps of 0.5, "
        "got '3.25'" in str(caught.value)
    )


def _msde_file(dialogue_ids: list[str], raters: tuple[str, ...], value: int) -> str:
    rows = [
        f"{dialogue_id},{rater},{question},{value}"
        for dialogue_id in dialogue_ids
        for rater in raters
        for question in ("info", "coh", "know")
    ]
    return "dialogue_id,rater,question,value\n" + "\n".join(rows) + "\n"


def _queries(text: str, campaign: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        run(text, campaign=campaign)
    return len(captured)


def test_the_queries_of_an_import_do_not_grow_with_its_rows():
    """Bulk validation and inserts: a file 12 times longer costs the same statements, for a
    first import and for one that replaces every answer (one query per row made 40,000
    ratings take minutes)."""
    small, large = CampaignFactory(name="小"), CampaignFactory(name="大")
    backend = BackendFactory()
    for campaign, n in ((small, 1), (large, 12)):
        for k in range(n):
            dialogue_with_turns(campaign, backend, skill_key="knowledge", external_id=f"k{k}")
    few, many = (["k0"], ("alice", "bob")), ([f"k{k}" for k in range(12)], ("carol", "dave"))
    first = [_queries(_msde_file(*few, 1), "小"), _queries(_msde_file(*many, 1), "大")]
    again = [_queries(_msde_file(*few, 2), "小"), _queries(_msde_file(*many, 2), "大")]
    assert first[0] == first[1] and again[0] == again[1]
    job = RatingJob.objects.get(campaign=large)
    assert job.assignments.count() == 12 * 2
    assert set(Rating.objects.filter(assignment__job=job).values_list("value", flat=True)) == {2.0}
    assert Rating.objects.filter(assignment__job=job).count() == 12 * 2 * 3


@pytest.fixture(params=["copy", "bulk_create"])
def insert_path(request, monkeypatch):
    """Both ways rows are written: COPY (PostgreSQL), and bulk_create (other databases)."""
    from django.db import connection

    if request.param == "bulk_create":
        monkeypatch.setattr(connection, "vendor", "other")
    elif connection.vendor != "postgresql":
        pytest.skip("COPY needs PostgreSQL")
    return request.param


def _stored(job: RatingJob) -> tuple[set, set]:
    assignments = set(
        job.assignments.values_list(
            "dialogue__external_id", "rater__username", "status", "kind", "is_gold"
        )
    )
    ratings = set()
    for rating in Rating.objects.filter(assignment__job=job).select_related(
        "assignment__dialogue", "assignment__rater", "turn"
    ):
        turn = None
        if rating.turn is not None:
            turn = list(
                rating.assignment.dialogue.turns.filter(speaker="system").order_by("index")
            ).index(rating.turn)
        ratings.add(
            (
                rating.assignment.dialogue.external_id,
                rating.assignment.rater.username,
                rating.question,
                turn,
                rating.value,
                rating.text,
            )
        )
    return assignments, ratings


def test_a_large_import_and_its_replacement_store_exactly_the_files_answers(insert_path):
    """The bulk writes store what the per-row ones did: every row's answer on its assignment
    (submitted, real) and model turn; a second file replaces what it repeats, adds what it adds
    and leaves the rest."""
    campaign = CampaignFactory(name="大量")
    backend = BackendFactory()
    ids = [f"m{k}" for k in range(30)]
    for external_id in ids:
        dialogue_with_turns(
            campaign, backend, skill_key="chitchat", model_turns=2, external_id=external_id
        )
    raters = ("ann", "ben", "cat")
    first = {
        (d, r, k, t): float((n + i + t) % 2)
        for n, d in enumerate(ids)
        for r in raters
        for t in (0, 1)
        for i, k in enumerate(MULTI_TURN_KEYS)
    }  # 30 dialogues × 3 raters × 2 turns × 8 questions = 1,440 rows
    lines = ["dialogue_id,rater,question,value,turn"]
    lines += [f"{d},{r},{k},{'是' if v else '否'},{t}" for (d, r, k, t), v in first.items()]
    result = run("\n".join(lines) + "\n", rubric="yesno-multi-turn", campaign="大量")
    assert (result.ratings, result.dialogues, result.raters) == (1440, 30, 3)
    assignments, ratings = _stored(result.job)
    assert assignments == {(d, r, "submitted", "real", False) for d in ids for r in raters}
    assert ratings == {(d, r, k, t, v, "") for (d, r, k, t), v in first.items()}

    second = {(d, "ben", k, 1): 1.0 for d in ids[:10] for k in MULTI_TURN_KEYS}  # replaced
    second |= {(d, "dan", k, t): 0.0 for d in ids[:5] for k in MULTI_TURN_KEYS for t in (0, 1)}
    lines = ["dialogue_id,rater,question,value,turn"]
    lines += [f"{d},{r},{k},{int(v)},{t}" for (d, r, k, t), v in second.items()]
    again = run("\n".join(lines) + "\n", rubric="yesno-multi-turn", campaign="大量")
    assert (again.job, again.ratings, again.new_raters) == (result.job, 160, ["dan"])
    assignments, ratings = _stored(result.job)
    assert assignments == {(d, r, "submitted", "real", False) for d in ids for r in raters} | {
        (d, "dan", "submitted", "real", False) for d in ids[:5]
    }
    assert ratings == {(d, r, k, t, v, "") for (d, r, k, t), v in (first | second).items()}
    assert not Rating.objects.filter(updated_at__isnull=True).exists()
    assert not Assignment.objects.filter(submitted_at__isnull=True).exists()


def test_units_answering_the_same_slots_are_judged_by_their_own_gates(campaign):
    """The completeness check scores each pattern of answers once: two raters who answered only
    the gates differ when one failed a gate (the gated questions score 0, nothing is missing)
    and the other passed both (ten answers missing)."""
    lines = ["dialogue_id,rater,question,value"]
    lines += ["d1,gail,grammatical,否", "d1,gail,unacceptable,否"]  # failed: not grammatical
    lines += ["d1,hugo,grammatical,是", "d1,hugo,unacceptable,否"]  # passed both gates
    lines += ["d2,hugo,grammatical,是", "d2,hugo,unacceptable,否"]  # passed both gates
    result = run("\n".join(lines) + "\n", rubric="yesno-single-turn")
    assert (result.ratings, result.incomplete) == (6, 2)


def test_of_units_missing_the_same_answers_the_first_in_the_file_is_named(campaign):
    lines = ["dialogue_id,rater,question,value", "d2,zed,info,1", "d2,zed,coh,1"]
    lines += ["d1,bob,info,1", "d1,bob,coh,1", "d1,alice,info,2", "d1,alice,coh,1"]
    with pytest.raises(RatingImportError) as refused:
        run("\n".join(lines) + "\n")
    assert str(refused.value).startswith("row 4, column 'question': incomplete: unit 'd1', ")
    assert "rater 'bob': no answer for know" in str(refused.value)
