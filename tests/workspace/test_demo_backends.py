"""The demo's systems differ in quality on the demo contexts, visibly to metrics; one streams."""

from __future__ import annotations

import time

import pytest

from chat.backends.base import BackendSpec
from chat.backends.retrieval import RetrievalAdapter
from chat.models import Backend, Dataset, Sample
from chat.services.generation import build_request, complete_reply_sync
from metrics.scorers.registry import score
from workspace.demo import demo_load

pytestmark = pytest.mark.django_db

DATASETS = ["演示·知识对话", "演示·画像聊天", "演示·对话推荐", "演示·闲聊", "demo-en-knowledge"]
GROUNDED = {"演示·知识对话", "演示·对话推荐"}


def _answers(backend: Backend, samples: list[Sample]) -> list[str]:
    replies = []
    for sample in samples:
        request = build_request(
            backend=backend,
            skill=sample.skill.key,
            language=sample.dataset.language,
            grounding=sample.grounding,
            history=[
                ("user" if i % 2 == (len(sample.context) - 1) % 2 else "system", text)
                for i, text in enumerate(sample.context)
            ],
        )
        replies.append(complete_reply_sync(backend=backend, request=request).text)
    return replies


def test_the_good_and_the_baseline_demo_systems_answer_differently_and_score_apart() -> None:
    demo_load()
    good, weak = Backend.objects.get(name="检索-BM25"), Backend.objects.get(name="检索-TFIDF")
    for dataset_name in DATASETS:
        samples = list(
            Sample.objects.filter(dataset__name=dataset_name)
            .select_related("dataset", "skill")
            .order_by("index")
        )
        good_replies, weak_replies = _answers(good, samples), _answers(weak, samples)
        refs = [sample.references for sample in samples]
        differing = sum(g != w for g, w in zip(good_replies, weak_replies, strict=True))
        assert differing >= len(samples) // 2, (dataset_name, differing)
        # Neither returns the sample's own gold reference (leave-one-out).
        assert not any(r == s.references[0] for r, s in zip(good_replies, samples, strict=True))
        good_f1 = score(["char-f1"], good_replies, refs)["char-f1"].corpus
        weak_f1 = score(["char-f1"], weak_replies, refs)["char-f1"].corpus
        if dataset_name in GROUNDED:
            # Where the grounding decides the answer, the grounded system is measurably better.
            assert good_f1 > weak_f1 + 0.02, (dataset_name, good_f1, weak_f1)
        else:
            assert good_f1 != weak_f1, dataset_name


def test_the_good_system_retrieves_within_the_scenarios_skill_the_baseline_does_not() -> None:
    demo_load()
    good, weak = Backend.objects.get(name="检索-BM25"), Backend.objects.get(name="检索-TFIDF")
    persona = list(
        Sample.objects.filter(dataset__name="演示·画像聊天").select_related("dataset", "skill")
    )
    own_skill_replies = {
        reference
        for references in Sample.objects.filter(
            skill__key="persona", dataset__language="zh"
        ).values_list("references", flat=True)
        for reference in references
    }
    assert all(reply in own_skill_replies for reply in _answers(good, persona))
    assert not all(reply in own_skill_replies for reply in _answers(weak, persona))


def test_the_streaming_demo_system_sends_the_reply_in_paced_chunks() -> None:
    demo_load()
    backend = Backend.objects.get(name="检索-BM25-流式")
    sample = Sample.objects.filter(dataset__name="演示·知识对话").order_by("index")[0]
    request = build_request(
        backend=backend,
        skill="knowledge",
        language="zh",
        grounding=sample.grounding,
        history=[("user", text) for text in sample.context],
    )
    spec = BackendSpec.from_backend(backend)

    async def collect() -> tuple[list[str], float]:
        started = time.perf_counter()
        chunks = [chunk async for chunk in RetrievalAdapter().stream(spec, request, notes=[])]
        return chunks, time.perf_counter() - started

    from asgiref.sync import async_to_sync

    chunks, seconds = async_to_sync(collect)()
    reply = "".join(chunks)
    assert len(chunks) >= len(reply) // 2 > 5
    # 12 characters a second: a 40-character reply takes about 3 s, visibly streamed.
    assert seconds >= 0.8 * (len(reply) - 2) / 12
    assert reply == _answers(Backend.objects.get(name="检索-BM25"), [sample])[0]


def test_the_pooled_corpus_follows_the_request_language() -> None:
    demo_load()
    weak = Backend.objects.get(name="检索-TFIDF")
    english = list(
        Sample.objects.filter(dataset__language="en").select_related("dataset", "skill")[:4]
    )
    english_refs = {
        r
        for refs in Sample.objects.filter(dataset__language="en").values_list(
            "references", flat=True
        )
        for r in refs
    }
    assert all(reply in english_refs for reply in _answers(weak, english))
    assert Dataset.objects.filter(language="en").exists()
