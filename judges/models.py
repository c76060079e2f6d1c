"""LLM judges: a registered backend + a rubric + a mode + sampling, versioned; their answers.

A judge's run *is* a :class:`metrics.models.MetricRun` (its scores are ``MetricScore`` rows named
``judge:<key>-v<version>:<question>``), so reports correlate judges like any metric. This app
sits above ``metrics``; ``metrics`` never imports it (the judge registers its chunk handler).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotation.models import Rubric
from chat.models import Backend, Dialogue, Turn, VoteSource
from core.models import Versioned, WorkspaceOwned
from metrics.models import MetricRun, MetricRunChunk


class Judge(Versioned, WorkspaceOwned):
    workspace_parent = "backend"
    workspace_links = ("backend", "rubric")

    class Mode(models.TextChoices):
        DIRECT = "direct", _("直接打分")
        PAIRWISE = "pairwise", _("成对比较")
        REFERENCE = "reference", _("参考引导打分")

    class Structured(models.TextChoices):
        AUTO = "auto", _("自动（支持时用 JSON Schema）")
        JSON_SCHEMA = "json_schema", _("JSON Schema（response_format）")
        JSON_OBJECT = "json_object", _("JSON 对象（response_format）")
        GUIDED_JSON = "guided_json", _("vLLM 引导解码（guided_json）")
        NONE = "none", _("不使用（仅提示词要求 JSON）")

    key = models.SlugField(max_length=40)
    name = models.CharField(max_length=160)
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="judges")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="judges")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.DIRECT)
    # temperature, max_tokens, n, aggregate (mean|majority), geval, top_logprobs, seed,
    # rate_limit_per_s; checked by judges.services.config.check_sampling.
    sampling = models.JSONField(default=dict, blank=True)
    structured = models.CharField(
        max_length=12, choices=Structured.choices, default=Structured.AUTO
    )
    max_attempts = models.PositiveSmallIntegerField(default=3)
    # Per language ("zh", "en", "ja"): a template overriding the generated one.
    prompt_templates = models.JSONField(default=dict, blank=True)
    # Prices per million tokens (any currency; shown as-is) for the cost estimate.
    price_input = models.FloatField(default=0.0)
    price_output = models.FloatField(default=0.0)
    description = models.TextField(blank=True)

    class Meta(Versioned.Meta):
        constraints = [
            *Versioned.Meta.constraints,
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="judge_attempts_ge_1"),
        ]

    @property
    def metric_prefix(self) -> str:
        return f"judge:{self.key}-v{self.version}"


class JudgeRun(models.Model):
    """The judge side of a metric run: estimate before, actual traffic after."""

    metric_run = models.OneToOneField(
        MetricRun, on_delete=models.CASCADE, primary_key=True, related_name="judge_run"
    )
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="runs")
    # Pairwise mode: where the run's verdicts are written as votes (``chat.Vote``, one per order
    # asked). Deleting the run deletes the source and so its votes (``judges/apps.py``'s
    # post_delete hook: the link points this way because ``chat`` never imports ``judges``).
    vote_source = models.OneToOneField(
        VoteSource,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="judge_run",
    )
    estimate = models.JSONField(default=dict, blank=True)
    requests_sent = models.PositiveIntegerField(default=0)
    cache_hits = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    notes = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.judge} · run {self.metric_run_id}"

    @property
    def cost(self) -> float:
        return (
            self.prompt_tokens * self.judge.price_input
            + self.completion_tokens * self.judge.price_output
        ) / 1_000_000


class JudgeChunk(models.Model):
    """The units one chunk of a judge run covers, fixed when the run is created (so a resume
    judges the same dialogues even if the campaign gained some since)."""

    chunk = models.OneToOneField(
        MetricRunChunk, on_delete=models.CASCADE, primary_key=True, related_name="judge_part"
    )
    dialogues = models.JSONField(default=list)  # dialogue ids (direct / reference)
    pairs = models.JSONField(default=list)  # [[dialogue id 1, dialogue id 2], …] (pairwise)
    # Pairwise, parallel to `pairs`: the [item, turn] keys the pair's votes are written under —
    # [[scenario id, 1]] for a same-scenario pair, the human votes' (item, turn) for a voted one.
    pair_items = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"chunk {self.chunk_id}: {len(self.dialogues)} dialogues, {len(self.pairs)} pairs"


class JudgeAnswer(models.Model):
    """One judged request's outcome (per unit, order and sample), with the raw reply."""

    class Status(models.TextChoices):
        OK = "ok", _("已解析")
        INCOMPLETE = "incomplete", _("部分解析")
        TRUNCATED = "truncated", _("被截断")
        REFUSED = "refused", _("拒绝回答")
        UNPARSEABLE = "unparseable", _("无法解析")
        ERROR = "error", _("调用失败")

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="judge_answers")
    unit_key = models.CharField(max_length=80)
    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="+")
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    other_dialogue = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Pairwise: "ab" shows `dialogue` as A, "ba" shows it as B. Empty otherwise.
    order = models.CharField(max_length=2, blank=True)
    sample = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices)
    attempts = models.PositiveSmallIntegerField(default=1)
    values = models.JSONField(default=dict, blank=True)  # question key → value / verdict
    geval = models.JSONField(default=dict, blank=True)  # question key → weighted score
    rationale = models.TextField(blank=True)
    raw = models.TextField(blank=True)
    problems = models.JSONField(default=list, blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    prompt_hash = models.CharField(max_length=64)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dialogue_id", "turn_id", "order", "sample"]
        constraints = [
            models.UniqueConstraint(fields=["run", "unit_key"], name="judgeanswer_unique_unit"),
        ]
        indexes = [models.Index(fields=["run", "dialogue"])]

    def __str__(self) -> str:
        return f"{self.unit_key}: {self.status}"


class JudgeCacheEntry(models.Model):
    """One model response, keyed by sha256 of (backend, model, prompt hash, parameters)."""

    key = models.CharField(max_length=64, unique=True)
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200, blank=True)
    prompt_hash = models.CharField(max_length=64)
    params = models.JSONField(default=dict)
    response = models.JSONField(default=dict)  # choices (text, finish_reason, logprobs), usage
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key[:12]
