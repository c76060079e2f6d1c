"""The one registry of automatic metrics and the batched scoring API.

``score(names, hyps, refs, contexts, settings)`` scores one system's responses with any metrics of
:data:`METRICS` and returns a :class:`MetricResult` per name: per-response values (a numpy array)
and the corpus-level value, kept distinct, with a sacrebleu-style signature of the settings used.
A metric whose model is missing comes back with ``unavailable`` set (``"unavailable: <why>"``)
and no numbers. Metrics computed together (BLEU-1..4, ROUGE-N, BERTScore P/R/F1, the three
embedding metrics) share their work, and all lexical metrics share one tokenization.

Callers: the offline command (:mod:`metrics.scorers.offline`) and the Django MetricRun service.
Score a system's outputs in one call: corpus values, and CIDEr-D's idf (``batch_dependent``), are
defined over the whole batch.
"""

from __future__ import annotations

import importlib
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

from metrics.scorers import bleu, cider, embedding, learned, lic, overlap, rouge
from metrics.scorers.base import (
    UNITS,
    Batch,
    Computed,
    MetricResult,
    MetricUnavailable,
    Settings,
)
from metrics.scorers.ngrams import encoded
from metrics.scorers.text import LANGUAGES

SCORERS_VERSION = "1"
LEVELS = ("response", "corpus")
# Metrics that score a whole dialogue differently from its turns (see metrics.scorers.learned).
DIALOGUE_LEVELS = ("response", "dialogue", "corpus")


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is and what it depends on."""

    name: str
    family: str
    kernel: str
    needs_reference: bool
    needs_context: bool
    settings: tuple[str, ...]
    higher_is_better: bool = True
    uses_text_profile: bool = True
    batch_dependent: bool = False
    levels: tuple[str, ...] = LEVELS
    languages: tuple[str, ...] = LANGUAGES


_PROFILE = ("lang", "profile", "tokenizer", "lowercase")
_DEVICE = ("device", "batch_size")


def _specs() -> list[MetricSpec]:
    """Every metric in the issue's order: lexical, embedding and neural, length, reference-free."""
    return [
        *_lexical_specs(),
        *_neural_specs(),
        MetricSpec("length", "length", "length", False, False, _PROFILE),
        *_reference_free_specs(),
    ]


def _lexical_specs() -> list[MetricSpec]:
    specs = [
        MetricSpec("f1", "overlap", "f1", True, False, _PROFILE),
        MetricSpec("char-f1", "overlap", "char-f1", True, False, _PROFILE),
    ]
    specs += [
        MetricSpec(f"bleu-{n}", "bleu", "bleu", True, False, (*_PROFILE, "bleu_smoothing"))
        for n in range(1, 5)
    ]
    specs += [
        MetricSpec(f"rouge-{n}", "rouge", "rouge", True, False, (*_PROFILE, "rouge_beta"))
        for n in range(1, 5)
    ]
    specs += [
        MetricSpec("rouge-l", "rouge", "rouge", True, False, (*_PROFILE, "rouge_beta")),
        MetricSpec("rouge-w", "rouge", "rouge", True, False, (*_PROFILE, "rouge_beta")),
        MetricSpec("meteor", "meteor", "meteor", True, False, (*_PROFILE, "meteor_synonyms")),
        MetricSpec("dist-1", "diversity", "dist", False, False, _PROFILE),
        MetricSpec("dist-2", "diversity", "dist", False, False, _PROFILE),
        MetricSpec("cider", "cider", "cider", True, False, _PROFILE, batch_dependent=True),
    ]
    return specs


