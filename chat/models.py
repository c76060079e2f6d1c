"""Backends, datasets and scenarios, campaigns, dialogues and turns.

Live (interactive) and static dialogues share `Dialogue`/`Turn`: a static answer is a
single-turn dialogue whose system turn keeps the dataset's reference responses.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from core.i18n import pick_text
from core.json import UnicodeJSONEncoder
from core.models import Job, WorkspaceOwned, WorkspaceScoped


class Language(models.TextChoices):
    ZH = "zh", _("中文")
    EN = "en", "English"
    JA = "ja", "日本語"


#: A campaign's fixed crowdworker interface language; each language is named in its own script.
CAMPAIGN_LANGUAGE_CHOICES = [
    ("", _("由浏览器决定")),
    ("zh-hans", "简体中文"),
    ("en", "English"),
    ("ja", "日本語"),
]


class Skill(models.Model):
    """A dialogue skill. MSDE's four are created by a migration; researchers may add more."""

    key = models.SlugField(max_length=40, unique=True)
    name_zh = models.CharField(max_length=80)
    name_en = models.CharField(max_length=80)
    name_ja = models.CharField(max_length=80, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.key

    def name_in(self, language: str | None = None) -> str:
        """The skill's name in an interface language (the active one by default)."""
        return pick_text(
            {"zh-hans": self.name_zh, "en": self.name_en, "ja": self.name_ja}, language
        )

    @property
    def display_name(self) -> str:
        """The name in the page's language, for templates."""
        return self.name_in()

    @property
    def label(self) -> str:
        """The skill's name in the active interface language (with `pick_text`'s fallbacks)."""
        return self.name_in()


class Backend(WorkspaceOwned):
    """A registered model. Secrets are never stored: only the *name* of an env variable."""

    class Adapter(models.TextChoices):
        OPENAI = "openai", _("OpenAI 兼容接口")
        HTTP = "http", _("HTTP JSON 协议")
        TRANSFORMERS = "transformers", _("本地 transformers 模型")
        RETRIEVAL = "retrieval", _("检索（TF-IDF/BM25）")
        # A system whose dialogues were imported; it cannot be called.
        IMPORTED = "imported", _("导入的系统（不可调用）")

    name = models.CharField(max_length=120, unique=True)
    adapter = models.CharField(max_length=20, choices=Adapter.choices)
    # URL, model name, generation parameters, per-skill prompt templates, retrieval settings.
    config = models.JSONField(default=dict, blank=True)
    api_key_env = models.CharField(
        max_length=120,
        blank=True,
        help_text=_("Name of the environment variable holding the API key (never the key itself)."),
    )
    concurrency_limit = models.PositiveIntegerField(default=4)
    timeout_s = models.FloatField(default=60.0)
    active = models.BooleanField(default=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(concurrency_limit__gte=1), name="backend_concurrency_ge_1"
            ),
            models.CheckConstraint(condition=Q(timeout_s__gt=0), name="backend_timeout_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class Dataset(WorkspaceOwned):
    """A reference corpus; its samples are scenarios for live chat and contexts for static runs."""

    class Format(models.TextChoices):
        JSONL = "jsonl", _("通用 JSONL")
        LIC2021 = "lic2021", "LIC 2021"
        LCCC = "lccc", "LCCC"
        DUCONV = "duconv", "DuConv"
        DURECDIAL = "durecdial", "DuRecDial"
        CPC = "cpc", "CPC / DuLeMon"

    name = models.CharField(max_length=120, unique=True)
    # None when the samples carry several skills (a LIC 2021 file mixing subtracks).
    skill = models.ForeignKey(Skill, null=True, blank=True, on_delete=models.PROTECT)
    language = models.CharField(max_length=5, choices=Language)
    source_format = models.CharField(max_length=20, choices=Format.choices)
    description = models.TextField(blank=True)
    sample_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name


class Sample(WorkspaceScoped):
    """One scenario/context: context turns, reference response(s) and grounding."""

    workspace_lookup = "dataset__workspace"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="samples")
    index = models.PositiveIntegerField(help_text=_("Position in the imported file (0-based)."))
    external_id = models.CharField(max_length=200)
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT)
    context = models.JSONField(default=list, blank=True, encoder=UnicodeJSONEncoder)
    references = models.JSONField(default=list, blank=True, encoder=UnicodeJSONEncoder)
    # {"knowledge": [[s, p, o], ...], "goal": [...], "user_profile": {...},
    #  "persona": {"bot": [...], "user": [...]}, "situation": "..."}
    grounding = models.JSONField(default=dict, blank=True, encoder=UnicodeJSONEncoder)
    # Free labels from the imported file, e.g. {"topic": "旅游"} (the topic campaign openings
    # are drawn to cover, see `chat.services.openings`).
    metadata = models.JSONField(default=dict, blank=True, encoder=UnicodeJSONEncoder)

    class Meta:
        ordering = ["dataset", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "external_id"], name="sample_unique_external_id"
            ),
            models.UniqueConstraint(fields=["dataset", "index"], name="sample_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}#{self.external_id}"


def _new_token() -> str:
    return secrets.token_urlsafe(18)


# Completion and resume codes are read off a screen and typed by hand: upper case, and no
# look-alikes (no I, L or 1; no O or 0).
COMPLETION_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
COMPLETION_CODE_LENGTH = 8


def new_completion_code() -> str:
    return "".join(secrets.choice(COMPLETION_CODE_ALPHABET) for _ in range(COMPLETION_CODE_LENGTH))


def new_resume_code() -> str:
    """The code a worker gives to resume in another browser (same alphabet as completion codes)."""
    return new_completion_code()


def default_acceptability() -> dict:
    """Checks a worker's utterance must pass before it is sent (`chat.services.acceptability`).

    - `min_chars`: minimum length in characters for Chinese and Japanese text (spaces ignored);
    - `min_words`: minimum length in words for English text;
    - `reject_all_caps`: refuse Latin text written in capitals only (from 6 letters on);
    - `reject_repeats` / `repeat_similarity`: refuse a copy of an earlier turn of the dialogue,
      exact after normalisation or at least this similar (0–1, difflib ratio);
    - `reject_grounding_copy` / `grounding_copy_chars`: refuse a run of this many consecutive
      characters copied from one grounding item (the one threshold; 0 turns the check off);
      entity names (triple subjects and objects that are names, topic-path entries) never count;
    - `safety_words`: words that may not appear (case-insensitive, NFKC-normalised);
    - `flag_threshold`: refused utterances after which the worker is flagged (0 = never).
    """
    return {
        "min_chars": 4,
        "min_words": 3,
        "reject_all_caps": True,
        "reject_repeats": True,
        "repeat_similarity": 0.9,
        "reject_grounding_copy": True,
        "grounding_copy_chars": 20,
        "safety_words": [],
        "flag_threshold": 5,
    }


class Campaign(WorkspaceOwned):
    """A study: which backends talk about which scenarios, how much, and who takes part."""

    class Mode(models.TextChoices):
        INTERACTIVE = "interactive", _("交互采集")
        STATIC = "static", _("静态生成")
        IMPORTED = "imported", _("导入")
        # Two blind systems answer each utterance side by side; the worker votes (issue 27).
        SIDE_BY_SIDE = "side_by_side", _("并排对比")

    class VoteTiming(models.TextChoices):
        TURN = "turn", _("每轮投票")
        END = "end", _("结束时投票一次")

    class Pairing(models.TextChoices):
        UNIFORM = "uniform", _("均匀（各对次数均衡）")
        ADAPTIVE = "adaptive", _("自适应（Chatbot Arena 主动采样）")

    class Status(models.TextChoices):
        DRAFT = "draft", _("草稿")
        ACTIVE = "active", _("进行中")
        CLOSED = "closed", _("已结束")

    name = models.CharField(max_length=160, unique=True)
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.INTERACTIVE)
    # An imported campaign of static answers (made elsewhere by a static run): each dialogue is
    # a dataset context, user and system turns alike, plus ONE model reply, its last turn. Only
    # that reply is the system's, as in a static campaign (see `answers_are_last_turns`).
    static_answers = models.BooleanField(default=False)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    skills = models.ManyToManyField(Skill, blank=True, related_name="campaigns")
    backends = models.ManyToManyField(Backend, through="CampaignBackend", related_name="campaigns")
    datasets = models.ManyToManyField(Dataset, blank=True, related_name="campaigns")
    quota_per_cell = models.PositiveIntegerField(
        default=0,
        help_text=_("Dialogues to collect per (backend, skill); 0 = every scenario once."),
    )
    max_turns = models.PositiveSmallIntegerField(default=10)  # MSDE: at most 10 turns
    min_turns = models.PositiveSmallIntegerField(default=1)
    instructions = models.JSONField(
        default=dict, blank=True
    )  # {skill: {"zh-hans": ..., "en": ..., "ja": ...}}
    # The crowdworker interface language of this campaign's pages ("" = the worker's choice or
    # browser); a Japanese study shows Japanese pages whatever the worker's browser says.
    interface_language = models.CharField(
        max_length=10, blank=True, default="", choices=CAMPAIGN_LANGUAGE_CHOICES
    )
    rate_while_chatting = models.BooleanField(default=False)
    per_worker_cap = models.PositiveIntegerField(default=0, help_text=_("0 = no cap"))
    reservation_timeout_minutes = models.PositiveIntegerField(default=30)
    invite_token = models.CharField(max_length=40, unique=True, default=_new_token)
    completion_code = models.CharField(max_length=40, default=new_completion_code)
    completion_url = models.URLField(blank=True)
    # A crowdworker's login session ends this long after joining (researchers' last longer).
    worker_session_hours = models.PositiveSmallIntegerField(
        default=24, help_text=_("Hours a crowdworker stays logged in after joining (1–720).")
    )
    acceptability = models.JSONField(default=default_acceptability, blank=True)
    # Pairwise votes whose compared replies contain one of these words (or a compared system's
    # name) are flagged as identity leaks; empty = the default list (chat.services.identity).
    identity_words = models.JSONField(default=list, blank=True, encoder=UnicodeJSONEncoder)
    # Seed 001: every dialogue opens with a first user turn drawn from this dataset, the drawn
    # set covering all its topics (`CampaignOpening`; None = the worker writes the opening).
    opening_dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    opening_count = models.PositiveSmallIntegerField(default=20)
    opening_seed = models.IntegerField(default=0)
    # Side-by-side mode: when the worker votes, whether the systems' names are shown after the
    # vote (Chatbot Arena) or never (the research default), and how the pair is chosen.
    vote_timing = models.CharField(
        max_length=10, choices=VoteTiming.choices, default=VoteTiming.TURN
    )
    reveal_after_vote = models.BooleanField(default=False)
    pairing = models.CharField(max_length=10, choices=Pairing.choices, default=Pairing.UNIFORM)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(max_turns__gte=1), name="campaign_max_turns_ge_1"),
            models.CheckConstraint(
                condition=Q(min_turns__lte=models.F("max_turns")), name="campaign_min_le_max_turns"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def answers_are_last_turns(self) -> bool:
        """Each dialogue is a context plus one model reply (its last turn): a static campaign,
        or an imported one of static answers. Scoring, rating and judging take only that reply."""
        return self.mode == self.Mode.STATIC or self.static_answers


class CampaignBackend(models.Model):
    """A backend's place in a campaign, with the blind alias workers and raters see."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="campaign_backends"
    )
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="+")
    alias = models.CharField(max_length=60)

    class Meta:
        ordering = ["campaign", "alias"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "backend"], name="campaign_backend_unique"),
            models.UniqueConstraint(fields=["campaign", "alias"], name="campaign_alias_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.alias}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        from core.access import require_same_workspace

        require_same_workspace(self.campaign, self.backend)
        super().save(*args, **kwargs)


class CampaignOpening(models.Model):
    """One opening utterance drawn for a campaign: a dataset sample and its topic, fixed at
    drawing time so the set is auditable (which samples, which topics, in what order)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="openings")
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    topic = models.CharField(max_length=200)
    text = models.TextField()

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "sample"], name="campaignopening_unique_sample"
            ),
            models.UniqueConstraint(
                fields=["campaign", "position"], name="campaignopening_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.position} ({self.topic})"


class Participant(models.Model):
    """A crowdworker in a campaign, possibly known by a crowdsourcing site's worker id."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participations"
    )
    external_id = models.CharField(max_length=120, blank=True)
    source = models.CharField(max_length=40, blank=True, help_text=_("e.g. prolific, mturk"))
    # Shown to the worker: joining again with this worker id from another browser needs it.
    resume_code = models.CharField(max_length=12, default=new_resume_code)
    flagged = models.BooleanField(default=False)
    violations = models.PositiveIntegerField(default=0)
    joined_at = models.DateTimeField(auto_now_add=True)
    # When the worker was first shown the completion code (all their work done).
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user"], name="participant_unique_user"),
            models.UniqueConstraint(
                fields=["campaign", "external_id"],
                condition=~Q(external_id=""),
                name="participant_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.external_id or self.user}"


class Dialogue(WorkspaceScoped):
    """Every conversation, live, static or imported."""

    workspace_lookup = "campaign__workspace"

    class AbandonReason(models.TextChoices):
        # The first four a worker chooses when skipping or abandoning a reserved scenario.
        UNCLEAR = "unclear", _("看不懂这个场景或任务")
        UNFAMILIAR = "unfamiliar", _("不熟悉这个话题")
        MODEL_BROKEN = "model_broken", _("模型回复有问题，无法继续")
        OTHER = "other", _("其他原因")
        TIMEOUT = "timeout", _("长时间未操作（超时）")
        FLAGGED = "flagged", _("工作者账号被标记")

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", _("进行中")
        SUBMITTED = "submitted", _("待审核")
        ACCEPTED = "accepted", _("已通过")
        REJECTED = "rejected", _("已退回")
        ABANDONED = "abandoned", _("已放弃")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="dialogues")
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="dialogues")
    scenario = models.ForeignKey(
        Sample, null=True, blank=True, on_delete=models.PROTECT, related_name="dialogues"
    )
    # The campaign opening this dialogue's first user turn is (None: the worker opened it).
    # (RESTRICT: an opening a dialogue used is never redrawn away, but deleting the campaign
    # deletes both.)
    opening = models.ForeignKey(
        CampaignOpening,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,
        related_name="dialogues",
    )
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT)
    language = models.CharField(max_length=5, choices=Language)
    worker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="dialogues",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.IN_PROGRESS)
    external_id = models.CharField(max_length=200, blank=True)
    # Grounding as shown to the worker (a copy: imported dialogues have no scenario sample).
    grounding = models.JSONField(default=dict, blank=True, encoder=UnicodeJSONEncoder)
    grounding_used = models.JSONField(default=list, blank=True)  # ticked grounding item ids
    recollection_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="recollections"
    )
    # Set by review when the dialogue is rejected, shown to the worker who re-collects it.
    rejection_reason = models.TextField(blank=True)
    # Why an abandoned dialogue was given back (the worker's choice, a timeout, a flag).
    abandon_reason = models.CharField(max_length=20, choices=AbandonReason.choices, blank=True)
    abandon_note = models.CharField(max_length=300, blank=True)
    static_run = models.ForeignKey(
        "StaticRun", null=True, blank=True, on_delete=models.CASCADE, related_name="dialogues"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Seed 001: the worker ended the chat early because it could not go on; the rubric's turns
    # it never reached score 0 (the multi-turn score's denominator is fixed).
    cannot_continue = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["campaign", "backend", "skill", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "external_id"],
                condition=~Q(external_id=""),
                name="dialogue_unique_external_id",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True) | ~Q(status="in_progress"),
                name="dialogue_in_progress_not_submitted",
            ),
        ]

    def __str__(self) -> str:
        return f"Dialogue {self.pk} ({self.campaign.name})"


class Turn(models.Model):
    """One utterance. System turns keep the rendered prompt and, in static mode, references."""

    class Speaker(models.TextChoices):
        USER = "user", _("用户")
        SYSTEM = "system", _("模型")

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()
    speaker = models.CharField(max_length=10, choices=Speaker.choices)
    text = models.TextField()
    references = models.JSONField(default=list, blank=True, encoder=UnicodeJSONEncoder)
    prompt = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dialogue", "index"]
        constraints = [
            models.UniqueConstraint(fields=["dialogue", "index"], name="turn_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.dialogue_id}:{self.index} {self.speaker}"


class SideBySide(WorkspaceScoped):
    """One side-by-side conversation: two dialogues (one per system) of the same scenario and
    worker with the same user turns, shown left and right. Which system is left was drawn at
    random when the conversation was created and is stored here (`left`, `right`); the page
    calls them A (left) and B (right), as `Vote.system_a` is the system shown left."""

    workspace_lookup = "campaign__workspace"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="side_by_sides")
    left = models.OneToOneField(Dialogue, on_delete=models.CASCADE, related_name="sbs_as_left")
    right = models.OneToOneField(Dialogue, on_delete=models.CASCADE, related_name="sbs_as_right")
    # True when the coin put the pair's higher backend id on the left (the draw, for audits).
    swapped = models.BooleanField(default=False)
    recollection_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="recollections"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=~Q(left=models.F("right")), name="sbs_two_dialogues")
        ]

    def __str__(self) -> str:
        return f"SideBySide {self.pk} ({self.left_id} | {self.right_id})"


class StaticRun(Job, WorkspaceScoped):
    """A static generation job: each backend answers every (or a seeded sample of N) context."""

    workspace_lookup = "campaign__workspace"
    workspace_links = ("campaign", "dataset")

    name = models.CharField(max_length=160)
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="static_runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="static_runs")
    backends = models.ManyToManyField(Backend, related_name="static_runs")
    sample_size = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Seeded random sample of N contexts; empty = all.")
    )
    seed = models.IntegerField(default=0)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return self.name


class StaticRunItem(models.Model):
    """One (backend, sample) of a static run: its answer dialogue, or the error it failed with."""

    class Status(models.TextChoices):
        PENDING = "pending", _("待生成")
        DONE = "done", _("已完成")
        FAILED = "failed", _("失败")

    run = models.ForeignKey(StaticRun, on_delete=models.CASCADE, related_name="items")
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="+")
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    dialogue = models.OneToOneField(
        Dialogue, null=True, blank=True, on_delete=models.SET_NULL, related_name="static_item"
    )
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "backend", "sample"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "backend", "sample"], name="staticrunitem_unique"
            ),
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.backend_id}/{self.sample_id} {self.status}"


class ReplyFailure(models.Model):
    """A live-chat reply the backend failed to give, with the backend's own message.

    The worker sees only a neutral message and a retry button (the detail can name the model or
    internal hosts and break the blind aliases); researchers see this record on the backend's
    and the campaign's pages. The detail is redacted of the API key, as the adapters do."""

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="reply_failures")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="reply_failures")
    kind = models.CharField(max_length=30)  # a BackendError kind
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"ReplyFailure {self.pk} ({self.kind}, dialogue {self.dialogue_id})"


