"""Demo content: one user per role, the demo datasets, retrieval backends, two open campaigns
(a Chinese one, and a Japanese one whose crowdworker pages are always in Japanese), a study
already collected and rated (simulated raters), ready for a metric run and a report, and
demo-quality vectors for the Chinese and Japanese neural metrics (no packaged model covers them).

Idempotent: running it again changes nothing that exists (so `make demo` can run it every time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.db import transaction

from annotation.services import rating_import
from chat.models import Backend, Campaign, Dataset
from chat.services import backends as backend_services
from chat.services import campaigns as campaign_services
from chat.services import datasets as chat_services
from chat.services import dialogue_io
from core.access import Role, workspace_scope
from core.models import Membership, Workspace
from metrics.scorers.demo_vectors import save_encoder, train_ppmi_svd
from metrics.scorers.models import read_manifest
from metrics.scorers.text import text_profile
from metrics.selectors.preflight import local_models_dir

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo_data"

# (username, password, role or None for the staff admin). Demo-only credentials, printed on load.
DEMO_USERS = [
    ("admin", "admin-demo", None),
    ("researcher", "researcher-demo", Role.RESEARCHER),
    ("expert", "expert-demo", Role.EXPERT),
    ("expert2", "expert-demo", Role.EXPERT),
    ("expert3", "expert-demo", Role.EXPERT),
    ("worker", "worker-demo", Role.CROWDWORKER),
]

# (file, dataset name, skill, language)
DEMO_DATASETS = [
    ("zh_chitchat.jsonl", "演示·闲聊", "chitchat", "zh"),
    ("zh_knowledge.jsonl", "演示·知识对话", "knowledge", "zh"),
    ("zh_recommendation.jsonl", "演示·对话推荐", "recommendation", "zh"),
    ("zh_persona.jsonl", "演示·画像聊天", "persona", "zh"),
    ("en_chitchat.jsonl", "demo-en-chitchat", "chitchat", "en"),
    ("en_knowledge.jsonl", "demo-en-knowledge", "knowledge", "en"),
    ("ja_chitchat.jsonl", "デモ・雑談", "chitchat", "ja"),
    ("ja_knowledge.jsonl", "デモ・知識対話", "knowledge", "ja"),
    ("ja_recommendation.jsonl", "デモ・対話型推薦", "recommendation", "ja"),
    ("ja_persona.jsonl", "デモ・ペルソナ対話", "persona", "ja"),
]

DEMO_CAMPAIGN = "演示·知识对话采集"
# A study already collected and rated (by simulated raters: workspace/demo_data/
# make_rated_study.py says how), so a first report shows real structure at once.
RATED_STUDY = "演示·已评分的知识对话"
RATED_STUDY_DIALOGUES = "zh_rated_study_dialogues.jsonl"
RATED_STUDY_RATINGS = "zh_rated_study_ratings.csv"

# Three retrieval systems that differ in a way metrics and raters can see. All leave the
# dialogue's own sample out (else a static run over a demo dataset returns its gold reference).
# - 检索-BM25: the good one: BM25 over the datasets of the scenario's own skill, the query and
#   each candidate carrying their grounding, so the reply fits the knowledge/persona shown.
# - 检索-TFIDF: the weak baseline: TF-IDF over every dataset of the language, last turn only,
#   grounding ignored: fluent but often off-topic replies.
# - 检索-BM25-流式: the good one, streamed at a reading pace (a worker's view, previewed).
_GOOD = {
    "method": "bm25",
    "k1": 1.2,
    "b": 0.75,
    "dataset": "*",
    "same_skill": True,
    "use_grounding": True,
    "leave_one_out": True,
}
DEMO_BACKENDS: list[tuple[str, dict[str, object], str]] = [
    (
        "检索-TFIDF",
        {
            "method": "tfidf",
            "analyzer": "char",
            "ngram_range": [1, 2],
            "dataset": "*",
            "query_turns": 1,
            "leave_one_out": True,
        },
        "Weak baseline: TF-IDF over every demo dialogue of the language, last turn only, "
        "grounding ignored.",
    ),
    (
        "检索-BM25",
        _GOOD,
        "BM25 over the dialogues of the scenario's skill, matching its grounding too.",
    ),
    (
        "检索-BM25-流式",
        {**_GOOD, "stream_chars_per_s": 12},
        "The BM25 system streamed at about 12 characters a second, to preview what a worker sees.",
    ),
]
# The same two systems over the Japanese knowledge dialogues, for the Japanese campaign.
DEMO_BACKENDS_JA: list[tuple[str, dict[str, object]]] = [
    ("検索-TFIDF-ja", {"method": "tfidf", "analyzer": "char", "ngram_range": [1, 2]}),
    ("検索-BM25-ja", {"method": "bm25", "k1": 1.2, "b": 0.75}),
]
JAPANESE_CAMPAIGN = "デモ・日本語の知識対話の収集"
JAPANESE_INSTRUCTIONS = {
    "knowledge": {
        "ja": (
            "左側の知識と話題の流れに沿って、モデルと自然に会話してください。"
            "会話で使った知識にはチェックを付けてください。"
        ),
        "zh-hans": "请围绕左侧的知识与话题路径与模型自然地聊天，用过的知识请勾选。",
        "en": (
            "Chat naturally about the knowledge and topic path on the left; tick what you used."
        ),
    }
}
# The demo campaign's systems (the streamed one is for previews and single-system campaigns).
DEMO_CAMPAIGN_BACKENDS = ("检索-TFIDF", "检索-BM25")


@dataclass
class DemoSummary:
    users: list[tuple[str, str, str]] = field(default_factory=list)
    datasets: list[tuple[str, int]] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    campaign: Campaign | None = None
    japanese_campaign: Campaign | None = None
    rated_study: Campaign | None = None


def _ensure_user(username: str, password: str, role: Role | None) -> User:
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        if role is None:
            user.is_staff = user.is_superuser = True
        user.save()
        if role is not None:
            user.groups.add(Group.objects.get(name=role.value))
    return user


DEMO_WORKSPACE = "演示工作区"


def demo_workspace() -> Workspace:
    """Where the demo goes: a fresh deployment's only workspace while it holds no study yet
    (no switcher for a demo installation), else a workspace of its own, "演示工作区"."""
    loaded = Campaign._base_manager.filter(name=DEMO_CAMPAIGN).select_related("workspace").first()
    if loaded is not None:  # loaded before: load again into the same one (idempotent)
        return loaded.workspace
    workspaces = list(Workspace.objects.order_by("pk")[:2])
    if len(workspaces) == 1 and not _holds_studies(workspaces[0]):
        return workspaces[0]
    return Workspace.objects.get_or_create(name=DEMO_WORKSPACE)[0]


def _holds_studies(workspace: Workspace) -> bool:
    return any(
        model._base_manager.filter(workspace=workspace).exists()
        for model in (Dataset, Backend, Campaign)
    )


@transaction.atomic
def demo_load() -> DemoSummary:
    workspace = demo_workspace()
    with workspace_scope(workspace):
        return _demo_load(workspace)


def _demo_load(workspace: Workspace) -> DemoSummary:
    summary = DemoSummary()
    researcher = None
    for username, password, role in DEMO_USERS:
        user = _ensure_user(username, password, role)
        summary.users.append((username, password, role.value if role else "admin"))
        if role == Role.RESEARCHER:
            researcher = user
            Membership.objects.update_or_create(
                workspace=workspace, user=user, defaults={"role": Membership.Role.OWNER}
            )

    datasets = []
    for filename, name, skill, language in DEMO_DATASETS:
        dataset = Dataset.objects.filter(name=name).first()
        if dataset is None:
            with open(DEMO_DATA_DIR / filename, "rb") as fileobj:
                dataset = chat_services.dataset_import(
                    fileobj=fileobj,
                    name=name,
                    source_format=Dataset.Format.JSONL,
                    language=language,
                    skill=skill,
                    description="Demo data written for this project (CC0).",
                    created_by=researcher,
                )
        datasets.append(dataset)
        summary.datasets.append((dataset.name, dataset.sample_count))

    backends = []
    knowledge = next(d for d in datasets if d.name == "演示·知识对话")
    for name, config, description in DEMO_BACKENDS:
        backend = Backend.objects.filter(name=name).first()
        if backend is None:
            # The researchers' path, with its validation (a demo that skipped it could hold
            # configurations no researcher could enter).
            backend = backend_services.backend_create(
                name=name,
                adapter=Backend.Adapter.RETRIEVAL,
                config=config,
                description=description,
                created_by=researcher,
            )
        backends.append(backend)
        summary.backends.append(backend.name)
    campaign_backends = [b for b in backends if b.name in DEMO_CAMPAIGN_BACKENDS]

    campaign = Campaign.objects.filter(name=DEMO_CAMPAIGN).first()
    if campaign is None:
        campaign = campaign_services.campaign_create(
            name=DEMO_CAMPAIGN,
            mode=Campaign.Mode.INTERACTIVE,
            skills=["knowledge"],
            backends=campaign_backends,
            datasets=[knowledge],
            aliases=[f"模型 {letter}" for letter in "AB"[: len(campaign_backends)]],
            created_by=researcher,
            status=Campaign.Status.ACTIVE,
            max_turns=10,
            instructions={
                "knowledge": {
                    "zh-hans": "请围绕左侧的知识与话题路径与模型自然地聊天，用过的知识请勾选。",
                    "en": (
                        "Chat naturally about the knowledge and topic path on the left; "
                        "tick what you used."
                    ),
                }
            },
        )
    summary.campaign = campaign
    summary.japanese_campaign = _japanese_campaign(datasets, researcher, summary)
    summary.rated_study = _rated_study(researcher)
    return summary


# Languages whose neural metrics have no packaged model (the packaged all-MiniLM-L6-v2 is
# English): the demo trains demo-quality vectors for them on its own datasets (decision 59).
DEMO_MODEL_LANGUAGES = ("zh", "ja")


def demo_model_dir(language: str) -> Path:
    """Where the demo's vectors for ``language`` live; the name carries the "demo quality"
    label into every metric signature and the run form's list of offline models."""
    return local_models_dir() / f"demo-quality-{language}-ppmi-svd"


