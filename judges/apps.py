from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.apps import AppConfig

# The hooks metrics calls import the judges' services and report code only when called: they
# load the judge client, the scorer registry and the meta-evaluation statistics, which
# `manage.py check` and the requests that never score or report a judge run should not pay for.


def _judge_chunk_score(chunk_id: int, owner: str) -> str:
    from judges.services.chunks import judge_chunk_score

    return judge_chunk_score(chunk_id, owner)


def _judge_chunk_queue(chunk_id: int) -> str:
    from judges.services.chunks import judge_chunk_queue

    return judge_chunk_queue(chunk_id)


def _report_section(config: Mapping[str, Any]) -> dict[str, Any] | None:
    from judges.report import report_section

    return report_section(config)


def _report_files(section: Mapping[str, Any]) -> dict[str, bytes]:
    from judges.report import report_files

    return report_files(section)


def _delete_vote_source(sender: type, instance: Any, **kwargs: Any) -> None:
    """A judge run deleted (itself or with its metric run) takes its votes with it."""
    from chat.models import VoteSource

    if instance.vote_source_id is not None:
        VoteSource.objects.filter(pk=instance.vote_source_id).delete()


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from metrics.services import chunk_handlers, report_extensions

        post_delete.connect(
            _delete_vote_source, sender="judges.JudgeRun", dispatch_uid="judges.vote_source"
        )

        # The judges' execution path ends here: metrics/tasks/runs.py scores a `judge:<part>`
        # chunk with this handler (see judges.services.chunks and docs/architecture.md).
        chunk_handlers.register(
            "judge", chunk_handlers.ChunkHandler(score=_judge_chunk_score, queue=_judge_chunk_queue)
        )
        report_extensions.register(
            report_extensions.ReportExtension(
                name="judges",
                compute=_report_section,
                files=_report_files,
                template="judges/report_section.html",
            )
        )