class VoteSource(WorkspaceScoped):
    """Where a study's pairwise votes came from: one import, one judge run, one side-by-side
    campaign's collection or one pairwise rating job. Deleting the source deletes its votes
    (re-importing a file or re-running a judge replaces them as a whole)."""

    workspace_lookup = "campaign__workspace"
    workspace_links = ("campaign",)

    class Kind(models.TextChoices):
        IMPORT = "import", _("导入")
        JUDGE = "judge", _("LLM 评审")
        SIDE_BY_SIDE = "side_by_side", _("并排对话")
        PAIRWISE_JOB = "pairwise_job", _("成对评分任务")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="vote_sources")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # The file name of an import, the judge's metric prefix, the job's name.
    label = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.campaign.name}: {self.get_kind_display()} {self.label}".strip()


class Vote(WorkspaceScoped):
    """One pairwise preference: on an item (a question, a context, a scenario), system A (shown
    left or first) against system B, by a human or a judge, for one question and turn.

    Human and judge votes share this table so every analysis (Bradley–Terry, agreement, pairwise
    accuracy) works on either or both. A judge writes one vote per order it was asked in (A/B and
    B/A are two votes); the MT-Bench conservative rule (inconsistent orders → tie) is applied
    when the votes are read, not when they are stored (decision 73)."""

    workspace_lookup = "campaign__workspace"

    class Outcome(models.TextChoices):
        A = "a", _("A 更好")
        B = "b", _("B 更好")
        TIE = "tie", _("平局")
        BOTH_BAD = "both_bad", _("都不好")

    class VoterKind(models.TextChoices):
        HUMAN = "human", _("人工")
        JUDGE = "judge", _("LLM 评审")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="votes")
    source = models.ForeignKey(VoteSource, on_delete=models.CASCADE, related_name="votes")
    # The compared context: MT-Bench's question_id, a scenario, a side-by-side conversation.
    item = models.CharField(max_length=200)
    system_a = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="+")
    system_b = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="+")
    # The compared conversations, when the study has them (imported with the votes or collected).
    dialogue_a = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    dialogue_b = models.ForeignKey(
        Dialogue, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    voter_kind = models.CharField(max_length=10, choices=VoterKind.choices)
    # A person's pseudonym or imported name, or a judge's metric prefix ("judge:key-v1").
    voter = models.CharField(max_length=200)
    voter_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question = models.CharField(max_length=60, blank=True)  # a rubric question key; "" = overall
    turn = models.PositiveSmallIntegerField(default=1)
    reason = models.TextField(blank=True)
    # The identity word a compared reply contains ("" = none): such a vote is kept out of
    # rankings unless a report includes it.
    identity_leak = models.CharField(max_length=120, blank=True)
    # A vote kept out of the analyses by quality control (a rater below the onboarding
    # threshold), with why; a report may include it.
    excluded_reason = models.CharField(max_length=200, blank=True)
    voted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "pk"]
        indexes = [
            models.Index(fields=["campaign", "voter_kind"]),
            models.Index(fields=["source"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=~Q(system_a=models.F("system_b")), name="vote_distinct_systems"
            ),
            models.CheckConstraint(condition=Q(turn__gte=1), name="vote_turn_ge_1"),
        ]

    def __str__(self) -> str:
        return f"{self.item}: {self.system_a_id} vs {self.system_b_id} → {self.outcome}"
