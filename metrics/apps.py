from __future__ import annotations

from datetime import datetime
from typing import Any

from django.apps import AppConfig
from django.db.models import Q

# The sweeper's dispatchers import the services only when called: the services load numpy and
# the scorer registry, which a web process reading settings should not pay for.


def _dispatch_chunk(chunk_id: int) -> None:
    from metrics.services.metric_runs import metric_run_chunk_dispatch

    metric_run_chunk_dispatch(chunk_id)


def _finish_ended_runs(now: datetime) -> int:
    from metrics.services.metric_runs import metric_runs_finish_ended

    return metric_runs_finish_ended(now)


def _dispatch_report(report_id: int) -> None:
    from metrics.services.reports import report_dispatch

    report_dispatch(report_id)


def _dispatch_discriminator(discriminator_id: int) -> None:
    from metrics.services.discriminators import discriminator_dispatch

    discriminator_dispatch(discriminator_id)


def _dispatch_selection(selection_id: int) -> None:
    from metrics.services.followup_selection import selection_dispatch

    selection_dispatch(selection_id)


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


class MetricsConfig(AppConfig):
    name = "metrics"

    def ready(self) -> None:
        from core.health import register_feature_check

        register_feature_check("report_figures", _report_figures)

        from core.jobs import register_job_kind
        from metrics.models import FollowupSelection, MetricRunChunk, Report, TrainedDiscriminator

        register_job_kind(
            "metric_run_chunk",
            model=MetricRunChunk,
            dispatch=_dispatch_chunk,
            eligible=_chunks_to_sweep,
            after_sweep=_finish_ended_runs,
            created_field="run__created_at",
        )
        register_job_kind("report", model=Report, dispatch=_dispatch_report)
        register_job_kind(
            "trained_discriminator", model=TrainedDiscriminator, dispatch=_dispatch_discriminator
        )
        register_job_kind(
            "followup_selection", model=FollowupSelection, dispatch=_dispatch_selection
        )
