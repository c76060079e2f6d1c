"""What each role's home page shows: counts, work waiting, and the next sensible action."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, Q
from django.urls import reverse
from django.utils.translation import gettext as _

from annotation.models import Assignment, JobRater, RatingJob
from annotation.selectors.rating import rater_jobs
from annotation.selectors.review import review_queue
from annotation.services.rating_assignments import job_refresh
from chat.models import Backend, Campaign, Dataset, Dialogue, Participant, StaticRun
from chat.services.scenario_assignment import WorkerStatus, worker_status
from core.models import JobStatus
from metrics.models import MetricRun, Report

MAX_STEPS_PER_KIND = 3


def _reported_metric_runs() -> set[int]:
    """Metric runs some report already correlates (report configs list their ids)."""
    used: set[int] = set()
    for config in Report.objects.values_list("config", flat=True):
        for run_id in (config or {}).get("metric_runs") or []:
            if isinstance(run_id, int):
                used.add(run_id)
    return used


def _done_jobs_by_campaign() -> dict[int, RatingJob]:
    """Per campaign, its newest rating job whose work is done: closed, or open with every
    assignment submitted (none pending, in progress)."""
    unfinished = Assignment.objects.filter(
        job=OuterRef("pk"),
        status__in=(Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS),
    )
    submitted = Assignment.objects.filter(job=OuterRef("pk"), status=Assignment.Status.SUBMITTED)
    jobs = (
        RatingJob.objects.filter(is_live=False)
        .annotate(has_unfinished=Exists(unfinished), has_submitted=Exists(submitted))
        .filter(
            Q(status=RatingJob.Status.CLOSED)
            | Q(status=RatingJob.Status.OPEN, has_submitted=True, has_unfinished=False)
        )
        .order_by("-created_at")
    )
    found: dict[int, RatingJob] = {}
    for job in jobs:
        found.setdefault(job.campaign_id, job)
    return found


def study_counts() -> dict[str, int]:
    """How many of each study object there are (the home's tiles; the next steps read them)."""
    return {
        "datasets": Dataset.objects.count(),
        "backends": Backend.objects.filter(active=True).count(),
        "campaigns": Campaign.objects.count(),
        "static_runs": StaticRun.objects.count(),
        "rating_jobs": RatingJob.objects.filter(is_live=False).count(),
        "metric_runs": MetricRun.objects.count(),
        "reports": Report.objects.count(),
    }


def study_next_steps(counts: Mapping[str, int] | None = None) -> list[tuple[str, str]]:
    """The researcher's next steps, following where the study stands (issue 11, item 11):
    no dataset → import one; no backend → register one; data and systems but no static run →
    run one; a finished static run without metrics → compute them; a campaign with accepted
    dialogues but no rating job → create one from them; a rated campaign (an imported study, the
    demo's rated one) without a metric run → compute metrics on it; a finished metric run whose
    campaign has a finished rating job, not yet in a report → correlate them. Each step names the
    object it is about and links to the form with that object chosen. ``counts``: the home
    page's counts (:func:`study_counts`), computed here when not given."""
    steps: list[tuple[str, str]] = []
    if counts is None:
        counts = study_counts()
    has_datasets, has_backends = counts["datasets"] > 0, counts["backends"] > 0
    if not has_datasets:
        steps.append((_("导入一个数据集"), reverse("chat:dataset-upload")))
    if not has_backends:
        steps.append((_("注册一个模型后端"), reverse("chat:backend-create")))
    if has_datasets and has_backends and not counts["static_runs"]:
        steps.append((_("让模型回答一个数据集（静态生成）"), reverse("chat:static-run-create")))
    unscored = StaticRun.objects.filter(status=JobStatus.DONE, metric_runs__isnull=True).order_by(
        "-pk"
    )[:MAX_STEPS_PER_KIND]
    for run in unscored:
        steps.append(
            (
                _("为静态生成「%(name)s」计算自动指标") % {"name": run.name},
                f"{reverse('metrics:metric-run-create')}?{urlencode({'static_run': run.pk})}",
            )
        )
    unrated = (
        Campaign.objects.filter(dialogues__status=Dialogue.Status.ACCEPTED)
        .exclude(rating_jobs__is_live=False)
        .distinct()
        .order_by("-pk")[:MAX_STEPS_PER_KIND]
    )
    for campaign in unrated:
        steps.append(
            (
                _("用活动「%(name)s」已通过的对话创建评分任务") % {"name": campaign.name},
                f"{reverse('annotation:job-create')}?{urlencode({'campaign': campaign.pk})}",
            )
        )
    done_jobs = _done_jobs_by_campaign()
    rated_unscored = (
        Campaign.objects.filter(pk__in=list(done_jobs), metric_runs__isnull=True)
        .exclude(mode=Campaign.Mode.STATIC)  # a static run's own step offers its metrics
        .order_by("-pk")[:MAX_STEPS_PER_KIND]
    )
    for campaign in rated_unscored:
        steps.append(
            (
                _("为已评分的活动「%(name)s」计算自动指标") % {"name": campaign.name},
                # The MSDE 16 preselected: the study's metrics, the one step a newcomer takes.
                f"{reverse('metrics:metric-run-create')}?"
                f"{urlencode({'campaign': campaign.pk, 'metrics': 'msde16'})}",
            )
        )
    if done_jobs:
        reported = _reported_metric_runs()
        finished_runs = (
            MetricRun.objects.filter(status=JobStatus.DONE, campaign_id__in=list(done_jobs))
            .exclude(pk__in=reported)
            .order_by("-pk")[:MAX_STEPS_PER_KIND]
        )
        for metric_run in finished_runs:
            job = done_jobs[metric_run.campaign_id]
            query = urlencode({"metric_runs": metric_run.pk, "rating_jobs": job.pk})
            steps.append(
                (
                    _("生成相关性报告：指标「%(run)s」× 评分「%(job)s」")
                    % {"run": metric_run.name, "job": job.name},
                    f"{reverse('metrics:report-create')}?{query}",
                )
            )
    return steps


def researcher_home(*, user: User) -> dict[str, Any]:
    """The study loop at a glance (collect → rate → score → correlate), jobs still running with
    their progress, and the next step that is missing."""
    dialogue_counts = dict(
        Dialogue.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    counts = study_counts()
    running = ("pending", "running")
    next_actions = study_next_steps(counts)
    in_progress = (
        [
            (
                _("静态生成"),
                run.name,
                run.progress_done,
                run.progress_total,
                reverse("chat:static-run-detail", args=[run.pk]),
            )
            for run in StaticRun.objects.filter(status__in=running)[:5]
        ]
        + [
            (
                _("指标运行"),
                run.name,
                run.progress_done,
                run.progress_total,
                reverse("metrics:metric-run-detail", args=[run.pk]),
            )
            for run in MetricRun.objects.filter(status__in=running)[:5]
        ]
        + [
            (
                _("相关性报告"),
                report.name,
                report.progress_done,
                report.progress_total,
                reverse("metrics:report-detail", args=[report.pk]),
            )
            for report in Report.objects.filter(status__in=running)[:5]
        ]
    )
    return {
        "counts": counts,
        "dialogue_counts": dialogue_counts,
        "waiting_review": dialogue_counts.get(Dialogue.Status.SUBMITTED, 0),
        "recent_datasets": Dataset.objects.select_related("skill")[:5],
        "recent_campaigns": Campaign.objects.annotate(n_dialogues=Count("dialogues"))[:5],
        "recent_reports": Report.objects.filter(status="done")[:5],
        "in_progress": in_progress,
        "next_actions": next_actions,
    }


def expert_home(*, user: User) -> dict[str, Any]:
    """Review queue, assignments per open job with progress, and the next thing to do.

    Overdue work is expired and new dialogues assigned here (lazily, no beat needed).
    """
    for open_job in RatingJob.objects.filter(
        status=RatingJob.Status.OPEN,
        is_live=False,
        job_raters__rater=user,
        job_raters__state=JobRater.State.ACTIVE,
    ):
        job_refresh(job=open_job)
    jobs = rater_jobs(rater=user)
    total = sum(job["total"] for job in jobs)
    done = sum(job["done"] for job in jobs)
    to_review = review_queue(reviewer=user).count()
    next_actions = []
    if to_review:
        next_actions.append((_("审核待审对话"), reverse("annotation:review-next")))
    for job in jobs:
        if job["done"] < job["total"]:
            next_actions.append(
                (
                    _("继续评分：%(name)s") % {"name": job["name"]},
                    reverse("annotation:annotate-next", args=[job["id"]]),
                )
            )
    return {
        "assignment_total": total,
        "assignment_done": done,
        "assignment_percent": round(100 * done / total) if total else 0,
        "jobs": jobs,
        "to_review": to_review,
        "next_actions": next_actions,
    }


@dataclass(frozen=True)
class WorkerCampaign:
    """A campaign on a crowdworker's home page, with where the worker stands in it."""

    participant: Participant
    status: WorkerStatus

    @property
    def campaign(self) -> Campaign:
        return self.participant.campaign


def crowdworker_home(*, user: User) -> dict[str, Any]:
    """Campaigns joined with the next action each (continue, start next, done with its code),
    and the dialogues returned by review with their reasons, to re-collect."""
    participations = (
        Participant.objects.filter(user=user).select_related("campaign").order_by("-joined_at")
    )
    campaigns = [
        WorkerCampaign(participant=p, status=worker_status(participant=p)) for p in participations
    ]
    returned = [dialogue for row in campaigns for dialogue in row.status.rejected]
    return {
        "campaigns": [row for row in campaigns if not row.status.finished],
        "finished": [row for row in campaigns if row.status.finished],
        "returned": returned,
    }
