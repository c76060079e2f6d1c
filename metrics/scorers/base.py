"""Types every metric kernel shares: settings, results, the unavailable state, the input batch."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metrics.scorers.text import LANGUAGES, PROFILES, TOKENIZERS, TextProfile, text_profile

BLEU_SMOOTHINGS = ("none", "floor", "add-k", "exp", "nltk-method1", "nltk-method2")
METEOR_SYNONYMS = ("auto", "wordnet", "none")
EMBEDDING_OOV = ("mean", "skip")
RUBER_BLENDS = ("min", "max", "arithmetic", "geometric")
UNITS = ("response", "dialogue")


class MetricUnavailable(Exception):
    """A metric cannot be computed here (its model is missing or unreadable).

    ``str(exc)`` reads ``"unavailable: <why>"``; such a metric is reported in that state, never as
    a number.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"unavailable: {reason}")


@dataclass(frozen=True)
class Settings:
    """Everything a score depends on besides the texts; each metric's signature names the part
    it uses. ``from_dict``/``to_dict`` round-trip through JSON (a MetricRun stores them)."""

    lang: str = "zh"
    profile: str = "default"
    tokenizer: str | None = None
    lowercase: bool = False
    bleu_smoothing: str = "exp"
    rouge_beta: float = 1.0
    meteor_synonyms: str = "auto"
    word_vectors: str | None = None
    embedding_oov: str = "mean"
    sentence_model: str | None = None
    bertscore_model: str | None = None
    bertscore_layer: int | None = None
    bertscore_idf: bool = False
    bertscore_baseline: str | None = None
    bleurt_model: str | None = None
    perplexity_model: str | None = None
    perplexity_context: bool = False
    followup_model: str | None = None
    followup_items: tuple[str, ...] | None = None
    followup_override: str | None = None
    followup_max_length: int | None = None
    # seed 004: per-token "mean" NLL (FED, FULL) or token "sum" (FED-Cond-Selected's magnitudes)
    followup_normalisation: str = "mean"
    # "fed": fed.py's " <|endoftext|> " text layout for DialoGPT-style models; "eos": ids joined
    followup_layout: str = "fed"
    # the FollowupSelection (id) whose items and scorer inputs a run takes (services/metric_runs)
    followup_selection: int | None = None
    discriminator_model: str | None = None
    ruber_blend: str = "arithmetic"
    device: str | None = None
    batch_size: int = 64

    def __post_init__(self) -> None:
        choices = {
            "lang": LANGUAGES,
            "profile": PROFILES,
            "bleu_smoothing": BLEU_SMOOTHINGS,
            "meteor_synonyms": METEOR_SYNONYMS,
            "embedding_oov": EMBEDDING_OOV,
            "ruber_blend": RUBER_BLENDS,
            "followup_normalisation": ("mean", "sum"),
            "followup_layout": ("fed", "eos"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"setting {name}={getattr(self, name)!r} is not one of {', '.join(allowed)}"
                )
        if self.tokenizer is not None and self.tokenizer not in TOKENIZERS:
            raise ValueError(
                f"setting tokenizer={self.tokenizer!r} is not one of {', '.join(TOKENIZERS)}"
            )
        if not (self.rouge_beta > 0 and math.isfinite(self.rouge_beta)):
            raise ValueError("setting rouge_beta must be a positive number")
        if self.batch_size < 1:
            raise ValueError("setting batch_size must be at least 1")
        if self.bertscore_layer is not None and self.bertscore_layer < 0:
            raise ValueError("setting bertscore_layer must be 0 or more")
        if self.followup_items is not None:
            items = self.followup_items
            if isinstance(items, str) or not all(isinstance(item, str) for item in items):
                raise ValueError("setting followup_items must be a list of item names")
            # Stored JSON gives a list; a frozen, hashable settings object keeps a tuple.
            object.__setattr__(self, "followup_items", tuple(items))
        if self.followup_max_length is not None and self.followup_max_length < 8:
            raise ValueError("setting followup_max_length must be at least 8 tokens")
        if self.followup_selection is not None and self.followup_selection < 1:
            raise ValueError("setting followup_selection must be an item selection's id")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from a mapping; an unknown key is an error, not silently ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(unknown)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def text_profile(self) -> TextProfile:
        return text_profile(self.lang, self.profile, self.tokenizer, self.lowercase)


@dataclass(frozen=True)
class Computed:
    """What a kernel returns for one metric: per-response values and the corpus-level value.

    ``corpus_kind`` says how the corpus value is defined: ``mean`` (of the per-response values),
    ``corpus-bleu`` (pooled n-gram statistics, corpus brevity penalty), ``inter`` (distinct n-grams
    over all responses), ``micro`` (pooled counts, the LIC script's F1), ``token-weighted``
    (perplexity over all tokens).
    """

    per_response: np.ndarray
    corpus: float
    corpus_kind: str = "mean"


@dataclass(frozen=True)
class MetricResult:
    """One metric over one batch: either values, or ``unavailable`` (the reason) and no values."""

    name: str
    signature: str
    per_response: np.ndarray | None
    corpus: float | None
    corpus_kind: str | None
    unavailable: str | None = None
    seconds: float = 0.0

    @property
    def available(self) -> bool:
        return self.unavailable is None

    @property
    def status(self) -> str:
        """``"ok"`` or ``"unavailable: <why>"``."""
        return "ok" if self.unavailable is None else f"unavailable: {self.unavailable}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN (an undefined value, e.g. perplexity of an empty reply) becomes None."""
        return {
            "name": self.name,
            "status": self.status,
            "signature": self.signature,
            "corpus": _json_float(self.corpus),
            "corpus_kind": self.corpus_kind,
            "per_response": None
            if self.per_response is None
            else [_json_float(v) for v in self.per_response.tolist()],
            "unavailable": self.unavailable,
            "seconds": self.seconds,
        }


def _json_float(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass
class Batch:
    """The inputs of one scoring call and what kernels derive from them, computed once and shared
    (tokens, integer-encoded n-grams) between all metrics of the call.

    References are flattened into *units*: ``ref_texts[u]`` belongs to pair ``owner[u]``; the units
    of one pair are contiguous and ``ref_start[i]:ref_start[i + 1]`` indexes them.
    """

    hyps: Sequence[str]
    refs: Sequence[Sequence[str]] | None
    contexts: Sequence[Sequence[str]] | None
    settings: Settings
    # "response": each item is a response in its context; "dialogue": each item is a dialogue's
    # last model turn after its whole history (metrics with a dialogue level treat it as such).
    unit: str = "response"
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.hyps)

    @property
    def has_refs(self) -> bool:
        return self.refs is not None

    @functools.cached_property
    def ref_texts(self) -> list[str]:
        assert self.refs is not None
        return [r for group in self.refs for r in group]

    @functools.cached_property
    def ref_counts(self) -> np.ndarray:
        assert self.refs is not None
        return np.fromiter((len(group) for group in self.refs), dtype=np.int64, count=len(self))

    @functools.cached_property
    def owner(self) -> np.ndarray:
        return np.repeat(np.arange(len(self), dtype=np.int64), self.ref_counts)

    @functools.cached_property
    def ref_start(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.ref_counts)]).astype(np.int64)

    @functools.cached_property
    def profile(self) -> TextProfile:
        return self.settings.text_profile

    @functools.cached_property
    def hyp_tokens(self) -> list[list[str]]:
        return self.profile.tokenize_all(self.hyps)

    @functools.cached_property
    def ref_tokens(self) -> list[list[str]]:
        return self.profile.tokenize_all(self.ref_texts)

    def cached(self, key: str, make: Any) -> Any:
        """Memoise a derived value under ``key`` for the other metrics of this call."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def max_over_refs(self, unit_values: np.ndarray) -> np.ndarray:
        """Per pair, the maximum over its references' values."""
        return np.maximum.reduceat(unit_values, self.ref_start[:-1])
