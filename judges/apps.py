from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from judges import report
        from judges.services import chunks
        from metrics.services import chunk_handlers, report_extensions

        # The judges' execution path ends here: metrics/tasks/runs.py scores a `judge:<part>`
        # chunk with this handler (see judges.services.chunks and docs/architecture.md).
        chunk_handlers.register(
            "judge",
            chunk_handlers.ChunkHandler(
                score=chunks.judge_chunk_score, queue=chunks.judge_chunk_queue
            ),
        )
        report_extensions.register(report.EXTENSION)
