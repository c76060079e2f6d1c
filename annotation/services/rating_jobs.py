"""Rating jobs: which dialogues, which rubric, how many raters, which quality checks.

A job takes the accepted dialogues of a campaign (optionally only those of one static run; an
imported set is a campaign of mode `imported`). Seed 001 needs at least 3 raters per item for
single-turn and 5 for multi-turn; a rubric declares that as `min_raters`, and a job below it is
refused unless the researcher says so explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from annotation.models import Assignment, GoldItem, JobRater, RatingJob, Rubric
from annotation.pairwise import comparative_questions
from annotation.rubric_spec import AnswerError, as_spec, validate_answer
from annotation.selectors.rating import experts, model_turn_ids
from annotation.services.quality import PAIRWISE_DEFAULTS, QualitySettings
from annotation.services.rating_assignments import RatingJobError, assignments_generate
from chat.models import Campaign, Dialogue, StaticRun, VoteSource
from core.access import Role

# More raters than any study uses; the column is a small integer.
MAX_RATERS_PER_DIALOGUE = 100


@transaction.atomic
def job_create(
    *,
    name: str,
    campaign: Campaign,
    rubric: Rubric,
    created_by: User | None,
    static_run: StaticRun | None = None,
    raters_per_dialogue: int = 3,
    raters: Iterable[User] | None = None,
    quality_settings: Mapping[str, Any] | None = None,
    deadline_hours: int = 72,
    seed: int = 0,
    allow_below_minimum: bool = False,
    sample_size: int | None = None,
    sample_seed: int = 0,
    mode: str = RatingJob.Mode.ABSOLUTE,
    pair_sample_size: int | None = None,
) -> RatingJob:
    """Create a draft job. `raters` is the expert pool (default: every active expert).

    `sample_size` (seed 001's sampling after generation): rate only that many of each system's
    dialogues, drawn with `sample_seed` when the job opens (`job_sample_draw`).

    `mode="pairwise"` (ACUTE-Eval): items are pairs of dialogues of one scenario, asked the
    rubric's questions comparatively (`annotation.pairwise.comparative_questions`; the
    `acute-eval` preset holds ACUTE's four); `raters_per_dialogue` counts raters per pair; the
    onboarding threshold defaults to ACUTE's 0.75; the answers are written as votes under a
    vote source made with the job. `pair_sample_size` (pairwise only): rate a seeded random
    subset of that many comparisons (scenario, system pair), drawn with `sample_seed` when the
    job opens (`pair_sample_draw`), so that a judge's votes on every comparison can sharpen the
    ratings (prediction-powered Bradley–Terry, issue 28)."""
    name = _clean_name(name, exclude=None)
    if mode not in RatingJob.Mode.values:
        raise RatingJobError(
            _("mode：必须是 absolute（逐段评分）或 pairwise（成对比较），收到 %(mode)r")
            % {"mode": mode},
            field="mode",
        )
    pairwise = mode == RatingJob.Mode.PAIRWISE
    if pairwise:
        if not comparative_questions(as_spec(rubric.spec)):
            raise RatingJobError(
                _("rubric：量表 %(key)s 没有可以比较的题目（自由文本和第一级问题不能成对比较）")
                % {"key": rubric.key},
                field="rubric",
            )
        quality_settings = {**PAIRWISE_DEFAULTS, **(quality_settings or {})}
        if quality_settings.get("duplicate_rate"):
            raise RatingJobError(
                _("quality_settings：成对比较中评分专家不会看到同一段对话两次，不能设重复题"),
                field="quality_settings",
            )
    if pair_sample_size is not None:
        if not pairwise:
            raise RatingJobError(
                _("pair_sample_size：只有成对比较任务可以抽取比较"), field="pair_sample_size"
            )
        if pair_sample_size < 1:
            raise RatingJobError(
                _("pair_sample_size：抽取的比较数至少为 1（留空表示全部比较）"),
                field="pair_sample_size",
            )
        if sample_size is not None:
            # Pairs of sampled dialogues would have inclusion probabilities of their own: one
            # random draw, of the comparisons, keeps π = n/N exact.
            raise RatingJobError(
                _("pair_sample_size：不能与 sample_size 同时使用（只抽取比较，不抽取对话）"),
                field="pair_sample_size",
            )
    if sample_size is not None and sample_size < 1:
        raise RatingJobError(
            _("sample_size：抽样数量至少为 1（留空表示全部对话）"), field="sample_size"
        )
    if static_run is not None and static_run.campaign_id != campaign.pk:
        raise RatingJobError(
            _("static_run：静态生成 %(run)s 属于另一个评测活动，不是「%(campaign)s」")
            % {"run": static_run.pk, "campaign": campaign.name},
            field="static_run",
        )
    if raters_per_dialogue < 1:
        raise RatingJobError(_("raters_per_dialogue：至少为 1"), field="raters_per_dialogue")
    if raters_per_dialogue > MAX_RATERS_PER_DIALOGUE:
        # The column is a small integer: a huge value used to end as a database error (a 500).
        raise RatingJobError(
            _("raters_per_dialogue：最多为 %(n)d") % {"n": MAX_RATERS_PER_DIALOGUE},
            field="raters_per_dialogue",
        )
    minimum = as_spec(rubric.spec).min_raters
    if raters_per_dialogue < minimum and not allow_below_minimum:
        raise RatingJobError(
            _(
                "raters_per_dialogue：量表 %(key)s v%(version)s 要求每条至少 %(minimum)d 人评分，"
                "当前为 %(got)d"
            )
            % {
                "key": rubric.key,
                "version": rubric.version,
                "minimum": minimum,
                "got": raters_per_dialogue,
            },
            field="raters_per_dialogue",
        )
    _check_deadline(deadline_hours)
    settings = QualitySettings.parse(quality_settings)
    pool = list(experts() if raters is None else raters)
    expert_group = Group.objects.get(name=Role.EXPERT.value)
    not_experts = [u.get_username() for u in pool if not u.groups.filter(pk=expert_group.pk)]
    if not_experts:
        raise RatingJobError(
            _("raters：这些用户不是评分专家：%(names)s")
            % {"names": "、".join(sorted(not_experts))},
            field="raters",
        )
    job = RatingJob.objects.create(
        name=name,
        campaign=campaign,
        rubric=rubric,
        static_run=static_run,
        raters_per_dialogue=raters_per_dialogue,
        quality_settings=settings.as_dict(),
        deadline_hours=deadline_hours,
        seed=seed,
        sample_size=sample_size,
        sample_seed=sample_seed,
        created_by=created_by,
        mode=mode,
        pair_sample_size=pair_sample_size,
    )
    if pairwise:
        job.vote_source = VoteSource.objects.create(
            campaign=campaign,
            kind=VoteSource.Kind.PAIRWISE_JOB,
            label=job.name,
            created_by=created_by,
        )
        job.save(update_fields=["vote_source"])
    JobRater.objects.bulk_create([JobRater(job=job, rater=user) for user in pool])
    return job


def _clean_name(name: str, *, exclude: RatingJob | None) -> str:
    name = name.strip()
    if not name:
        raise RatingJobError(_("name：任务名称不能为空"), field="name")
    others = RatingJob._base_manager.filter(name=name)
    if exclude is not None:
        others = others.exclude(pk=exclude.pk)
    if others.exists():
        raise RatingJobError(
            _("name：已有名为「%(name)s」的评分任务") % {"name": name}, field="name"
        )
    return name


def _check_deadline(deadline_hours: int) -> None:
    if deadline_hours < 1:
        raise RatingJobError(_("deadline_hours：期限至少为 1 小时"), field="deadline_hours")


@transaction.atomic
def job_open(*, job: RatingJob) -> RatingJob:
    """Open a draft (or reopen a closed) job and assign its dialogues."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    if job.is_live:
        raise RatingJobError(
            _("status：实时评分任务由对话页面自动开启，不能手动开启"), field="status"
        )
    if not JobRater.objects.filter(job=job).exists():
        raise RatingJobError(_("raters：任务还没有评分专家"), field="raters")
    job.status = RatingJob.Status.OPEN
    job.save(update_fields=["status"])
    assignments_generate(job=job)
    return job


@transaction.atomic
def job_close(*, job: RatingJob) -> RatingJob:
    """Close a job: no more answers are accepted; submitted ratings stay."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    job.status = RatingJob.Status.CLOSED
    job.save(update_fields=["status"])
    return job


@transaction.atomic
def gold_item_set(
    *, job: RatingJob, dialogue: Dialogue, purpose: str, answers: Sequence[Mapping[str, Any]]
) -> GoldItem:
    """Store a dialogue's known answers as a gold or onboarding item of the job.

    Each answer is {"question", "turn" (model-turn index or null), "value"}; they are validated
    against the job's rubric, and a turn must exist in the dialogue.
    """
    if purpose not in GoldItem.Purpose.values:
        raise RatingJobError(
            _("purpose：必须是 gold（金标题）或 onboarding（入门筛选题），收到 %(purpose)r")
            % {"purpose": purpose},
            field="purpose",
        )
    if job.is_pairwise:
        raise RatingJobError(
            _("dialogue：成对比较任务的金标题是一对对话，请指明更好的一段和另一段"),
            field="dialogue",
        )
    if dialogue.campaign_id != job.campaign_id:
        raise RatingJobError(
            _("dialogue：对话 %(id)s 不属于本任务的评测活动") % {"id": dialogue.pk},
            field="dialogue",
        )
    if Assignment.objects.filter(job=job, dialogue=dialogue, kind=Assignment.Kind.REAL).exists():
        raise RatingJobError(
            _("dialogue：对话 %(id)s 已作为正式条目分配给评分专家，不能再作金标题或入门筛选题")
            % {"id": dialogue.pk},
            field="dialogue",
        )
    if not answers:
        raise RatingJobError(_("answers：至少需要一个已知答案"), field="answers")
    n_model_turns = len(model_turn_ids(dialogue))
    cleaned = []
    seen = set()
    for index, answer in enumerate(answers):
        question, turn = answer.get("question"), answer.get("turn")
        field = f"answers[{index}]"
        if (question, turn) in seen:
            raise RatingJobError(
                _("%(field)s：%(question)s 第 %(turn)s 个模型回复的答案给了两次")
                % {"field": field, "question": question, "turn": turn},
                field=field,
            )
        seen.add((question, turn))
        try:
            value = validate_answer(
                job.rubric.spec,
                str(question),
                answer.get("value"),
                turn=turn,
                skill=dialogue.skill.key,
            )
        except AnswerError as exc:
            raise RatingJobError(
                _("%(field)s：评分量表不接受这个答案：%(error)s") % {"field": field, "error": exc},
                field=field,
            ) from exc
        if turn is not None and turn >= n_model_turns:
            raise RatingJobError(
                _(
                    "%(field)s：没有第 %(turn)s 个模型回复（这段对话只有 %(n)d 个模型回复，"
                    "从 0 开始计）"
                )
                % {"field": field, "turn": turn, "n": n_model_turns},
                field=field,
            )
        if isinstance(value, str):
            raise RatingJobError(
                _("%(field)s：%(question)s 是自由文本题，不能设已知答案")
                % {"field": field, "question": question},
                field=field,
            )
        cleaned.append({"question": question, "turn": turn, "value": value})
    item, _created = GoldItem.objects.update_or_create(
        job=job, dialogue=dialogue, defaults={"purpose": purpose, "answers": cleaned}
    )
    return item


@transaction.atomic
def gold_pair_set(
    *,
    job: RatingJob,
    better: Dialogue,
    worse: Dialogue,
    purpose: str,
    questions: Sequence[str] | None = None,
) -> GoldItem:
    """A pairwise job's onboarding or gold pair: `better` is the side a careful rater chooses
    (ACUTE-Eval's onboarding shows a good dialogue against an obviously broken one), on every
    question of the job or on `questions` only."""
    if not job.is_pairwise:
        raise RatingJobError(_("job：只有成对比较任务有金标对"), field="job")
    if purpose not in GoldItem.Purpose.values:
        raise RatingJobError(
            _("purpose：必须是 gold（金标题）或 onboarding（入门筛选题），收到 %(purpose)r")
            % {"purpose": purpose},
            field="purpose",
        )
    if better.pk == worse.pk:
        raise RatingJobError(_("worse：两边不能是同一段对话"), field="worse")
    for field, dialogue in (("better", better), ("worse", worse)):
        if dialogue.campaign_id != job.campaign_id:
            raise RatingJobError(
                _("%(field)s：对话 %(id)s 不属于本任务的评测活动")
                % {"field": field, "id": dialogue.pk},
                field=field,
            )
        used = Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).filter(
            Q(dialogue=dialogue) | Q(dialogue_b=dialogue)
        )
        if used.exists():
            raise RatingJobError(
                _("%(field)s：对话 %(id)s 已作为正式条目分配给评分专家，不能再作金标题或入门筛选题")
                % {"field": field, "id": dialogue.pk},
                field=field,
            )
    keys = [q.key for q in comparative_questions(as_spec(job.rubric.spec))]
    chosen = list(questions) if questions else keys
    unknown = [key for key in chosen if key not in keys]
    if unknown:
        raise RatingJobError(
            _("questions：本任务没有这些问题：%(keys)s") % {"keys": "、".join(unknown)},
            field="questions",
        )
    item, _created = GoldItem.objects.update_or_create(
        job=job,
        dialogue=better,
        defaults={
            "dialogue_b": worse,
            "purpose": purpose,
            "answers": [{"question": key, "turn": None, "value": better.pk} for key in chosen],
        },
    )
    return item


@transaction.atomic
def gold_item_delete(*, job: RatingJob, item: GoldItem) -> None:
    """Remove a gold or onboarding item while no rater was given it: once given, the rater's
    accuracy is measured against its answers."""
    if item.job_id != job.pk:
        raise RatingJobError(_("item：条目 %(id)s 不属于这个任务") % {"id": item.pk}, field="item")
    given = Assignment.objects.filter(
        Q(dialogue_id=item.dialogue_id) | Q(dialogue_b_id=item.dialogue_id),
        job=job,
        kind__in=(Assignment.Kind.GOLD, Assignment.Kind.ONBOARDING),
    ).exclude(status=Assignment.Status.REVOKED)
    if given.exists():
        raise RatingJobError(
            _("item：对话 %(id)s 已分配给评分专家，评分准确率以它为准，不能删除")
            % {"id": item.dialogue_id},
            field="item",
        )
    item.delete()


@transaction.atomic
def job_quality_update(*, job: RatingJob, quality_settings: Mapping[str, Any]) -> RatingJob:
    """Change a draft job's quality settings; keys not given keep their value. Once a job is
    opened its gold and duplicate items are planned, so the settings stay as they were."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    if job.status != RatingJob.Status.DRAFT:
        raise RatingJobError(
            _("quality_settings：只有草稿状态的任务可以修改质量设置（当前为「%(status)s」）")
            % {"status": job.get_status_display()},
            field="quality_settings",
        )
    settings = QualitySettings.parse({**job.quality_settings, **quality_settings})
    if job.is_pairwise and settings.duplicate_rate:
        raise RatingJobError(
            _("quality_settings：成对比较中评分专家不会看到同一段对话两次，不能设重复题"),
            field="quality_settings",
        )
    job.quality_settings = settings.as_dict()
    job.save(update_fields=["quality_settings"])
    return job


@transaction.atomic
def job_update(
    *, job: RatingJob, name: str | None = None, deadline_hours: int | None = None
) -> RatingJob:
    """Rename a job or change its deadline (new assignments get the new deadline)."""
    if name is not None:
        job.name = _clean_name(name, exclude=job)
    if deadline_hours is not None:
        _check_deadline(deadline_hours)
        job.deadline_hours = deadline_hours
    job.save(update_fields=["name", "deadline_hours"])
    if job.vote_source_id is not None:
        # The votes' source is labelled with the job's name (exports and reports show it).
        VoteSource.objects.filter(pk=job.vote_source_id).update(label=job.name)
    return job


@transaction.atomic
def job_delete(*, job: RatingJob) -> None:
    """Delete a draft job; a job that was opened keeps its ratings (close it instead)."""
    if job.status != RatingJob.Status.DRAFT or job.assignments.exists():
        raise RatingJobError(_("status：只有还没有分配条目的草稿任务可以删除"), field="status")
    source = job.vote_source_id
    job.delete()
    if source is not None:
        VoteSource.objects.filter(pk=source).delete()
