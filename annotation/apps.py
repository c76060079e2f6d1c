from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from chat.models import Campaign, Dialogue, Turn
    from chat.selectors.collection import AnswersOwed

# The hooks chat calls import the live-rating services only when called: those load the rating
# rules and numpy's rater statistics, which `manage.py check` and most requests never need.


def _live_turn_limit(campaign: Campaign) -> int | None:
    from annotation.services.live import live_turn_limit

    return live_turn_limit(campaign)


def _live_answers_owed(dialogue: Dialogue, turns: Sequence[Turn]) -> AnswersOwed | None:
    from annotation.services.live import live_answers_owed

    return live_answers_owed(dialogue, turns)


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        # chat knows nothing of rubrics: the live rubric's turn limit reaches the chat page
        # through chat's registry (seed 001 locks multi-turn tests at 5 turns).
        # Likewise the questions a rate-while-chatting worker still owes lock the composer.
        from chat.selectors.collection import ANSWERS_OWED_SOURCES, TURN_LIMIT_SOURCES

        if _live_turn_limit not in TURN_LIMIT_SOURCES:
            TURN_LIMIT_SOURCES.append(_live_turn_limit)
        if _live_answers_owed not in ANSWERS_OWED_SOURCES:
            ANSWERS_OWED_SOURCES.append(_live_answers_owed)

        from annotation.models import RatingImport
        from core.jobs import register_job_kind

        register_job_kind("rating_import", model=RatingImport, task="annotation.import_ratings")
