"""Reads of judges: lists, a run's answers, and the meta-evaluation of a judge run against a
rating job (judge as rater, biases, distributions, win rates; see :mod:`judges.analysis`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from annotation.models import RatingJob
from annotation.rubric_spec import validate_spec
from annotation.scoring import OVERALL
from annotation.selectors.human_scores import human_scores, job_answers, model_turn_indices
from chat.models import Backend, Dialogue, Turn
from judges import analysis, parsing
from judges.models import Judge, JudgeAnswer, JudgeRun
from judges.scoring import pair_outcomes
from judges.services import judge_config
from metrics.models import Level, MetricRun, MetricScore


def judge_list() -> QuerySet[Judge]:
    return Judge.objects.select_related("backend", "rubric", "created_by").order_by(
        "key", "-version"
    )


def judge_sampling(judge: Judge) -> list[tuple[str, str]]:
    """The judge's sampling settings as (label, value) pairs in the page's language, in the
    judge form's order and words (the stored JSON is configuration, not something to show)."""
    sampling = judge.sampling or {}
    aggregates = {"mean": _("平均"), "majority": _("多数投票")}
    rows = [
        (_("采样次数 n"), number_format(sampling.get("n", 1))),
        (
            _("多次采样的汇总"),
            str(aggregates.get(sampling.get("aggregate", "mean"), sampling.get("aggregate"))),
        ),
    ]
    if sampling.get("temperature") is not None:
        rows.append((_("温度"), number_format(sampling["temperature"])))
    if sampling.get("max_tokens") is not None:
        rows.append((_("最大生成 token 数"), number_format(sampling["max_tokens"])))
    if sampling.get("rate_limit_per_s"):
        rows.append((_("每秒最多请求数"), number_format(sampling["rate_limit_per_s"])))
    if sampling.get("geval"):
        rows.append(("G-Eval", _("按对数概率加权打分")))
    return rows


def judge_runs(*, judge: Judge | None = None) -> QuerySet[JudgeRun]:
    runs = JudgeRun.objects.select_related("metric_run__campaign", "judge")
    if judge is not None:
        runs = runs.filter(judge__key=judge.key)
    return runs.order_by("-metric_run__created_at")


def run_answers(
    *, run: MetricRun, status: str | None = None, dialogue_id: int | None = None
) -> QuerySet[JudgeAnswer]:
    answers = JudgeAnswer.objects.filter(run=run).select_related("dialogue__backend", "turn")
    if status:
        answers = answers.filter(status=status)
    if dialogue_id:
        answers = answers.filter(dialogue_id=dialogue_id) | JudgeAnswer.objects.filter(
            run=run, other_dialogue_id=dialogue_id
        )
    return answers.order_by("dialogue_id", "turn_id", "order", "sample")


def run_status_counts(*, run: MetricRun) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for status in JudgeAnswer.objects.filter(run=run).values_list("status", flat=True):
        counts[status] += 1
    return dict(counts)


def matching_jobs(*, run: MetricRun) -> QuerySet[RatingJob]:
    """Rating jobs over the run's campaign: their ratings are of the dialogues the judge rated."""
    return RatingJob.objects.filter(campaign_id=run.campaign_id).select_related("rubric")


