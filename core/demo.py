"""Demo content: one user per role, the demo datasets, two retrieval backends, one open campaign.

Idempotent: running it again changes nothing that exists (so `make demo` can run it every time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.db import transaction

from chat.models import Backend, Campaign, CampaignBackend, Dataset, Skill
from chat.services import datasets as chat_services
from core.access import Role

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
]

# Two differently configured retrieval systems, so a study has something to compare offline.
DEMO_BACKENDS = [
    ("检索-TFIDF", {"method": "tfidf", "analyzer": "char", "ngram_range": [1, 2]}),
    ("检索-BM25", {"method": "bm25", "k1": 1.2, "b": 0.75}),
]


@dataclass
class DemoSummary:
    users: list[tuple[str, str, str]] = field(default_factory=list)
    datasets: list[tuple[str, int]] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    campaign: Campaign | None = None


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


@transaction.atomic
def demo_load() -> DemoSummary:
    summary = DemoSummary()
    researcher = None
    for username, password, role in DEMO_USERS:
        user = _ensure_user(username, password, role)
        summary.users.append((username, password, role.value if role else "admin"))
        if role == Role.RESEARCHER:
            researcher = user

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
    for name, config in DEMO_BACKENDS:
        backend, _ = Backend.objects.get_or_create(
            name=name,
            defaults={
                "adapter": Backend.Adapter.RETRIEVAL,
                "config": {**config, "dataset": knowledge.name},
                "description": "Offline retrieval baseline over the demo knowledge dialogues.",
                "created_by": researcher,
            },
        )
        backends.append(backend)
        summary.backends.append(backend.name)

    campaign, created = Campaign.objects.get_or_create(
        name="演示·知识对话采集",
        defaults={
            "mode": Campaign.Mode.INTERACTIVE,
            "status": Campaign.Status.ACTIVE,
            "max_turns": 10,
            "instructions": {
                "knowledge": {
                    "zh-hans": "请围绕左侧的知识与话题路径与模型自然地聊天，用过的知识请勾选。",
                    "en": (
                        "Chat naturally about the knowledge and topic path on the left; "
                        "tick what you used."
                    ),
                }
            },
            "created_by": researcher,
        },
    )
    if created:
        campaign.skills.add(Skill.objects.get(key="knowledge"))
        campaign.datasets.add(knowledge)
        for letter, backend in zip("AB", backends, strict=False):
            CampaignBackend.objects.create(
                campaign=campaign, backend=backend, alias=f"模型 {letter}"
            )
    summary.campaign = campaign
    return summary
