from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from judges import report, services
        from metrics.services import chunk_handlers, report_extensions

        chunk_handlers.register(
            "judge",
            chunk_handlers.ChunkHandler(
                score=services.judge_chunk_score, queue=services.judge_chunk_queue
            ),
        )
        report_extensions.register(report.EXTENSION)
