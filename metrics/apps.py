from __future__ import annotations

from datetime import datetime
from typing import Any

from django.apps import AppConfig
from django.db.models import Q

# The job kinds' helpers import the services only when called: the services load numpy and the
# scorer registry, which a web process reading settings should not pay for.


def _chunk_queues(chunk_ids: list[int]) -> list[str]:
    from metrics.services.metric_runs import metric_run_chunk_queues

    return metric_run_chunk_queues(chunk_ids)


def _model_queues(pks: list[int]) -> list[str]:
    from metrics.services.queues import model_queues

    return model_queues(pks)


def _finish_ended_runs(now: datetime) -> int:
    from metrics.services.metric_runs import metric_runs_finish_ended

    return metric_runs_finish_ended(now)


def _chunks_to_sweep(now: datetime) -> Q:
    """Chunks of active runs. A chunk still waiting for a worker is sent again only when no
    chunk of its run is being worked on: a long queue of one run's chunks is not a lost one."""
    from core.models import ACTIVE, JobStatus

    stalled = ~Q(run__chunks__lease_expires_at__gt=now)
    return Q(run__status__in=ACTIVE) & (Q(status=JobStatus.RUNNING) | stalled)


def _report_figures() -> dict[str, Any]:
    # Imported here: matplotlib is heavy and only the health check and the report pages need it.
    from metrics.reporting.fonts import font_status

    return font_status().as_dict()


def _pairwise_section(config: Any) -> dict[str, Any] | None:
    from metrics.services.pairwise import pairwise_report_section

    return pairwise_report_section(config)


def _pairwise_files(section: Any) -> dict[str, bytes]:
    from metrics.reporting.pairwise import pairwise_files

    return pairwise_files(section)


def _ppi_section(config: Any) -> dict[str, Any] | None:
    from metrics.services.ppi import ppi_report_section

    return ppi_report_section(config)


def _ppi_files(section: Any) -> dict[str, bytes]:
    from metrics.reporting.ppi import ppi_files

    return ppi_files(section)


def _job_runs_in_rounds(job: Any) -> bool:
    return bool(job.stopping_rule) and not job.is_pairwise


def _job_rounds_panel(request: Any, job: Any) -> Any:
    from django.template.loader import render_to_string

    from metrics.services.ppi_rounds import rounds_panel

    return render_to_string("metrics/job_rounds_panel.html", rounds_panel(job), request=request)


def _job_is_pairwise(job: Any) -> bool:
    return bool(job.is_pairwise and job.vote_source_id)


def _job_pairwise_panel(request: Any, job: Any) -> Any:
    from django.template.loader import render_to_string

    from metrics.services.pairwise import job_pairwise_summary

    include = request.GET.get("include_excluded") == "1"
    summary = job_pairwise_summary(
        campaign_id=job.campaign_id, source_id=job.vote_source_id, include_excluded=include
    )
    context = {"summary": summary, "job": job, "include_excluded": include}
    return render_to_string("metrics/job_pairwise_panel.html", context, request=request)


def _job_samples_pairs(job: Any) -> bool:
    return bool(job.is_pairwise and job.vote_source_id and job.pair_sample_size is not None)


def _job_ppi_pairwise_panel(request: Any, job: Any) -> Any:
    from django.template.loader import render_to_string

    from metrics.services.ppi_pairwise import pairwise_ppi_panel

    context = pairwise_ppi_panel(
        job=job,
        judge=request.GET.get("ppi_judge", "")[:200] or None,
        question=request.GET.get("ppi_question", "")[:80] or None,
    )
    return render_to_string("metrics/job_ppi_pairwise_panel.html", context, request=request)


def _side_by_side_variances(systems: Any, votes: Any) -> Any:
    from metrics.services.side_by_side_ranking import side_by_side_variances

    return side_by_side_variances(systems, votes)


def _side_by_side_leaderboard(systems: Any, votes: Any) -> Any:
    from metrics.services.side_by_side_ranking import side_by_side_leaderboard

    return side_by_side_leaderboard(systems, votes)


class MetricsConfig(AppConfig):
    name = "metrics"

    def ready(self) -> None:
        from core.health import register_feature_check

        register_feature_check("report_figures", _report_figures)

        from annotation import job_panels
        from metrics.services import report_extensions

        # A pairwise (ACUTE-style) rating job's page: its ranking and its raters' agreement.
        job_panels.register(
            job_panels.JobPanel(
                name="pairwise", applies=_job_is_pairwise, render=_job_pairwise_panel
            )
        )

        # A pairwise job that rates a random subset of its comparisons (issue 28): human-only
        # and human + judge Bradley–Terry ratings.
        job_panels.register(
            job_panels.JobPanel(
                name="ppi-pairwise", applies=_job_samples_pairs, render=_job_ppi_pairwise_panel
            )
        )

        # A job in rounds (issue 28): progress toward its stopping rule, ratings still needed.
        job_panels.register(
            job_panels.JobPanel(
                name="rounds", applies=_job_runs_in_rounds, render=_job_rounds_panel
            )
        )

        # The pairwise section: Bradley–Terry leaderboards, agreement, pairwise accuracy
        # (metrics.services.pairwise); computed when a report's config has `pairwise` options.
        report_extensions.register(
            report_extensions.ReportExtension(
                name="pairwise",
                compute=_pairwise_section,
                files=_pairwise_files,
                template="metrics/report_pairwise.html",
            )
        )

        # Side-by-side campaigns (chat) rank and pair their systems with the Bradley–Terry fit.
        from chat.services.side_by_side_hooks import RankingProvider, register_ranking_provider

        register_ranking_provider(
            RankingProvider(
                variances=_side_by_side_variances, leaderboard=_side_by_side_leaderboard
            )
        )

        # The "Human + judge" section: prediction-powered estimates of a rating job's question
        # per system (metrics.services.ppi); computed when a report's config has `ppi` options.
        report_extensions.register(
            report_extensions.ReportExtension(
                name="ppi",
                compute=_ppi_section,
                files=_ppi_files,
                template="metrics/report_ppi.html",
            )
        )

        from core.jobs import register_job_kind
        from metrics.models import FollowupSelection, MetricRunChunk, Report, TrainedDiscriminator

        register_job_kind(
            "metric_run_chunk",
            model=MetricRunChunk,
            task="metrics.tasks.runs.score_chunk",
            queue=_chunk_queues,
            eligible=_chunks_to_sweep,
            after_sweep=_finish_ended_runs,
            created_field="run__created_at",
        )
        register_job_kind("report", model=Report, task="metrics.tasks.reports.report_compute_task")
        # Seed 003 trains on a GPU, seed 004 scores with a language model: the gpu queue where
        # the deployment has a GPU worker (metrics.services.queues).
        register_job_kind(
            "trained_discriminator",
            model=TrainedDiscriminator,
            task="metrics.tasks.training.train_discriminator",
            queue=_model_queues,
        )
        register_job_kind(
            "followup_selection",
            model=FollowupSelection,
            task="metrics.tasks.training.select_followup_items",
            queue=_model_queues,
        )
