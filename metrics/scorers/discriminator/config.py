"""The discriminator's settings and tokenizer (no torch: forms and views import these)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

PAD, UNK = "<pad>", "<unk>"
CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE, REPORT_FILE = (
    "config.json",
    "vocab.json",
    "weights.pt",
    "report.json",
)
BlendMethod = Literal["min", "max", "arithmetic", "geometric"]

_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str, language: str) -> list[str]:
    """Characters for Chinese and Japanese (no segmenter needed), lower-cased words and
    punctuation for English and anything else."""
    if language in ("zh", "ja"):
        return [character for character in text if not character.isspace()]
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class DiscriminatorConfig:
    """Architecture and training settings; the defaults are seed 003 §3.2 (AB-LSTM-bi-MLP)."""

    encoder: Literal["lstm", "gru"] = "lstm"
    bidirectional: bool = True
    attention: bool = True
    matching: Literal["none", "uni", "bi"] = "bi"
    classifier: Literal["mlp", "slp", "none"] = "mlp"
    language: str = "en"
    embedding_dim: int = 300
    hidden_size: int = 300
    mlp_hidden: int = 1024
    dropout: float = 0.5
    l2: float = 0.001
    learning_rate: float = 0.0001
    batch_size: int = 128
    max_epochs: int = 30
    patience: int = 3
    max_tokens: int = 60
    max_vocab: int = 50000

    def __post_init__(self) -> None:
        if self.encoder not in ("lstm", "gru"):
            raise ValueError(f"encoder must be 'lstm' or 'gru', not {self.encoder!r}")
        if self.matching not in ("none", "uni", "bi"):
            raise ValueError(f"matching must be 'none', 'uni' or 'bi', not {self.matching!r}")
        if self.classifier not in ("mlp", "slp", "none"):
            raise ValueError(f"classifier must be 'mlp', 'slp' or 'none', not {self.classifier!r}")
        if self.classifier == "none" and self.matching == "none":
            raise ValueError("without a classifier the match features are the logit: need matching")

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> DiscriminatorConfig:
        """The configuration of a seed 003 Table 2 model, with ``overrides`` applied."""
        if name not in TABLE2_MODELS:
            raise ValueError(f"unknown model {name!r}; choose from {list(TABLE2_MODELS)}")
        return replace(cls(**TABLE2_MODELS[name]), **overrides)


# Seed 003 Table 2, in its row order ("bi"/"uni": both or one match direction, §3.3).
TABLE2_MODELS: dict[str, dict[str, Any]] = {
    "LSTM-uni": {
        "encoder": "lstm",
        "bidirectional": False,
        "attention": False,
        "matching": "uni",
        "classifier": "none",
    },
    "AB-LSTM-MLP": {"matching": "none"},
    "AB-LSTM-bi-SLP": {"classifier": "slp"},
    "GRU-uni-MLP": {"encoder": "gru", "attention": False, "matching": "uni"},
    "Bi-LSTM-bi-MLP": {"attention": False},
    "AB-LSTM-uni-MLP": {"matching": "uni"},
    "AB-LSTM-bi-MLP": {},
}
