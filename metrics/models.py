"""Metric runs and scores, correlation reports."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from chat.models import Backend, Campaign, Dataset, Dialogue, Skill, StaticRun, Turn
from core.models import Job, Leased, WorkspaceOwned
from core.models import JobStatus as JobStatus  # one status for every job, re-exported


class Level(models.TextChoices):
    TURN = "turn", _("轮次")
    DIALOGUE = "dialogue", _("对话")
    SYSTEM = "system", _("系统")


class MetricRun(Job, WorkspaceOwned):
    """A scoring job over a campaign's dialogues, or a set of imported external scores."""

    workspace_parent = "campaign"
    workspace_links = ("campaign", "static_run")

    class Source(models.TextChoices):
        COMPUTED = "computed", _("计算")
        IMPORTED = "imported", _("导入")

    class Target(models.TextChoices):
        CAMPAIGN = "campaign", _("评测活动的对话")
        STATIC_RUN = "static_run", _("静态生成任务")
        UPLOAD = "upload", _("上传的回复文件")

    name = models.CharField(max_length=160)
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="metric_runs")
    # Target: the campaign's dialogues, or only those of one static run.
    static_run = models.ForeignKey(
        StaticRun, null=True, blank=True, on_delete=models.CASCADE, related_name="metric_runs"
    )
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.COMPUTED)
    # What was scored; an upload's answers live in a campaign of their own (mode static).
    target = models.CharField(max_length=12, choices=Target.choices, default=Target.CAMPAIGN)
    # Campaign targets: accepted dialogues only (default), or submitted ones too.
    include_submitted = models.BooleanField(default=False)
    metrics = models.JSONField(default=list)  # metric names from the registry
    metric_settings = models.JSONField(default=dict, blank=True)  # tokenizer, model paths, ...
    signatures = models.JSONField(default=dict, blank=True)  # metric -> settings signature string
    unavailable = models.JSONField(default=dict, blank=True)  # metric -> "unavailable: <why>"

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return self.name


class MetricScore(models.Model):
    """One score per (run, metric, unit); the unit is a turn, a dialogue or a system (backend)."""

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="scores")
    metric = models.CharField(max_length=80)
    level = models.CharField(max_length=10, choices=Level)
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    dialogue = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    backend = models.ForeignKey(
        Backend, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Grouping key for system-level scores (a skill or dataset), "" when ungrouped.
    group = models.CharField(max_length=80, blank=True)
    value = models.FloatField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(level="turn", turn__isnull=False)
                    | Q(level="dialogue", dialogue__isnull=False, turn__isnull=True)
                    | Q(
                        level="system",
                        backend__isnull=False,
                        dialogue__isnull=True,
                        turn__isnull=True,
                    )
                ),
                name="metricscore_unit_matches_level",
            ),
            models.UniqueConstraint(
                fields=["run", "metric", "turn"],
                condition=Q(level="turn"),
                name="metricscore_unique_turn",
            ),
            models.UniqueConstraint(
                fields=["run", "metric", "dialogue"],
                condition=Q(level="dialogue"),
                name="metricscore_unique_dialogue",
            ),
            models.UniqueConstraint(
                fields=["run", "metric", "backend", "group"],
                condition=Q(level="system"),
                name="metricscore_unique_system",
            ),
        ]
        indexes = [models.Index(fields=["run", "metric", "level"])]

    def __str__(self) -> str:
        return f"{self.metric}@{self.level}={self.value:.4g}"


class MetricRunChunk(Leased):
    """One unit of a run's work: one system batch (backend × skill) × one metric family.

    Corpus values (and CIDEr-D's idf) are defined over a whole system batch, so a batch is never
    split. ``skill`` None is the backend's batch over all skills, which only yields the system
    scores of group "". A chunk is done exactly once (compare-and-set on ``status``), which is
    what keeps ``MetricRun.progress_done`` exact when a crashed chunk is run again. A chunk is
    the leased unit of a metric run (the worker scoring it renews its lease; the sweeper sends an
    abandoned chunk again).
    """

    run = models.ForeignKey(MetricRun, on_delete=models.CASCADE, related_name="chunks")
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="+")
    skill = models.ForeignKey(Skill, null=True, blank=True, on_delete=models.CASCADE)
    family = models.CharField(max_length=40)
    metrics = models.JSONField(default=list)
    responses = models.PositiveIntegerField(default=0)
    signatures = models.JSONField(default=dict, blank=True)
    unavailable = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "backend", "skill", "family"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "backend", "skill", "family"],
                name="metricrunchunk_unique_batch",
            ),
            models.UniqueConstraint(
                fields=["run", "backend", "family"],
                condition=Q(skill__isnull=True),
                name="metricrunchunk_unique_all_skills",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.backend_id}/{self.skill_id or '*'}/{self.family}"


class Report(Job, WorkspaceOwned):
    """A correlation study: its configuration, status, results (JSON) and generated files."""

    name = models.CharField(max_length=160)
    config = models.JSONField(default=dict)
    results = models.JSONField(default=dict, blank=True)
    # Versions of rubrics and metric implementations used, so the report can be re-run.
    provenance = models.JSONField(default=dict, blank=True)
    files_dir = models.CharField(max_length=300, blank=True)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return self.name


class TrainedDiscriminator(Job, WorkspaceOwned):
    """A learned response discriminator (seed 003) trained on a dataset's context-response pairs.

    Saved versions are usable as an unreferenced metric; ``path`` is the saved model directory.
    """

    workspace_parent = "dataset"
    workspace_links = ("dataset",)

    name = models.CharField(max_length=160, unique=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    config = models.JSONField(default=dict, blank=True)  # architecture preset and training settings
    results = models.JSONField(default=dict, blank=True)  # accuracy, precision, recall, F1
    path = models.CharField(max_length=300, blank=True)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return self.name


class FollowupSelection(Job, WorkspaceOwned):
    """FED-Selected / FED-Cond-Selected item selection (seed 004 §3) against a rating job.

    ``results`` holds the 2-fold cross-validated choice (items per fold, held-out Spearman and
    Pearson) and the items chosen on all rated dialogues, which the ``*-selected`` metrics use.
    """

    workspace_parent = "job"
    workspace_links = ("job",)

    name = models.CharField(max_length=160)
    job = models.ForeignKey(
        "annotation.RatingJob", on_delete=models.CASCADE, related_name="followup_selections"
    )
    dimension = models.CharField(max_length=60)  # a rubric question key, or "overall"
    model_path = models.CharField(max_length=300)
    language = models.CharField(max_length=5)
    conditional = models.BooleanField(default=True)  # FED-Cond (True) or FED (False)
    criterion = models.CharField(max_length=10, default="spearman")
    max_items = models.PositiveSmallIntegerField(null=True, blank=True)
    seed = models.IntegerField(default=0)
    # The scorer's inputs, as a metric run's settings followup_layout, followup_normalisation and
    # followup_max_length (same defaults): a ``*-selected`` run takes them from its selection.
    layout = models.CharField(max_length=3, default="fed")
    normalisation = models.CharField(max_length=4, default="mean")
    max_length = models.PositiveIntegerField(null=True, blank=True)  # None: the model's limit
    results = models.JSONField(default=dict, blank=True)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return self.name