def _judge_items(run: MetricRun) -> dict[str, dict[analysis.Item, float]]:
    """The judge's discrete answers per question and item (dialogue, model-turn index): the
    majority over samples, as one more rater would give."""
    answers = list(
        JudgeAnswer.objects.filter(run=run, order="").values_list(
            "dialogue_id", "turn_id", "values"
        )
    )
    turn_index, _ = model_turn_indices({a[0] for a in answers})
    collected: dict[str, dict[tuple[int, int | None], list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for dialogue_id, turn_id, values in answers:
        item = (dialogue_id, None if turn_id is None else turn_index.get(turn_id))
        for key, value in (values or {}).items():
            if isinstance(value, int | float):
                collected[key][item].append(float(value))
    return {
        key: {item: parsing.majority(vs) for item, vs in items.items()}
        for key, items in collected.items()
    }


def _reply_lengths(dialogue_ids: set[int]) -> dict[int, float]:
    lengths: dict[int, list[int]] = defaultdict(list)
    for dialogue_id, text in Turn.objects.filter(
        dialogue_id__in=dialogue_ids, speaker=Turn.Speaker.SYSTEM
    ).values_list("dialogue_id", "text"):
        lengths[dialogue_id].append(len(text))
    return {d: float(np.mean(v)) for d, v in lengths.items()}


def meta_evaluation(*, run: MetricRun, job: RatingJob) -> dict[str, Any]:
    """Everything the report shows about one judge run against one rating job (JSON-ready)."""
    judge_run = JudgeRun.objects.select_related("judge__backend", "judge__rubric").get(pk=run.pk)
    judge = judge_run.judge
    config = judge_config(judge)
    spec = config.spec
    job_spec = validate_spec(job.rubric.spec)
    shared = [
        q for q in spec.questions if q.scored and any(j.key == q.key for j in job_spec.questions)
    ]
    notes = []
    if job.rubric.key != judge.rubric.key:
        notes.append(
            f"the judge uses rubric {judge.rubric.key} and the job {job.rubric.key}; "
            f"compared on the shared questions ({', '.join(q.key for q in shared) or 'none'})"
        )
    data = job_answers(job=job)
    users = dict(
        get_user_model()
        .objects.filter(pk__in={a.rater for a in data.answers})
        .values_list("pk", "username")
    )
    ratings: dict[str, dict[analysis.Item, dict[Hashable, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for answer in data.answers:
        if isinstance(answer.value, int | float):
            rater = users.get(answer.rater, str(answer.rater))  # type: ignore[call-overload]  # rater keys are user pks or names
            ratings[answer.question][(answer.unit, answer.turn)][rater] = float(answer.value)
    result: dict[str, Any] = {
        "run": run.pk,
        "run_name": run.name,
        "judge": str(judge),
        "judge_name": judge.name,
        "mode": judge.mode,
        "job": job.pk,
        "job_name": job.name,
        "notes": notes,
        "agreement": [],
        "length_bias": [],
        "distributions": [],
        "self_preference": None,
        "position_bias": [],
        "win_rates": [],
        "pairwise_accuracy": [],
    }
    human = human_scores(job=job, level="dialogue")
    human_by: dict[str, dict[int, float]] = defaultdict(dict)
    for score in human:
        human_by[score.dimension][score.dialogue_id] = score.value
    judge_scores: dict[str, dict[int, float]] = defaultdict(dict)
    for metric, dialogue_id, value in MetricScore.objects.filter(
        run=run, level=Level.DIALOGUE
    ).values_list("metric", "dialogue_id", "value"):
        judge_scores[metric.removeprefix(config.prefix + ":")][dialogue_id] = value
    dialogue_ids = {s.dialogue_id for s in human} | {d for by in judge_scores.values() for d in by}
    lengths = _reply_lengths(dialogue_ids)
    dimensions = [q.key for q in shared] + ([OVERALL] if OVERALL in judge_scores else [])
    for dimension in dimensions:
        if dimension in human_by and dimension in judge_scores:
            row = analysis.length_bias(judge_scores[dimension], human_by[dimension], lengths)
            result["length_bias"].append({"dimension": dimension, **row})

    if judge.mode != Judge.Mode.PAIRWISE:
        items = _judge_items(run)
        for q in shared:
            if q.key in items and q.key in ratings:
                result["agreement"].append(
                    analysis.rater_agreement(q, ratings[q.key], items[q.key])
                )
                human_values = [v for by in ratings[q.key].values() for v in by.values()]
                result["distributions"].append(
                    analysis.distributions(q, list(items[q.key].values()), human_values)
                )
        result["self_preference"] = _self_preference(run, judge, judge_scores, human_by)
    else:
        _pairwise(run, config, shared, human_by, result)
    return result


def _self_preference(
    run: MetricRun,
    judge: Judge,
    judge_scores: dict[str, dict[int, float]],
    human_by: dict[str, dict[int, float]],
) -> dict[str, Any] | None:
    """When the judge's backend (or its model) is one of the evaluated systems."""
    model = str(judge.backend.config.get("model") or "")
    systems = dict(
        Dialogue.objects.filter(pk__in=set(judge_scores.get(OVERALL, {}))).values_list(
            "pk", "backend__name"
        )
    )
    backends = Backend.objects.filter(name__in=set(systems.values()))
    own = [
        b.name
        for b in backends
        if b.pk == judge.backend_id or (model and str(b.config.get("model") or "") == model)
    ]
    if not own:
        return None

    def means(scores: dict[int, float]) -> dict[str, float]:
        grouped: dict[str, list[float]] = defaultdict(list)
        for dialogue_id, value in scores.items():
            if dialogue_id in systems:
                grouped[systems[dialogue_id]].append(value)
        return {name: float(np.mean(v)) for name, v in grouped.items()}

    found = analysis.self_preference(
        means(judge_scores.get(OVERALL, {})), means(human_by.get(OVERALL, {})), own[0]
    )
    return found or {"system": own[0], "self_preference": None, "note": "fewer than 3 systems"}


def _pairwise(
    run: MetricRun,
    config: Any,
    shared: list[Any],
    human_by: dict[str, dict[int, float]],
    result: dict[str, Any],
) -> None:
    answers = list(JudgeAnswer.objects.filter(run=run).exclude(order=""))
    outcomes = pair_outcomes(config, answers)
    names = dict(
        Dialogue.objects.filter(pk__in={d for pair in outcomes for d in pair}).values_list(
            "pk", "backend__name"
        )
    )
    per_question: dict[str, list[tuple[str | None, str | None]]] = defaultdict(list)
    verdicts: dict[str, list[tuple[str, str, str | None]]] = defaultdict(list)
    hits: dict[str, list[bool]] = defaultdict(list)
    by_pair: dict[tuple[int, int], list[JudgeAnswer]] = defaultdict(list)
    for answer in answers:
        by_pair[(answer.dialogue_id, answer.other_dialogue_id)].append(answer)  # type: ignore[index]  # pairwise answers always carry the other dialogue
    for (one, two), outcome in outcomes.items():
        orders = by_pair[(one, two)]
        for key, (_score, verdict, _flip) in outcome.items():
            f = [a.values.get(key) for a in orders if a.order == "ab" and key in a.values]
            b = [a.values.get(key) for a in orders if a.order == "ba" and key in a.values]
            per_question[key].append(
                (parsing.majority(f) if f else None, parsing.majority(b) if b else None)
            )
            verdicts[key].append((names[one], names[two], verdict))
            human = human_by.get(key, {})
            if one in human and two in human and human[one] != human[two] and verdict in ("1", "2"):
                hits[key].append((verdict == "1") == (human[one] > human[two]))
    for q in shared:
        if q.key in per_question:
            result["position_bias"].append(
                {"question": q.key, **analysis.position_bias(per_question[q.key])}
            )
            for row in analysis.win_rates(verdicts[q.key]):
                result["win_rates"].append({"question": q.key, **row})
            decided = hits.get(q.key, [])
            result["pairwise_accuracy"].append(
                {
                    "question": q.key,
                    "n": len(decided),
                    "accuracy": float(np.mean(decided)) if decided else None,
                }
            )
