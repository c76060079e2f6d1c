"""What each role's home page shows: counts, work waiting, and the next sensible action."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count
from django.urls import reverse
from django.utils.translation import gettext as _

from annotation.models import JobRater, RatingJob
from annotation.selectors.rating import rater_jobs
from annotation.selectors.review import review_queue
from annotation.services.assignments import job_refresh
from chat.models import Backend, Campaign, Dataset, Dialogue, Participant, StaticRun
from chat.services.assignment import WorkerStatus, worker_status
from metrics.models import MetricRun, Report


def researcher_home(*, user: AbstractBaseUser) -> dict[str, Any]:
    """The study loop at a glance (collect → rate → score → correlate), jobs still running with
    their progress, and the next step that is missing."""
    dialogue_counts = dict(
        Dialogue.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    counts = {
        "datasets": Dataset.objects.count(),
        "backends": Backend.objects.filter(active=True).count(),
        "campaigns": Campaign.objects.count(),
        "static_runs": StaticRun.objects.count(),
        "rating_jobs": RatingJob.objects.filter(is_live=False).count(),
        "metric_runs": MetricRun.objects.count(),
        "reports": Report.objects.count(),
    }
    running = ("pending", "running")
    next_actions = []
    if counts["datasets"] == 0:
        next_actions.append((_("导入一个数据集"), reverse("chat:dataset-upload")))
    if counts["backends"] == 0:
        next_actions.append((_("注册一个模型后端"), reverse("chat:backend-create")))
    if counts["campaigns"] == 0:
        next_actions.append((_("创建一个评测活动"), reverse("chat:campaign-create")))
    if counts["static_runs"] == 0 and counts["backends"] and counts["datasets"]:
        next_actions.append(
            (_("让模型回答一个数据集（静态生成）"), reverse("chat:static-run-create"))
        )
    if dialogue_counts.get(Dialogue.Status.ACCEPTED) and counts["rating_jobs"] == 0:
        next_actions.append((_("为已通过的对话创建评分任务"), reverse("annotation:job-create")))
    if dialogue_counts.get(Dialogue.Status.ACCEPTED) and counts["metric_runs"] == 0:
        next_actions.append((_("计算自动指标"), reverse("metrics:metric-run-create")))
    if counts["rating_jobs"] and counts["metric_runs"] and counts["reports"] == 0:
        next_actions.append((_("生成相关性报告"), reverse("metrics:report-create")))
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


def expert_home(*, user: AbstractBaseUser) -> dict[str, Any]:
    """Review queue, assignments per open job with progress, and the next thing to do.

    Overdue work is expired and new dialogues assigned here (lazily, no beat needed).
    """
    for job in RatingJob.objects.filter(
        status=RatingJob.Status.OPEN,
        is_live=False,
        job_raters__rater=user,
        job_raters__state=JobRater.State.ACTIVE,
    ):
        job_refresh(job=job)
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


def crowdworker_home(*, user: AbstractBaseUser) -> dict[str, Any]:
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
