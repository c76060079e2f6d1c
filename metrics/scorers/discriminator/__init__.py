"""Learned real-vs-random response discriminator (seed 003) and RUBER's blend.

Seed 003 (Wang et al. 2019, "基于开放域对话系统的自动化评测方法研究") trains AB-LSTM-bi-MLP to tell
a real (context, response) pair from one whose response was drawn at random: word embeddings →
Bi-LSTM → self-attention (eqs. 10-12: ``e_t = uᵀ tanh(W H_t + b)``, ``a = softmax(e)``,
``v = Σ a_t H_t``) give the sentence vectors ``q`` and ``r``; the bilinear matches ``qᵀMr`` (eq. 14)
and ``rᵀNq`` (eq. 15) join them, ``[q, qᵀMr, rᵀNq, r]`` (eq. 16), into an MLP with one ReLU hidden
layer and a softmax output, trained with cross-entropy (eq. 17), Adam, dropout and L2.
:class:`DiscriminatorConfig` switches the parts off to give every row of seed 003 Table 2
(:data:`TABLE2_MODELS`): LSTM-uni (Lowe et al. 2016: the match alone is the logit), AB-LSTM-MLP
(Bruni & Fernández 2017: no match features), AB-LSTM-bi-SLP (no hidden layer), GRU-uni-MLP
(RUBER's unreferenced scorer, Tao et al. 2018: Bi-GRU, last states, ``qᵀMr``, MLP),
Bi-LSTM-bi-MLP (no attention: last states) and AB-LSTM-uni-MLP (``qᵀMr`` only). Query and reply
share one sentence encoder, as the paper applies "the sentence model above" to both.

Data (seed 003 §3.1): the real pairs are split 5% test, then 90:10 train:validation; every split
gets one random negative per real pair (1:1), its response drawn from another pair *of the same
split*, so no test response is seen in training. Early stopping keeps the weights of the epoch with
the lowest validation loss. The paper's hyper-parameters (§3.2) are the defaults.

RUBER (Tao et al. 2018, "RUBER: An Unsupervised Method for Automatic Evaluation of Open-Domain
Dialog Systems"): the referenced score is the cosine between the ``[max-pool; min-pool]`` of the
word embeddings of the reply and of the reference; each score is min-max normalised over the scored
set and the two are blended by their min, max, arithmetic or geometric mean (:func:`ruber_blend`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metrics.scorers.discriminator.config import (
    CONFIG_FILE,
    PAD,
    REPORT_FILE,
    TABLE2_MODELS,
    UNK,
    VOCAB_FILE,
    WEIGHTS_FILE,
    BlendMethod,
    DiscriminatorConfig,
    tokenize,
)

if TYPE_CHECKING:
    from metrics.scorers.discriminator.model import (
        ClassificationReport,
        Discriminator,
        DiscriminatorNet,
        TrainingResult,
        format_table2,
        load_vectors,
        ruber_blend,
        train_discriminator,
        train_table2,
    )

# Loaded on first use (PEP 562): the network and its training need torch, and the settings above
# are imported by web forms that must not load it.
_TORCH_NAMES = {
    "ClassificationReport",
    "Discriminator",
    "DiscriminatorNet",
    "TrainingResult",
    "format_table2",
    "load_vectors",
    "ruber_blend",
    "train_discriminator",
    "train_table2",
}

__all__ = [
    "CONFIG_FILE",
    "PAD",
    "REPORT_FILE",
    "TABLE2_MODELS",
    "UNK",
    "VOCAB_FILE",
    "WEIGHTS_FILE",
    "BlendMethod",
    "ClassificationReport",
    "Discriminator",
    "DiscriminatorConfig",
    "DiscriminatorNet",
    "TrainingResult",
    "format_table2",
    "load_vectors",
    "ruber_blend",
    "tokenize",
    "train_discriminator",
    "train_table2",
]


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        from metrics.scorers.discriminator import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
