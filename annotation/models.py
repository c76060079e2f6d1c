"""Rubrics, review of collected dialogues, rating jobs, assignments and ratings."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from chat.models import Campaign, Dialogue, StaticRun, Turn, VoteSource
from core.models import Job, Versioned, WorkspaceOwned, WorkspaceScoped


class Rubric(Versioned, WorkspaceOwned):
    """A versioned rubric spec (JSON). `questions[].key` is stable: exports and reports use it.

    A version that ratings refer to is immutable; edits create the next version.
    """

    key = models.SlugField(max_length=60)
    title = models.JSONField(default=dict, blank=True)  # {"zh-hans": ..., "en": ...}
    spec = models.JSONField()
    is_preset = models.BooleanField(default=False)
    # Presets belong to no workspace: every workspace reads them, none changes them.
    workspace = models.ForeignKey(
        "core.Workspace",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("工作区"),
    )
    workspace_null_is_global = True

    def needs_workspace(self) -> bool:
        return not self.is_preset

    class Meta(Versioned.Meta):
        constraints = [
            *Versioned.Meta.constraints,
            models.CheckConstraint(condition=Q(version__gte=1), name="rubric_version_ge_1"),
        ]


class Review(WorkspaceScoped):
    """An expert's quality-control decision on a submitted dialogue (MSDE §3.1)."""

    workspace_lookup = "dialogue__campaign__workspace"

    class Decision(models.TextChoices):
        ACCEPT = "accept", _("通过")
        REJECT = "reject", _("退回")

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews"
    )
    decision = models.CharField(max_length=10, choices=Decision.choices)
    reasons = models.JSONField(default=list, blank=True)  # reason template keys
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "reviewer"], name="review_unique_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.get_decision_display()} · dialogue {self.dialogue_id}"


class ReviewPolicy(models.Model):
    """How many experts review each submitted dialogue of a campaign, and how they decide.

    Without a policy a campaign uses one reviewer (the model defaults). MSDE §3.1 used 3 experts.
    """

    class Rule(models.TextChoices):
        # Every reviewer decides; accepted only if all accepted.
        ALL = "all", _("全体通过才通过")
        # Accepted once more than half accepted; rejected once a majority is out of reach.
        MAJORITY = "majority", _("多数通过")
        # Rejected at the first rejection; accepted once every reviewer accepted.
        ANY_REJECT = "any_reject", _("任一退回即退回")

    campaign = models.OneToOneField(
        Campaign, on_delete=models.CASCADE, related_name="review_policy"
    )
    reviewers_per_dialogue = models.PositiveSmallIntegerField(default=1)
    decision_rule = models.CharField(max_length=12, choices=Rule.choices, default=Rule.ANY_REJECT)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(reviewers_per_dialogue__gte=1), name="review_policy_reviewers_ge_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.reviewers_per_dialogue} × {self.decision_rule}"


