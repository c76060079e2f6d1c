"""The comparison page, the job page's pairwise section and its slot, the API and commands."""

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import job_panels
from annotation.models import Assignment, RatingJob
from annotation.services.rating_assignments import assignment_next
from annotation.services.rating_jobs import job_open
from chat.models import Vote
from core.access import Role
from tests.annotation.pairwise.builders import acute_job, study
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

QUESTIONS = ("engaging", "interesting", "humanlike", "knowledgeable")


def _open_job(**kwargs):
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    job = acute_job(s, per_pair=1, **kwargs)
    job_open(job=job)
    return s, job


def test_the_comparison_page_shows_both_dialogues_blind_with_the_four_questions(client):
    s, job = _open_job()
    rater = s.raters[0]
    client.force_login(rater)
    response = client.get(reverse("annotation:annotate-next", args=[job.pk]), follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="dialogue-left"' in html and 'id="dialogue-right"' in html
    for key in QUESTIONS:
        assert f'name="side-{key}"' in html and f'name="reason-{key}"' in html
    assert "如果要进行一场长时间的对话，你更愿意和谁聊？" in html
    for system in s.systems:
        assert system.name not in html
    assert "系统A" not in html and "系统B" not in html  # no blind alias either


def test_submitting_without_a_reason_comes_back_naming_it_and_keeps_the_input(client):
    s, job = _open_job()
    rater = s.raters[0]
    a = assignment_next(job=job, rater=rater)
    client.force_login(rater)
    data = {f"side-{k}": "left" for k in QUESTIONS}
    data |= {f"reason-{k}": "左边更自然" for k in QUESTIONS}
    data["reason-knowledgeable"] = ""
    url = reverse("annotation:annotate-submit", args=[a.pk])
    response = client.post(url, data)
    assert response.status_code == 400
    assert "knowledgeable.reason" in response.content.decode()
    assert 'value="左边更自然"' in response.content.decode()
    assert not Vote.objects.exists()
    data["reason-knowledgeable"] = "左边知道得多"
    response = client.post(url, data)
    assert response.status_code == 302
    assert Vote.objects.filter(source=job.vote_source).count() == 4
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED


def test_the_job_page_shows_votes_onboarding_and_the_panel_slot(client):
    s, job = _open_job()
    researcher = make_user("res-pw", Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("annotation:job-detail", args=[job.pk])
    html = client.get(url).content.decode()
    # metrics registers its ranking and agreement panel for pairwise jobs (metrics.apps).
    assert 'id="pairwise-raters"' in html and 'id="job-panel-pairwise"' in html
    metrics_panel = job_panels.unregister("pairwise")
    try:
        assert 'id="job-panels-none"' in client.get(url).content.decode()
    finally:
        assert metrics_panel is not None
        job_panels.register(metrics_panel)
    job_panels.register(
        job_panels.JobPanel(
            name="ranking",
            applies=lambda j: j.mode == RatingJob.Mode.PAIRWISE,
            render=lambda request, j: f"<p id='bt'>ranking of {j.pk}</p>",
        )
    )
    try:
        html = client.get(url).content.decode()
    finally:
        job_panels.unregister("ranking")
    assert f"ranking of {job.pk}" in html and 'id="job-panels-none"' not in html


def test_the_switch_excludes_and_includes_a_raters_votes(client):
    s, job = _open_job()
    rater = s.raters[0]
    a = assignment_next(job=job, rater=rater)
    client.force_login(rater)
    data = {f"side-{k}": "right" for k in QUESTIONS} | {f"reason-{k}": "右边好" for k in QUESTIONS}
    client.post(reverse("annotation:annotate-submit", args=[a.pk]), data)
    client.force_login(make_user("res-pw2", Role.RESEARCHER))
    client.post(reverse("annotation:job-rater-votes-exclude", args=[job.pk, rater.pk]))
    assert set(Vote.objects.values_list("excluded_reason", flat=True)) == {"研究者排除"}
    client.post(reverse("annotation:job-rater-votes-include", args=[job.pk, rater.pk]))
    assert set(Vote.objects.values_list("excluded_reason", flat=True)) == {""}


def test_the_gold_pair_form_stores_a_pair_and_names_a_missing_dialogue(client):
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    job = acute_job(s)
    client.force_login(make_user("res-pw3", Role.RESEARCHER))
    url = reverse("annotation:job-gold-pair", args=[job.pk])
    good, bad = s.dialogues[(0, 0)], s.dialogues[(0, 1)]
    response = client.post(url, {"better": good.pk, "worse": bad.pk, "purpose": "onboarding"})
    assert response.status_code == 302
    item = job.gold_items.get()
    assert (item.dialogue_id, item.dialogue_b_id, item.purpose) == (good.pk, bad.pk, "onboarding")
    response = client.post(url, {"better": "nope", "worse": bad.pk, "purpose": "gold"}, follow=True)
    assert "「nope」" in response.content.decode()


def test_the_api_creates_a_pairwise_job_and_lists_its_votes(client):
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    client.force_login(make_user("res-pw4", Role.RESEARCHER))
    from annotation.models import Rubric

    acute = Rubric.objects.get(key="acute-eval")
    response = client.post(
        "/api/rating-jobs/",
        {
            "name": "api-acute",
            "campaign": s.campaign.pk,
            "rubric": acute.pk,
            "raters": [s.raters[0].username],
            "raters_per_dialogue": 1,
            "mode": "pairwise",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["mode"] == "pairwise"
    job = RatingJob.objects.get(name="api-acute")
    job_open(job=job)
    rater = s.raters[0]
    from annotation.services.pairwise_answers import pairwise_submit

    pairwise_submit(
        assignment=assignment_next(job=job, rater=rater),
        user=rater,
        answers=dict.fromkeys(QUESTIONS, ("left", "好")),
    )
    votes = client.get(f"/api/rating-jobs/{job.pk}/votes/").json()
    assert {v["question"] for v in votes} == set(QUESTIONS)
    assert all(v["outcome"] == "a" and v["excluded_reason"] == "" for v in votes)


def test_the_command_creates_an_acute_job_with_onboarding_and_lists_its_votes():
    s = study(n_scenarios=2, n_systems=3, n_raters=3)
    onboarding = f"{s.dialogues[(1, 0)].pk}:{s.dialogues[(1, 1)].pk}"
    out = io.StringIO()
    call_command(
        "create_rating_job",
        "--name=cmd-acute",
        f"--campaign={s.campaign.name}",
        "--mode=pairwise",
        "--questions=acute",
        "--raters-per-pair=1",
        f"--experts={','.join(u.username for u in s.raters)}",
        "--onboarding",
        onboarding,
        "--open",
        stdout=out,
    )
    job = RatingJob.objects.get(name="cmd-acute")
    assert job.mode == "pairwise" and job.rubric.key == "acute-eval"
    assert job.gold_items.get().purpose == "onboarding"
    assert Assignment.objects.filter(job=job, kind="onboarding").count() == 3
    rater = s.raters[0]
    from annotation.services.pairwise_answers import pairwise_submit

    first = assignment_next(job=job, rater=rater)
    good = s.dialogues[(1, 0)].pk
    side = "left" if first.dialogue_id == good else "right"
    pairwise_submit(assignment=first, user=rater, answers=dict.fromkeys(QUESTIONS, (side, "ok")))
    real = assignment_next(job=job, rater=rater)
    pairwise_submit(assignment=real, user=rater, answers=dict.fromkeys(QUESTIONS, ("right", "ok")))
    out = io.StringIO()
    call_command("job_votes", "--job=cmd-acute", "--format=jsonl", stdout=out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(rows) == 4 and {r["outcome"] for r in rows} == {"b"}
    with pytest.raises(Exception, match="--raters-per-pair"):
        call_command(
            "create_rating_job",
            "--name=x",
            f"--campaign={s.campaign.name}",
            "--rubric=msde",
            "--raters-per-pair=2",
        )


def test_the_job_form_creates_a_pairwise_job_with_acutes_threshold(client):
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    from annotation.models import Rubric

    client.force_login(make_user("res-pw5", Role.RESEARCHER))
    response = client.post(
        reverse("annotation:job-create"),
        {
            "name": "form-acute",
            "mode": "pairwise",
            "campaign": s.campaign.pk,
            "rubric": Rubric.objects.get(key="acute-eval").pk,
            "raters_per_dialogue": 1,
            "raters": [s.raters[0].pk],
            "deadline_hours": 72,
            "seed": 0,
            "sample_seed": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    job = RatingJob.objects.get(name="form-acute")
    assert job.mode == "pairwise" and job.vote_source is not None
    assert job.quality_settings["onboarding_threshold"] == 0.75


def test_a_pairwise_jobs_sides_are_never_read_as_human_scores(client):
    from annotation.selectors.human_scores import counted_assignments

    s, job = _open_job()
    rater = s.raters[0]
    from annotation.services.pairwise_answers import pairwise_submit

    pairwise_submit(
        assignment=assignment_next(job=job, rater=rater),
        user=rater,
        answers=dict.fromkeys(QUESTIONS, ("right", "右边好")),
    )
    assert not counted_assignments(job=job).exists()
    client.force_login(make_user("res-pw6", Role.RESEARCHER))
    response = client.get(reverse("annotation:job-results", args=[job.pk]))
    assert response.status_code == 200
