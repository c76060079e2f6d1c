from typing import Any

from django.apps import AppConfig


def _chat_workers_health() -> dict[str, Any]:
    from chat.services.reply_worker import chat_workers_health

    return chat_workers_health()


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self) -> None:
        from chat.models import StaticRun
        from core.health import register_feature_check
        from core.jobs import register_job_kind

        # Static runs whose worker died are sent again by the job sweeper (core.jobs).
        register_job_kind("static_run", model=StaticRun, task="chat.tasks.static_run_execute")
        # /healthz lists the live chat workers and the replies waiting for one.
        register_feature_check("chat_workers", _chat_workers_health)