class RatingJob(WorkspaceOwned):
    """Dialogues × rubric × raters per dialogue."""

    workspace_parent = "campaign"
    workspace_links = ("campaign", "rubric", "static_run")

    class Status(models.TextChoices):
        DRAFT = "draft", _("草稿")
        OPEN = "open", _("进行中")
        CLOSED = "closed", _("已结束")

    class Mode(models.TextChoices):
        # Each rater rates one dialogue on the rubric's scales.
        ABSOLUTE = "absolute", _("逐段评分")
        # ACUTE-Eval: two dialogues of one scenario side by side, a forced choice per question.
        PAIRWISE = "pairwise", _("成对比较")

    name = models.CharField(max_length=160, unique=True)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.ABSOLUTE)
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="rating_jobs")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="jobs")
    # Raters per item: per dialogue, or per pair of dialogues in a pairwise job.
    raters_per_dialogue = models.PositiveSmallIntegerField(default=3)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # Rater-quality settings (gold rate, duplicates, onboarding, time thresholds).
    quality_settings = models.JSONField(default=dict, blank=True)
    deadline_hours = models.PositiveIntegerField(default=72)
    # The dialogues: the campaign's accepted ones, or only those of one static run.
    static_run = models.ForeignKey(
        StaticRun, null=True, blank=True, on_delete=models.PROTECT, related_name="rating_jobs"
    )
    # A live job: crowdworkers rate each model reply of their own dialogue while chatting.
    is_live = models.BooleanField(default=False)
    # Seeds each rater's random order of items (with the job and rater ids).
    seed = models.IntegerField(default=0)
    # Seed 001 answers every prompt, then rates a random sample (500 of 1500 answers): when
    # `sample_size` is set, the job rates that many of each system's dialogues, drawn with
    # `sample_seed` when the job first opens and kept in `sample` (dialogue pks).
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    sample_seed = models.IntegerField(default=0)
    sample = models.JSONField(default=list, blank=True)
    # How the sample was drawn, recorded by the draw (issue 28, the prediction-powered estimate
    # needs it): {"kind": "random" | "stratified" | "unknown", "seed", "size", "population":
    # {dialogue pk: system} of the pool it was drawn from, "inclusion": {dialogue pk: π or null}}
    # (annotation.selectors.sampling). Empty: never drawn, or drawn before it was recorded.
    sample_design = models.JSONField(default=dict, blank=True)
    # Rounds (issue 28): the stopping rule chosen up front, {"kind": "width" | "separated" |
    # "budget", "target_width", "budget", "round_size", "alpha", "predictor", "question"}; empty
    # for a job that rates its whole sample at once. A job with rounds draws per system at random
    # (`sample_size` is the first round's size per system); later rounds add to `sample`.
    stopping_rule = models.JSONField(default=dict, blank=True)
    # A pairwise job may rate a seeded random subset of its comparisons (issue 28, the
    # prediction-powered Bradley–Terry ratings need it): `pair_sample_size` comparisons (scenario,
    # system pair), drawn uniformly without replacement with `sample_seed` when the job first
    # opens; `pair_design` records the draw: {"kind": "random", "seed", "size", "population":
    # [[dialogue, dialogue], ...] every comparison considered, "drawn": [[dialogue, dialogue],
    # ...], "inclusion": n/N} (annotation.selectors.sampling.pair_design).
    pair_sample_size = models.PositiveIntegerField(null=True, blank=True)
    pair_design = models.JSONField(default=dict, blank=True)
    # A pairwise job's answers are written as votes under this source (created with the job).
    vote_source = models.OneToOneField(
        VoteSource, null=True, blank=True, on_delete=models.SET_NULL, related_name="rating_job"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    @property
    def is_pairwise(self) -> bool:
        return self.mode == self.Mode.PAIRWISE

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_dialogue__gte=1), name="job_raters_ge_1"),
            models.UniqueConstraint(
                fields=["campaign"], condition=Q(is_live=True), name="job_one_live_per_campaign"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class RatingRound(models.Model):
    """One round of a job that runs in rounds: how many dialogues of each system it added to the
    sample, drawn uniformly without replacement from the system's unrated dialogues, and each
    system's cumulative inclusion probability after it, (n + m)/N, which every rated dialogue of
    that system carries from then on (metrics.analysis.ppi_planning, "Adaptive allocation")."""

    job = models.ForeignKey(RatingJob, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    counts = models.JSONField(default=dict)  # system → dialogues added
    population = models.JSONField(default=dict)  # system → N, its dialogues in the pool
    inclusion = models.JSONField(default=dict)  # system → cumulative π after this round
    dialogues = models.JSONField(default=list)  # the pks this round added
    # What the allocation projected and why it stopped or went on (status, widths).
    projection = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="ratinground_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} round {self.number}"


class JobRater(models.Model):
    """An expert in a job's rater pool, and whether they may rate (blocked, failed screening)."""

    class State(models.TextChoices):
        ACTIVE = "active", _("可评分")
        BLOCKED = "blocked", _("已屏蔽")
        FAILED_SCREENING = "failed_screening", _("未通过筛选")

    job = models.ForeignKey(RatingJob, on_delete=models.CASCADE, related_name="job_raters")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_job_memberships"
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "rater__username"]
        constraints = [
            models.UniqueConstraint(fields=["job", "rater"], name="jobrater_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.rater_id} ({self.state})"


class GoldItem(WorkspaceScoped):
    """A dialogue with known answers: mixed into the work as a gold item, or part of the
    onboarding (screening) set a rater must pass before real items.

    `answers` is a list of {"question": key, "turn": model-turn index or null, "value": v},
    validated against the job's rubric; the turn index counts the dialogue's model turns from 0.

    In a pairwise job the item is a pair: `dialogue` is the side the rater must choose (the
    better one) and `dialogue_b` the other (e.g. an obviously broken dialogue); `answers` lists
    {"question": key} for the questions checked.
    """

    workspace_lookup = "job__workspace"

    class Purpose(models.TextChoices):
        GOLD = "gold", _("金标题")
        ONBOARDING = "onboarding", _("入门筛选题")

    job = models.ForeignKey(RatingJob, on_delete=models.CASCADE, related_name="gold_items")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="+")
    dialogue_b = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    purpose = models.CharField(max_length=12, choices=Purpose.choices)
    answers = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "purpose", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "dialogue"], name="golditem_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.purpose} dialogue {self.dialogue_id}"


class Assignment(WorkspaceScoped):
    """Which rater rates which dialogue in a job, in which (random) order.

    In a pairwise job `dialogue` is the dialogue shown on the left and `dialogue_b` the one on
    the right (the order drawn for this rater and kept)."""

    workspace_lookup = "job__workspace"

    class Status(models.TextChoices):
        PENDING = "pending", _("待评")
        IN_PROGRESS = "in_progress", _("评分中")
        SUBMITTED = "submitted", _("已提交")
        EXPIRED = "expired", _("已过期")
        # Taken back from a blocked (or screened-out) rater; the item went back to the pool.
        REVOKED = "revoked", _("已收回")

    class Kind(models.TextChoices):
        REAL = "real", _("正式")
        GOLD = "gold", _("金标题")
        DUPLICATE = "duplicate", _("重复题")
        ONBOARDING = "onboarding", _("入门筛选")

    job = models.ForeignKey(RatingJob, on_delete=models.CASCADE, related_name="assignments")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="assignments")
    dialogue_b = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    status = models.CharField(max_length=15, choices=Status.choices, default=Status.PENDING)
    order = models.PositiveIntegerField(default=0)
    # Kept equal to `kind == gold` (older readers filter on it).
    is_gold = models.BooleanField(default=False)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.REAL)
    # A duplicate assignment repeats this (real) assignment's dialogue for self-consistency.
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="duplicates"
    )
    due_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rater", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "dialogue", "rater"],
                condition=~Q(kind="duplicate"),
                name="assignment_unique",
            ),
            models.UniqueConstraint(
                fields=["job", "dialogue", "rater"],
                condition=Q(kind="duplicate"),
                name="assignment_unique_duplicate",
            ),
            models.CheckConstraint(
                condition=Q(is_gold=True, kind="gold") | (Q(is_gold=False) & ~Q(kind="gold")),
                name="assignment_is_gold_is_kind",
            ),
            models.CheckConstraint(
                condition=Q(kind="duplicate", duplicate_of__isnull=False)
                | (~Q(kind="duplicate") & Q(duplicate_of__isnull=True)),
                name="assignment_duplicate_has_original",
            ),
            models.CheckConstraint(
                condition=~Q(dialogue_b=models.F("dialogue")), name="assignment_pair_distinct"
            ),
        ]
        indexes = [models.Index(fields=["job", "status", "kind"])]

    def __str__(self) -> str:
        return f"{self.job_id}: dialogue {self.dialogue_id} → rater {self.rater_id}"


