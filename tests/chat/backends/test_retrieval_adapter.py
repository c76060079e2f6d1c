"""The `retrieval` adapter: TF-IDF and BM25 pick the matching sample; the demo backends work."""

from __future__ import annotations

import numpy as np
import pytest

from chat.backends.textindex import TextIndex, char_ngrams, word_ngrams
from chat.models import Backend
from chat.services.generation import BackendError, build_request, complete_reply_sync
from tests.chat.factories import DatasetFactory, SampleFactory
from workspace.demo import demo_load

pytestmark = pytest.mark.django_db

# Each sample's context is about one topic; its reference answers that topic.
TOPICS = [
    ("你看过《流浪地球》吗？郭帆导演的科幻片。", "看过，刘慈欣的原著也很好看。"),
    ("周末去爬山吗？听说宝石山的日出很美。", "好啊，那我们早上五点出发。"),
    ("最近在学做红烧肉，总是做得太甜。", "少放点冰糖，最后大火收汁就好。"),
    ("我家的猫一直躲在床底下不出来。", "刚到新家的猫都这样，过几天就好了。"),
    ("", ""),  # a sample without reference: never returned
]


def _dataset(name: str = "检索测试"):
    dataset = DatasetFactory(name=name, sample_count=len(TOPICS))
    for index, (context, reference) in enumerate(TOPICS):
        SampleFactory(
            dataset=dataset,
            index=index,
            external_id=f"t{index}",
            context=["你好", context] if context else ["你好"],
            references=[reference] if reference else [],
        )
    return dataset


def _ask(backend: Backend, text: str, skill: str = "chitchat") -> str:
    request = build_request(
        backend=backend, skill=skill, language="zh", grounding={}, history=[("user", text)]
    )
    return complete_reply_sync(backend=backend, request=request).text


@pytest.mark.parametrize(
    "config",
    [
        {"method": "tfidf"},
        {"method": "tfidf", "analyzer": "char", "ngram_range": [1, 3]},
        {"method": "tfidf", "analyzer": "word"},
        {"method": "bm25"},
        {"method": "bm25", "k1": 2.0, "b": 0.5, "analyzer": "word"},
    ],
)
def test_it_answers_with_the_reference_of_the_most_similar_context(config: dict) -> None:
    dataset = _dataset()
    backend = Backend.objects.create(
        name="检索", adapter="retrieval", config={**config, "dataset": dataset.name}
    )
    assert _ask(backend, "红烧肉怎么做才不会太甜？") == "少放点冰糖，最后大火收汁就好。"
    assert _ask(backend, "猫躲在床底下怎么办") == "刚到新家的猫都这样，过几天就好了。"
    assert _ask(backend, "郭帆的科幻片《流浪地球》") == "看过，刘慈欣的原著也很好看。"


def test_new_samples_are_picked_up_without_a_restart() -> None:
    dataset = _dataset("检索-更新")
    backend = Backend.objects.create(
        name="检索-更新", adapter="retrieval", config={"method": "bm25", "dataset": dataset.name}
    )
    assert _ask(backend, "宝石山日出") == "好啊，那我们早上五点出发。"
    SampleFactory(
        dataset=dataset,
        index=99,
        external_id="new",
        context=["你喜欢弹吉他吗？我刚买了一把民谣吉他。"],
        references=["喜欢！民谣吉他先练和弦吧。"],
    )
    assert _ask(backend, "民谣吉他怎么练") == "喜欢！民谣吉他先练和弦吧。"


def test_a_missing_dataset_is_a_config_error() -> None:
    backend = Backend.objects.create(
        name="检索-无", adapter="retrieval", config={"method": "tfidf", "dataset": "不存在"}
    )
    with pytest.raises(BackendError) as caught:
        _ask(backend, "你好")
    assert caught.value.kind == "config"
    assert "不存在" in str(caught.value)


def test_the_demo_retrieval_backends_answer_from_the_knowledge_dialogues() -> None:
    demo_load()
    for name in ("检索-TFIDF", "检索-BM25"):
        backend = Backend.objects.get(name=name)
        reply = _ask(backend, "《霸王别姬》是讲京剧的吧？", skill="knowledge")
        assert "京剧" in reply, (name, reply)


def test_tfidf_matches_scikit_learn_conventions() -> None:
    """Smooth idf and L2 rows: identical documents score 1, disjoint ones 0."""
    docs = ["红烧肉", "宝石山", "红烧肉宝石山"]
    index = TextIndex.build(docs, analyze=char_ngrams(1, 1), method="tfidf")
    scores = index.scores("红烧肉")
    assert scores[1] == 0.0
    assert np.argmax(scores) == 0
    n, df = 3, 2  # 红 occurs in 2 of 3 documents
    assert index.idf[index.vocabulary["红"]] == pytest.approx(np.log((1 + n) / (1 + df)) + 1)
    row = index.weights[0].toarray().ravel()
    assert np.linalg.norm(row) == pytest.approx(1.0)


