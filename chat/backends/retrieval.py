"""The `retrieval` adapter: answer with the reference response of the most similar context.

The dialogue history (its last `query_turns` utterances) is matched against each sample's
context (its last `query_turns` utterances) of the configured dataset with TF-IDF or BM25;
the best sample's first reference is the reply. Offline and deterministic: the baseline systems
of the demo and of studies without a GPU.

Config: `{"method": "tfidf"|"bm25", "dataset": <name>, "analyzer": "char"|"word",
"ngram_range": [1, 2], "k1": 1.2, "b": 0.75, "query_turns": 2}`. Character n-grams are the
default (Chinese and Japanese need no segmentation); `word` uses jieba for Chinese.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

from asgiref.sync import sync_to_async

from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError
from chat.backends.textindex import TextIndex, char_ngrams, word_ngrams

DEFAULT_QUERY_TURNS = 2


@dataclass(frozen=True)
class Corpus:
    key: tuple  # (dataset id, sample count, newest sample id): changes when the data does
    language: str
    contexts: list[list[str]]
    responses: list[str]


def _load_corpus(name: str) -> Corpus:
    from django.db.models import Max

    from chat.models import Dataset, Sample

    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise BackendError(f"the retrieval dataset '{name}' does not exist", kind="config")
    samples = Sample.objects.filter(dataset=dataset)
    key = (dataset.pk, samples.count(), samples.aggregate(m=Max("id"))["m"])
    cached = _corpora.get(name)
    if cached is not None and cached.key == key:
        return cached
    contexts: list[list[str]] = []
    responses: list[str] = []
    for context, references in samples.order_by("index").values_list("context", "references"):
        reply = next((r for r in references if r.strip()), None)
        if reply is not None:
            contexts.append(context)
            responses.append(reply)
    if not responses:
        raise BackendError(
            f"the retrieval dataset '{name}' has no sample with a reference response",
            kind="config",
        )
    corpus = _corpora[name] = Corpus(key, dataset.language, contexts, responses)
    return corpus


_corpora: dict[str, Corpus] = {}
_indexes: OrderedDict[tuple, TextIndex] = OrderedDict()
MAX_INDEXES = 8  # per process: a study compares a handful of retrieval systems
_lock = threading.Lock()


def _query_text(utterances: list[str], turns: int) -> str:
    return "\n".join(utterances[-turns:])


def index_for(corpus: Corpus, config: dict) -> TextIndex:
    method = config.get("method", "tfidf")
    analyzer = config.get("analyzer", "char")
    low, high = config.get("ngram_range", [1, 2] if analyzer == "char" else [1, 1])
    turns = int(config.get("query_turns", DEFAULT_QUERY_TURNS))
    k1, b = float(config.get("k1", 1.2)), float(config.get("b", 0.75))
    key = (corpus.key, method, analyzer, low, high, turns, k1, b)
    with _lock:
        index = _indexes.get(key)
        if index is not None:
            _indexes.move_to_end(key)
        else:
            analyze = (
                char_ngrams(low, high)
                if analyzer == "char"
                else word_ngrams(low, high, language=corpus.language)
            )
            documents = [_query_text(context, turns) for context in corpus.contexts]
            index = TextIndex.build(documents, analyze=analyze, method=method, k1=k1, b=b)
            _indexes[key] = index
            if len(_indexes) > MAX_INDEXES:
                _indexes.popitem(last=False)
        return index


def retrieve(corpus: Corpus, config: dict, history: list[str]) -> str:
    index = index_for(corpus, config)
    turns = int(config.get("query_turns", DEFAULT_QUERY_TURNS))
    best, _score = index.best(_query_text(history, turns))
    return corpus.responses[best]


class RetrievalAdapter:
    async def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]:
        corpus = await sync_to_async(_load_corpus)(spec.config["dataset"])
        history = [text for _speaker, text in request.history]
        # Index building is CPU work: off the event loop.
        yield await sync_to_async(retrieve, thread_sensitive=False)(corpus, spec.config, history)