class Rating(models.Model):
    """One answer: a question of the rubric, for the whole dialogue or one of its turns."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="ratings")
    question = models.SlugField(max_length=60)
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="ratings"
    )
    value = models.FloatField(null=True, blank=True)  # scale/likert/yes-no(1/0)/choice index
    text = models.TextField(blank=True)  # free-text questions
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # One rating per (assignment, question, turn); NULL turn = a dialogue-level question.
            models.UniqueConstraint(
                fields=["assignment", "question", "turn"],
                condition=Q(turn__isnull=False),
                name="rating_unique_turn_level",
            ),
            models.UniqueConstraint(
                fields=["assignment", "question"],
                condition=Q(turn__isnull=True),
                name="rating_unique_dialogue_level",
            ),
            models.CheckConstraint(
                condition=Q(value__isnull=False) | ~Q(text=""), name="rating_has_answer"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.question}={self.value if self.value is not None else self.text!r}"


class RatingImport(Job, WorkspaceOwned):
    workspace_parent = "campaign"
    workspace_links = ("campaign", "rubric")

    """A ratings file too large to import while the request waits, imported by a worker.

    The uploaded file is kept in ``data`` until the job ends (the worker that picks the job up
    again after a crash reads it from here), then emptied; ``rows`` is the number of data rows
    counted at upload. ``result`` holds the import's counts once done (ratings, dialogues,
    raters, new_raters, incomplete); ``error`` the refusal, naming the row and column.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    filename = models.CharField(max_length=255, blank=True)
    data = models.BinaryField(blank=True)
    rows = models.PositiveIntegerField(default=0)
    rating_job = models.ForeignKey(
        RatingJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    result = models.JSONField(default=dict, blank=True)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.filename or self.pk} → {self.campaign_id}/{self.rubric_id}"
