"""The `retrieval` adapter: answer with the reference response of the most similar context.

The dialogue history (its last `query_turns` utterances) is matched against each sample's
context (its last `query_turns` utterances) of the configured dataset with TF-IDF or BM25;
the best sample's first reference is the reply. Offline and deterministic: the baseline systems
of the demo and of studies without a GPU.

Config: `{"method": "tfidf"|"bm25", "dataset": <name>|"*", "analyzer": "char"|"word",
"ngram_range": [1, 2], "k1": 1.2, "b": 0.75, "query_turns": 2, "same_skill": false,
"use_grounding": false, "leave_one_out": false, "stream_chars_per_s": 0}`. Character n-grams
are the default (Chinese and Japanese need no segmentation); `word` uses jieba for Chinese.

- `dataset: "*"` pools every dataset in the request's language; with `same_skill` only those of
  the request's skill (retrieval over the scenario's own kind of dialogue).
- `use_grounding` adds the scenario's grounding (knowledge triples, persona, goal …) to the
  query and each candidate's own grounding to its document, so a knowledge-grounded reply is
  picked for the knowledge the scenario shows.
- `leave_one_out` never answers with a sample whose context is the dialogue itself: a static run
  over the backend's own dataset would otherwise return each sample's gold reference.
- A reply the backend has already given in the dialogue (a `system` utterance of the history) is
  never given again while another candidate is left: the next-best sample answers instead.
- `stream_chars_per_s` sends the reply in small chunks at that pace (a human-visible stream to
  preview what a worker sees); 0 sends it at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass

import numpy as np
from asgiref.sync import sync_to_async

from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError
from chat.backends.textindex import TextIndex, char_ngrams, word_ngrams

DEFAULT_QUERY_TURNS = 2


@dataclass(frozen=True)
class Corpus:
    key: tuple  # per dataset (id, sample count, last index): changes when the samples do
    language: str
    contexts: list[list[str]]
    responses: list[str]
    groundings: list[str]  # each sample's grounding flattened to text


ALL_DATASETS = "*"


def grounding_text(grounding: object) -> str:
    """Every string inside a grounding (triples, persona lines, goal …), one per line."""
    parts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            if value.strip():
                parts.append(value.strip())
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(grounding)
    return "\n".join(parts)


def _load_corpus(name: str, *, language: str = "", skill: str = "") -> Corpus:
    """The corpus of one dataset (or, for `"*"`, of every dataset in `language`, optionally
    only the samples of `skill`), loaded once per process and reused while the data is the same.

    The check per reply is index lookups per dataset (the dataset row, and its last sample
    position), never a scan of its samples: a COUNT and MAX over a million-sample dataset took
    281 ms on every reply (5.2 s to the first token at 30 users).
    """
    from chat.models import Dataset, Sample

    cache_key = (name, language if name == ALL_DATASETS else "", skill)
    cached = _corpora.get(cache_key)
    fields = ("pk", "sample_count", "language")
    if name == ALL_DATASETS:
        rows = list(Dataset.objects.filter(language=language).order_by("pk").values_list(*fields))
        what = f"datasets in '{language}'" + (f" of skill '{skill}'" if skill else "")
    else:
        row = Dataset.objects.filter(name=name).values_list(*fields).first()
        if row is None:
            raise BackendError(f"the retrieval dataset '{name}' does not exist", kind="config")
        rows = [row]
        what = f"dataset '{name}'"
    # The highest sample position of each dataset, read from the (dataset, index) unique index:
    # samples added to a dataset are picked up without a restart, still without scanning them.
    key = tuple(
        (
            dataset_id,
            sample_count,
            Sample.objects.filter(dataset_id=dataset_id)
            .order_by("-index")
            .values_list("index", flat=True)
            .first(),
        )
        for dataset_id, sample_count, _language in rows
    )
    if cached is not None and cached.key == key:
        return cached
    contexts: list[list[str]] = []
    responses: list[str] = []
    groundings: list[str] = []
    samples = Sample.objects.filter(dataset_id__in=[row[0] for row in rows])
    if skill:
        samples = samples.filter(skill__key=skill)
    values = samples.order_by("dataset_id", "index").values_list(
        "context", "references", "grounding"
    )
    for context, references, grounding in values.iterator(2000):
        reply = next((r for r in references if r.strip()), None)
        if reply is not None:
            contexts.append(context)
            responses.append(reply)
            groundings.append(grounding_text(grounding))
    if not responses:
        raise BackendError(
            f"the retrieval {what} has no sample with a reference response", kind="config"
        )
    corpus_language = language or rows[0][2]
    corpus = _corpora[cache_key] = Corpus(key, corpus_language, contexts, responses, groundings)
    return corpus


_corpora: dict[tuple[str, str, str], Corpus] = {}
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
    use_grounding = bool(config.get("use_grounding", False))
    key = (corpus.key, corpus.language, method, analyzer, low, high, turns, k1, b, use_grounding)
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
            if use_grounding:
                documents = [
                    f"{document}\n{grounding}"
                    for document, grounding in zip(documents, corpus.groundings, strict=True)
                ]
            index = TextIndex.build(documents, analyze=analyze, method=method, k1=k1, b=b)
            _indexes[key] = index
            if len(_indexes) > MAX_INDEXES:
                _indexes.popitem(last=False)
        return index


def retrieve(
    corpus: Corpus,
    config: dict,
    history: list[str],
    grounding: object = None,
    *,
    given: Collection[str] = (),
) -> str:
    """The reference of the best-matching sample whose reply is not in `given`.

    `given` holds the replies already made in the dialogue: a reply the backend has given is
    not given again, so three user turns about the same topic get the next-best candidates
    instead of one sentence three times (a newcomer's first demo chat looked broken). Only when
    every candidate has been given (a corpus smaller than the dialogue) is one repeated: the
    best, rather than no reply at all.
    """
    index = index_for(corpus, config)
    turns = int(config.get("query_turns", DEFAULT_QUERY_TURNS))
    query = _query_text(history, turns)
    if config.get("use_grounding"):
        query = f"{query}\n{grounding_text(grounding or {})}"
    leave_one_out = bool(config.get("leave_one_out"))
    given_texts = {text.strip() for text in given}

    def allowed(candidate: int) -> bool:
        if leave_one_out and corpus.contexts[candidate] == history:
            return False
        return corpus.responses[candidate].strip() not in given_texts

    ranking = index.scores(query)
    first = int(np.argmax(ranking))  # ties go to the earliest sample, as `TextIndex.best`
    if allowed(first):
        return corpus.responses[first]
    fallback: int | None = None
    for candidate in np.argsort(-ranking, kind="stable"):
        candidate = int(candidate)
        if leave_one_out and corpus.contexts[candidate] == history:
            continue
        if fallback is None:
            fallback = candidate
        if allowed(candidate):
            return corpus.responses[candidate]
    if fallback is None:
        raise BackendError("the retrieval corpus holds only this dialogue", kind="config")
    return corpus.responses[fallback]


STREAM_CHUNK_CHARS = 2


class RetrievalAdapter:
    async def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]:
        config = spec.config
        corpus = await sync_to_async(_load_corpus)(
            config["dataset"],
            language=request.language if config["dataset"] == ALL_DATASETS else "",
            skill=request.skill if config.get("same_skill") else "",
        )
        history = [text for _speaker, text in request.history]
        given = [text for speaker, text in request.history if speaker == "system"]
        # Index building is CPU work: off the event loop.
        reply = await sync_to_async(retrieve, thread_sensitive=False)(
            corpus, config, history, request.grounding, given=given
        )
        pace = float(config.get("stream_chars_per_s", 0) or 0)
        if pace <= 0:
            yield reply
            return
        for start in range(0, len(reply), STREAM_CHUNK_CHARS):
            if start:
                await asyncio.sleep(STREAM_CHUNK_CHARS / pace)
            yield reply[start : start + STREAM_CHUNK_CHARS]