def demo_models_train() -> list[Path]:
    """Train (once) the demo-quality vectors of each language in ``DEMO_MODEL_LANGUAGES`` on the
    text of that language's demo datasets, tokenised as the metrics tokenise it (characters
    for Chinese and Japanese), so the MSDE neural metrics run on a machine with no model."""
    written = []
    for language in DEMO_MODEL_LANGUAGES:
        directory = demo_model_dir(language)
        if read_manifest(directory) is not None:
            written.append(directory)
            continue
        texts: list[str] = []
        for filename, _name, _skill, file_language in DEMO_DATASETS:
            if file_language != language:
                continue
            for line in (DEMO_DATA_DIR / filename).read_text(encoding="utf-8").splitlines():
                sample = json.loads(line)
                texts += [*sample.get("context", []), *sample.get("references", [])]
        tokens = text_profile(language).tokenize_all(texts)
        vocab, vectors = train_ppmi_svd(tokens)
        save_encoder(
            directory,
            vocab,
            vectors,
            languages=[language],
            description=(
                f"Demo quality: PPMI+SVD vectors learned from the {len(texts)} utterances of "
                f"the '{language}' demo datasets at load time; not for published figures."
            ),
        )
        written.append(directory)
    return written


def _rated_study(researcher: User | None) -> Campaign:
    """Four systems' replies to the knowledge scenarios and three simulated raters' MSDE ratings,
    imported through the researchers' import services (their validation included)."""
    campaign = Campaign.objects.filter(name=RATED_STUDY).first()
    if campaign is not None:
        return campaign
    with open(DEMO_DATA_DIR / RATED_STUDY_DIALOGUES, "rb") as dialogues:
        # Static answers: each dialogue is a scenario's context plus one system reply, the only
        # turn a metric run scores (24 per system, each with the scenario's reference).
        result = dialogue_io.dialogues_import(
            fileobj=dialogues,
            campaign_name=RATED_STUDY,
            created_by=researcher,
            static_answers=True,
        )
    with open(DEMO_DATA_DIR / RATED_STUDY_RATINGS, "rb") as ratings:
        rating_import.ratings_import(
            fileobj=ratings, campaign_name=RATED_STUDY, rubric_ref="msde", created_by=researcher
        )
    return result.campaign