def _neural_specs() -> list[MetricSpec]:
    """Word-embedding, sentence-encoder, BERTScore, BLEURT and perplexity metrics."""
    specs: list[MetricSpec] = []
    embedding_settings = (*_PROFILE, "word_vectors", "embedding_oov")
    specs += [
        MetricSpec(name, "embedding", "embedding", True, False, embedding_settings)
        for name in ("embedding-average", "vector-extrema", "greedy-matching")
    ]
    specs.append(
        MetricSpec(
            "sentence-cosine",
            "neural",
            "sentence",
            True,
            False,
            ("sentence_model", *_DEVICE),
            uses_text_profile=False,
        )
    )
    bert = ("bertscore_model", "bertscore_layer", "bertscore_idf", "bertscore_baseline", *_DEVICE)
    specs += [
        MetricSpec(name, "neural", "bertscore", True, False, bert, uses_text_profile=False)
        for name in ("bertscore-p", "bertscore-r", "bertscore-f1")
    ]
    specs += [
        MetricSpec(
            "bleurt",
            "neural",
            "bleurt",
            True,
            False,
            ("bleurt_model", *_DEVICE),
            uses_text_profile=False,
        ),
        MetricSpec(
            "perplexity",
            "language-model",
            "perplexity",
            False,
            False,
            ("perplexity_model", "perplexity_context", *_DEVICE),
            higher_is_better=False,
            uses_text_profile=False,
        ),
    ]
    return specs


def _reference_free_specs() -> list[MetricSpec]:
    """Follow-up likelihood (seed 004) and the learned discriminator (seed 003)."""
    specs: list[MetricSpec] = []
    followup_settings = (
        "lang",
        "followup_model",
        "followup_items",
        "followup_override",
        "followup_max_length",
        "followup_normalisation",
        "followup_layout",
        "followup_selection",
        *_DEVICE,
    )
    specs += [
        MetricSpec(
            name,
            "follow-up",
            "followup",
            False,
            True,
            followup_settings,
            uses_text_profile=False,
            levels=DIALOGUE_LEVELS,
        )
        for name in learned.FOLLOWUP_METRICS
    ]
    specs += [
        MetricSpec(
            "discriminator",
            "learned",
            "discriminator",
            False,
            True,
            ("discriminator_model", *_DEVICE),
            uses_text_profile=False,
        ),
        MetricSpec(
            "ruber",
            "learned",
            "discriminator",
            True,
            True,
            ("discriminator_model", "ruber_blend", *_DEVICE),
            uses_text_profile=False,
            batch_dependent=True,
        ),
    ]
    return specs


METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in _specs()}
"""Every metric by name, in the issue's order."""

LEXICAL_FAMILIES = frozenset({"overlap", "bleu", "rouge", "meteor", "diversity", "cider", "length"})
"""Families computed from the tokens alone, without a model."""


def _lic(batch: Batch) -> bool:
    return batch.settings.profile == "lic"