def test_bm25_scores_follow_okapi() -> None:
    docs = ["a b", "a a a c", "c d"]
    index = TextIndex.build(
        docs, analyze=word_ngrams(1, 1, language="en"), method="bm25", k1=1.2, b=0.75
    )
    n, avg = 3, (2 + 4 + 2) / 3
    idf_a = np.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    expected = idf_a * 3 * 2.2 / (3 + 1.2 * (1 - 0.75 + 0.75 * 4 / avg))
    assert index.scores("a")[1] == pytest.approx(expected)


def test_leave_one_out_never_answers_a_dialogue_with_its_own_reference() -> None:
    dataset = _dataset("检索-留一")
    backend = Backend.objects.create(
        name="检索-留一",
        adapter="retrieval",
        config={"method": "bm25", "dataset": dataset.name, "leave_one_out": True},
    )
    request = build_request(
        backend=backend,
        skill="chitchat",
        language="zh",
        grounding={},
        history=[("user", "你好"), ("system", TOPICS[2][0])],
    )
    reply = complete_reply_sync(backend=backend, request=request).text
    assert reply != TOPICS[2][1]
    assert reply in {reference for _context, reference in TOPICS if reference}


def test_pooled_corpus_and_pacing_are_validated_when_a_backend_is_saved() -> None:
    from chat.backends.errors import BackendConfigError
    from chat.services.backends import backend_create

    pooled = backend_create(
        name="检索-全库",
        adapter="retrieval",
        config={"method": "tfidf", "dataset": "*", "same_skill": True, "use_grounding": True},
    )
    assert pooled.config["dataset"] == "*"
    with pytest.raises(BackendConfigError) as caught:
        backend_create(
            name="检索-负速",
            adapter="retrieval",
            config={"method": "tfidf", "dataset": "*", "stream_chars_per_s": -1},
        )
    assert caught.value.field == "config.stream_chars_per_s"
    with pytest.raises(BackendConfigError) as caught:
        backend_create(
            name="检索-布尔",
            adapter="retrieval",
            config={"method": "tfidf", "dataset": "*", "use_grounding": "yes"},
        )
    assert caught.value.field == "config.use_grounding"


@pytest.mark.django_db
def test_a_reply_checks_the_dataset_with_index_lookups_and_reloads_when_it_changes(
    django_assert_num_queries,
) -> None:
    from chat.backends import retrieval
    from chat.models import Dataset, Sample
    from tests.chat.static_runs.helpers import make_dataset

    dataset = make_dataset(name="检索缓存", n=4)
    first = retrieval._load_corpus("检索缓存")
    with django_assert_num_queries(2):  # two index lookups: no COUNT/MAX over its samples
        assert retrieval._load_corpus("检索缓存") is first
    # A re-import changes the dataset's sample count: the corpus is loaded again.
    Sample.objects.filter(dataset=dataset, index=3).delete()
    Dataset.objects.filter(pk=dataset.pk).update(sample_count=3)
    again = retrieval._load_corpus("检索缓存")
    assert again is not first and len(again.responses) == 3


def _reply(backend: Backend, history: list[tuple[str, str]]) -> str:
    request = build_request(
        backend=backend, skill="chitchat", language="zh", grounding={}, history=history
    )
    return complete_reply_sync(backend=backend, request=request).text


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_it_does_not_repeat_a_reply_it_has_given_in_the_dialogue(method: str) -> None:
    dataset = _dataset(f"检索-不重复-{method}")
    backend = Backend.objects.create(
        name=f"检索-不重复-{method}",
        adapter="retrieval",
        config={"method": method, "dataset": dataset.name},
    )
    history: list[tuple[str, str]] = []
    replies = []
    for question in ["红烧肉怎么做？", "红烧肉太甜了", "红烧肉还能怎么做"]:
        history.append(("user", question))
        reply = _reply(backend, history)
        replies.append(reply)
        history.append(("system", reply))
    assert replies[0] == "少放点冰糖，最后大火收汁就好。"
    # The next-best candidates answer the same topic's follow-ups: three different sentences.
    assert len(set(replies)) == 3
    assert set(replies) <= {reference for _context, reference in TOPICS if reference}


def test_a_user_utterance_equal_to_a_reference_does_not_block_that_reply() -> None:
    dataset = _dataset("检索-用户原句")
    backend = Backend.objects.create(
        name="检索-用户原句",
        adapter="retrieval",
        config={"method": "bm25", "dataset": dataset.name},
    )
    # Only the backend's own replies are excluded, not what the user typed.
    reply = _reply(backend, [("user", "少放点冰糖，最后大火收汁就好。")])
    assert reply == "少放点冰糖，最后大火收汁就好。"


def test_it_repeats_the_best_reply_only_when_every_candidate_has_been_given() -> None:
    dataset = _dataset("检索-用尽")
    backend = Backend.objects.create(
        name="检索-用尽", adapter="retrieval", config={"method": "bm25", "dataset": dataset.name}
    )
    history: list[tuple[str, str]] = []
    for _context, reference in TOPICS:
        if reference:
            history += [("user", "嗯"), ("system", reference)]
    history.append(("user", "红烧肉怎么做？"))
    assert _reply(backend, history) == "少放点冰糖，最后大火收汁就好。"
