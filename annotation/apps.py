from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # chat knows nothing of rubrics: the live rubric's turn limit reaches the chat page
        # through chat's registry (seed 001 locks multi-turn tests at 5 turns).
        # Likewise the questions a rate-while-chatting worker still owes lock the composer.
        from annotation.services.live import live_answers_owed, live_turn_limit
        from chat.selectors.collection import ANSWERS_OWED_SOURCES, TURN_LIMIT_SOURCES

        if live_turn_limit not in TURN_LIMIT_SOURCES:
            TURN_LIMIT_SOURCES.append(live_turn_limit)
        if live_answers_owed not in ANSWERS_OWED_SOURCES:
            ANSWERS_OWED_SOURCES.append(live_answers_owed)

        from annotation.models import RatingImport
        from core.jobs import register_job_kind

        register_job_kind("rating_import", model=RatingImport, task="annotation.import_ratings")