def _f1(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    return {"f1": lic.lic_f1(batch) if _lic(batch) else overlap.f1(batch)}


def _bleu(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    orders = sorted(int(name.rsplit("-", 1)[1]) for name in names)
    found = lic.lic_bleu(batch, orders) if _lic(batch) else bleu.bleu(batch, orders)
    return {f"bleu-{n}": value for n, value in found.items()}


def _rouge(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    out = {}
    for name in names:
        suffix = name.rsplit("-", 1)[1]
        if suffix == "l":
            out[name] = rouge.rouge_l(batch)
        elif suffix == "w":
            out[name] = rouge.rouge_w(batch)
        else:
            out[name] = rouge.rouge_n(batch, int(suffix))
    return out


def _dist(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    compute = lic.lic_distinct if _lic(batch) else overlap.distinct
    return {name: compute(batch, int(name.rsplit("-", 1)[1])) for name in names}


def _heavy(module: str) -> ModuleType:
    """A kernel module that loads torch/transformers (or NLTK) when imported, imported on first
    use: the registry is imported by every web process (forms, presets), which never scores, so
    it must not pay for these libraries (``tests/core/test_light_imports.py``)."""
    return importlib.import_module(f"metrics.scorers.{module}")


_KERNELS: dict[str, Callable[[Batch, Sequence[str]], dict[str, Computed]]] = {
    "f1": _f1,
    "bleu": _bleu,
    "rouge": _rouge,
    "meteor": lambda batch, names: {"meteor": _heavy("meteor").meteor(batch)},
    "dist": _dist,
    "char-f1": lambda batch, names: {"char-f1": lic.char_f1(batch)},
    "cider": lambda batch, names: {"cider": cider.cider_d(batch)},
    "length": lambda batch, names: {"length": overlap.length(batch)},
    "embedding": embedding.embedding_metrics,
    "sentence": lambda batch, names: {"sentence-cosine": _heavy("sentence").sentence_cosine(batch)},
    "bertscore": lambda batch, names: _heavy("bertscore").bertscore(batch),
    "bleurt": lambda batch, names: {"bleurt": _heavy("bleurt").bleurt(batch)},
    "perplexity": lambda batch, names: {"perplexity": _heavy("perplexity").perplexity(batch)},
    "followup": learned.followup_metrics,
    "discriminator": learned.discriminator_metrics,
}


def _details(spec: MetricSpec, batch: Batch) -> str:
    """The metric-specific part of a signature."""
    s = batch.settings
    if spec.kernel in ("f1", "bleu", "dist") and _lic(batch):
        return {
            "f1": "unit:token|avg:micro|ref:first",
            "bleu": "smooth:none|bp:corpus|ref:first",
            "dist": "",
        }[spec.kernel]
    if spec.kernel == "char-f1":
        return "unit:char|avg:micro|ref:first|def:duconv-calc_f1"
    if spec.kernel == "bleu":
        return bleu.smoothing_label(s.bleu_smoothing)
    if spec.kernel == "rouge":
        weight = f"|w:{rouge.WLCS_WEIGHT}" if spec.name == "rouge-w" else ""
        return f"beta:{s.rouge_beta:g}{weight}"
    if spec.kernel == "meteor":
        return _heavy("meteor").meteor_label(s.lang, s.meteor_synonyms)
    if spec.kernel == "cider":
        return f"n:{cider.ORDERS}|sigma:{cider.SIGMA:g}|idf:refs"
    if spec.kernel == "embedding":
        return embedding.vectors_label(s.word_vectors, s.embedding_oov)
    labels: dict[str, Callable[[], Callable[[Batch], str]]] = {
        "sentence": lambda: _heavy("sentence").sentence_label,
        "bertscore": lambda: _heavy("bertscore").bertscore_label,
        "bleurt": lambda: _heavy("bleurt").bleurt_label,
        "perplexity": lambda: _heavy("perplexity").perplexity_label,
        "followup": lambda: learned.followup_label,
        "discriminator": lambda: learned.discriminator_label,
    }
    return labels[spec.kernel]()(batch) if spec.kernel in labels else ""


def signature(spec: MetricSpec, batch: Batch) -> str:
    """``name|nrefs:…|prof:…|tok:…|case:…|<metric settings>|v:…``, as sacrebleu's signatures."""
    parts = [spec.name]
    if spec.needs_reference and batch.has_refs:
        counts = set(batch.ref_counts.tolist())
        parts.append(f"nrefs:{counts.pop() if len(counts) == 1 else 'var'}")
    if spec.uses_text_profile:
        parts.append(f"lang:{batch.settings.lang}|{batch.profile.signature}")
    details = _details(spec, batch)
    if details:
        parts.append(details)
    parts.append(f"v:scorers-{SCORERS_VERSION}")
    return "|".join(parts)


def _check_texts(values: object, what: str, allow_empty: bool) -> None:
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{what}: expected a list of strings")
    if not allow_empty and not values:
        raise ValueError(f"{what}: expected at least one string")


def _all_text_lists(groups: Sequence[object]) -> bool:
    """Every group a non-empty list or tuple of strings, checked in C-level passes (a Python
    loop over 100,000 groups cost more than scoring them). Exact types: anything else (a str
    subclass) takes the one-by-one check."""
    if not set(map(type, groups)) <= {list, tuple}:
        return False
    lists: Sequence[Sequence[object]] = groups  # type: ignore[assignment]  # checked: lists and tuples
    words = set(map(type, itertools.chain.from_iterable(lists)))
    return 0 not in map(len, lists) and words <= {str}


def prepare(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]] | None = None,
    contexts: Sequence[Sequence[str]] | None = None,
    settings: Settings | None = None,
    unit: str = "response",
) -> Batch:
    """Validate the inputs of one system and wrap them for :func:`score_batch`."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    _check_texts(hyps, "hypotheses", allow_empty=True)
    if refs is not None:
        if len(refs) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} reference lists")
        if not _all_text_lists(refs):  # then find the first bad group, for its message
            for i, group in enumerate(refs):
                _check_texts(group, f"references[{i}]", allow_empty=False)
    if contexts is not None:
        if len(contexts) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but {len(contexts)} contexts")
        for i, turns in enumerate(contexts):
            _check_texts(turns, f"contexts[{i}]", allow_empty=True)
    return Batch(
        list(hyps),
        None if refs is None else [list(g) for g in refs],
        None if contexts is None else [list(c) for c in contexts],
        settings or Settings(),
        unit,
    )


def score_batch(names: Sequence[str], batch: Batch) -> dict[str, MetricResult]:
    """Compute ``names`` over a prepared batch; results in the order of ``names``."""
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}")
    if len(batch) == 0:
        raise ValueError("nothing to score: no hypotheses")
    wanted = list(dict.fromkeys(names))
    missing_refs = [n for n in wanted if METRICS[n].needs_reference and not batch.has_refs]
    if missing_refs:
        raise ValueError(f"metric(s) {', '.join(missing_refs)} need references")
    groups: dict[str, list[str]] = {}
    for name in wanted:
        groups.setdefault(METRICS[name].kernel, []).append(name)
    results: dict[str, MetricResult] = {}
    for kernel, members in groups.items():
        started = time.perf_counter()
        try:
            if METRICS[members[0]].uses_text_profile:
                encoded(batch)
            computed = _KERNELS[kernel](batch, members)
            failure = None
        except MetricUnavailable as exc:
            computed, failure = {}, exc.reason
        seconds = time.perf_counter() - started
        for name in members:
            spec = METRICS[name]
            value = computed.get(name)
            results[name] = MetricResult(
                name=name,
                signature=signature(spec, batch),
                per_response=None if value is None else value.per_response,
                corpus=None if value is None else value.corpus,
                corpus_kind=None if value is None else value.corpus_kind,
                unavailable=failure,
                seconds=seconds,
            )
    return {name: results[name] for name in wanted}


def score(
    names: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]] | None = None,
    contexts: Sequence[Sequence[str]] | None = None,
    settings: Settings | Mapping[str, object] | None = None,
    unit: str = "response",
) -> dict[str, MetricResult]:
    """Score one system's responses with the metrics ``names``.

    ``refs[i]`` lists the references of ``hyps[i]`` (one or more), ``contexts[i]`` its context
    turns (optional; used by ``perplexity`` with ``perplexity_context`` and by the reference-free
    metrics). ``settings`` is a :class:`Settings` or a mapping of its fields (e.g. stored JSON).
    ``unit="dialogue"`` says each item is a dialogue's last model turn after its whole history:
    metrics whose spec lists a ``dialogue`` level (the follow-up family) then score the dialogue
    as a whole; the others score the item as a response. Raises ``ValueError`` on bad input; a
    metric that cannot run here is returned with ``unavailable`` set.
    """
    if isinstance(settings, Mapping):
        settings = Settings.from_dict(settings)
    return score_batch(names, prepare(hyps, refs, contexts, settings, unit))


# Named metric sets. MSDE 16: seed 000 §4 (a sentence-encoder cosine stands in for Skip-Thought);
# seed 002's extras beside them.
PRESETS: dict[str, tuple[str, ...]] = {
    "msde16": (
        "f1",
        "bleu-1",
        "bleu-2",
        "rouge-l",
        "meteor",
        "dist-1",
        "dist-2",
        "cider",
        "sentence-cosine",
        "embedding-average",
        "vector-extrema",
        "greedy-matching",
        "bertscore-p",
        "bertscore-r",
        "bertscore-f1",
        "bleurt",
    ),
    "seed002-extra": (
        "bleu-3",
        "bleu-4",
        "rouge-1",
        "rouge-2",
        "rouge-3",
        "rouge-4",
        "rouge-w",
        "perplexity",
        "length",
    ),
}
PRESET_LABELS: dict[str, str] = {"msde16": "MSDE 16", "seed002-extra": "seed 002 extra"}
