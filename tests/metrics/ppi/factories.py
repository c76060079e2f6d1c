"""A sampled rating job over three systems with a predictor on every dialogue (issue 28)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annotation.models import RatingJob
from annotation.services.rating_assignments import job_sample_draw
from chat.models import Backend, Campaign, Dialogue
from metrics.models import MetricRun
from tests.annotation.results.factories import dialogue_with_turns, job_for, rate
from tests.chat.factories import BackendFactory, CampaignFactory
from tests.metrics.reports.factories import dialogue_score, finished_run

SYSTEMS = ("系统甲", "系统乙", "系统丙")
TRUE_LEVEL = {"系统甲": 2.0, "系统乙": 3.0, "系统丙": 4.0}


@dataclass
class SampledStudy:
    campaign: Campaign
    job: RatingJob
    run: MetricRun
    backends: dict[str, Backend]
    dialogues: dict[str, list[Dialogue]] = field(default_factory=dict)
    latent: dict[int, float] = field(default_factory=dict)  # dialogue pk → its true quality


def likert(level: int) -> dict[str, int]:
    return {"naturalness": level, "topic_following": level, "topic_providing": level}


def sampled_study(
    *,
    per_system: int = 30,
    sample_size: int | None = 10,
    rate_sample: bool = True,
    noise: float = 0.3,
    stopping_rule: dict[str, object] | None = None,
    seed: int = 7,
    name: str = "抽样评测",
) -> SampledStudy:
    """Each dialogue has a latent quality (the system's level ± 1); the judge metric
    ``judge:q-v1:overall`` is that quality plus noise, ``length`` is pure noise; the humans
    rate the drawn sample (two raters, the rounded quality) when ``rate_sample``."""
    rng = np.random.default_rng(seed)
    campaign = CampaignFactory(name=name, mode=Campaign.Mode.INTERACTIVE)
    job = job_for("likert", campaign=campaign, name=f"{name}·评分")
    job.sample_size = sample_size
    job.sample_seed = 3
    job.stopping_rule = stopping_rule or {}
    job.save()
    run = finished_run(campaign, "judge run", metrics=["judge:q-v1:overall", "length"])
    backends = {
        n: Backend.objects.filter(name=n).first() or BackendFactory(name=n) for n in SYSTEMS
    }
    study = SampledStudy(campaign, job, run, backends)
    for name, backend in study.backends.items():
        study.dialogues[name] = []
        for _ in range(per_system):
            dialogue = dialogue_with_turns(campaign, backend)
            quality = float(np.clip(TRUE_LEVEL[name] + rng.uniform(-1, 1), 1, 5))
            study.latent[dialogue.pk] = quality
            dialogue_score(run, dialogue, "judge:q-v1:overall", quality + rng.normal(0, noise))
            dialogue_score(run, dialogue, "length", float(rng.normal(10, 3)))
            study.dialogues[name].append(dialogue)
    if sample_size is not None:
        job_sample_draw(job=job)
        job.refresh_from_db()
    if rate_sample:
        for pk in job.sample:
            rate_dialogue(study, pk)
    return study


def rate_dialogue(study: SampledStudy, pk: int) -> None:
    level = int(round(study.latent[pk]))
    dialogue = Dialogue.objects.get(pk=pk)
    rate(study.job, dialogue, "expert-1", likert(level))
    rate(study.job, dialogue, "expert-2", likert(max(1, min(5, level + (pk % 2)))))