def _japanese_campaign(
    datasets: list[Dataset], researcher: User | None, summary: DemoSummary
) -> Campaign:
    """A knowledge-dialogue campaign in Japanese: Japanese scenarios, two retrieval systems over
    the Japanese dialogues, and crowdworker pages fixed to Japanese."""
    knowledge = next(d for d in datasets if d.name == "デモ・知識対話")
    backends = []
    for name, config in DEMO_BACKENDS_JA:
        backend = Backend.objects.filter(name=name).first()
        if backend is None:
            backend = backend_services.backend_create(
                name=name,
                adapter=Backend.Adapter.RETRIEVAL,
                config={**config, "dataset": knowledge.name},
                description="Offline retrieval baseline over the Japanese demo dialogues.",
                created_by=researcher,
            )
        backends.append(backend)
        summary.backends.append(backend.name)
    campaign = Campaign.objects.filter(name=JAPANESE_CAMPAIGN).first()
    if campaign is None:
        # Blank aliases become モデル A, モデル B: the campaign's fixed language.
        campaign = campaign_services.campaign_create(
            name=JAPANESE_CAMPAIGN,
            mode=Campaign.Mode.INTERACTIVE,
            skills=["knowledge"],
            backends=backends,
            datasets=[knowledge],
            created_by=researcher,
            status=Campaign.Status.ACTIVE,
            max_turns=10,
            interface_language="ja",
            instructions=JAPANESE_INSTRUCTIONS,
        )
    return campaign
