"""Platform data for report tests: an interactive campaign rated by experts, a static campaign
scored by metric runs, over the same systems (the MSDE design)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from annotation.models import RatingJob
from chat.models import Backend, Campaign, Dialogue
from metrics.models import JobStatus, MetricRun, MetricScore
from tests.annotation.results.factories import dialogue_with_turns, job_for, model_turn, rate
from tests.chat.factories import BackendFactory, CampaignFactory

LIKERT = ("naturalness", "topic_following", "topic_providing")
SYSTEMS = ("系统甲", "系统乙", "系统丙", "系统丁", "系统戊")
QUALITY = {name: q for q, name in enumerate(SYSTEMS, start=1)}  # 1 (worst) .. 5 (best)


def finished_run(campaign: Campaign, name: str = "run", **fields: object) -> MetricRun:
    now = timezone.now()
    return MetricRun.objects.create(
        name=name,
        campaign=campaign,
        status=JobStatus.DONE,
        started_at=now,
        finished_at=now,
        **fields,
    )


def dialogue_score(run: MetricRun, dialogue: Dialogue, metric: str, value: float) -> MetricScore:
    return MetricScore.objects.create(
        run=run, metric=metric, level="dialogue", dialogue=dialogue, value=value
    )


def turn_scores(run: MetricRun, dialogue: Dialogue, metric: str, values: list[float]) -> None:
    for index, value in enumerate(values):
        turn = model_turn(dialogue, index)
        MetricScore.objects.create(
            run=run, metric=metric, level="turn", turn=turn, dialogue=dialogue, value=value
        )


def likert_answers(level: int) -> dict[str, int]:
    """All three Likert questions answered (the scoring kernel needs complete answers)."""
    return {"naturalness": level, "topic_following": max(1, level - 1), "topic_providing": level}


@dataclass
class Study:
    """Five systems; interactive dialogues rated by two experts, static answers scored."""

    backends: dict[str, Backend]
    interactive: Campaign
    static: Campaign
    job: RatingJob
    rated: list[Dialogue] = field(default_factory=list)
    answers: list[Dialogue] = field(default_factory=list)


def msde_study(*, dialogues_per_system: int = 2, skills: tuple[str, ...] = ("knowledge",)) -> Study:
    """Rated interactive dialogues (Likert 1–5, two raters) and unscored static answers.

    Rater 1 gives each system its quality level (1–5) shifted by the dialogue's position, rater 2
    one point less (at least 1): human means follow the systems' quality.
    """
    backends = {name: BackendFactory(name=name) for name in SYSTEMS}
    interactive = CampaignFactory(name="交互采集", mode=Campaign.Mode.INTERACTIVE)
    static = CampaignFactory(name="静态生成", mode=Campaign.Mode.STATIC)
    job = job_for("likert", campaign=interactive, name="李克特评分")
    study = Study(backends=backends, interactive=interactive, static=static, job=job)
    for skill_key in skills:
        for name, backend in backends.items():
            for k in range(dialogues_per_system):
                dialogue = dialogue_with_turns(interactive, backend, skill_key=skill_key)
                level = min(5, max(1, QUALITY[name] - k))
                rate(job, dialogue, "expert-1", likert_answers(level))
                rate(job, dialogue, "expert-2", likert_answers(max(1, level - 1)))
                study.rated.append(dialogue)
                study.answers.append(dialogue_with_turns(static, backend, skill_key=skill_key))
    return study
