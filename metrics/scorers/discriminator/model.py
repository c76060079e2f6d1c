"""The discriminator network, its training and scoring, and RUBER's blend (torch; see the
package's documentation)."""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from metrics.scorers.base import MetricUnavailable
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
from metrics.scorers.models import pick_device


class DiscriminatorNet(nn.Module):
    """The network of seed 003 Fig. 2 with the ablation switches of :class:`DiscriminatorConfig`."""

    def __init__(self, config: DiscriminatorConfig, vocab_size: int) -> None:
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(vocab_size, config.embedding_dim, padding_idx=0)
        recurrent = nn.LSTM if config.encoder == "lstm" else nn.GRU
        self.rnn = recurrent(
            config.embedding_dim,
            config.hidden_size,
            batch_first=True,
            bidirectional=config.bidirectional,
        )
        width = config.hidden_size * (2 if config.bidirectional else 1)
        if config.attention:
            self.attention_projection = nn.Linear(width, width)
            self.attention_vector = nn.Linear(width, 1, bias=False)
        matches = {"none": 0, "uni": 1, "bi": 2}[config.matching]
        if matches:
            self.match_qr = nn.Parameter(nn.init.xavier_uniform_(torch.empty(width, width)))
        if matches == 2:
            self.match_rq = nn.Parameter(nn.init.xavier_uniform_(torch.empty(width, width)))
        self.dropout = nn.Dropout(config.dropout)
        joined = 2 * width + matches
        if config.classifier == "mlp":
            self.classifier: nn.Module = nn.Sequential(
                nn.Linear(joined, config.mlp_hidden),
                nn.ReLU(),
                nn.Dropout(config.dropout),
                nn.Linear(config.mlp_hidden, 2),
            )
        elif config.classifier == "slp":
            self.classifier = nn.Linear(joined, 2)
        else:
            self.match_bias = nn.Parameter(torch.zeros(1))

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Sentence vectors: attention-pooled states (eqs. 10-12) or the final states."""
        embedded = self.dropout(self.embedding(ids))
        packed = pack_padded_sequence(
            embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        outputs, final = self.rnn(packed)
        if not self.config.attention:
            hidden = final[0] if isinstance(final, tuple) else final
            if self.config.bidirectional:
                return torch.cat([hidden[-2], hidden[-1]], dim=1)
            return hidden[-1]
        states, _ = pad_packed_sequence(outputs, batch_first=True, total_length=ids.size(1))
        energies = self.attention_vector(torch.tanh(self.attention_projection(states)))[..., 0]
        # Mask by length, not by the padding id: an empty text (a system turn that opens the
        # dialogue has no query) is one padding step of length 1 whose embedding is zero, the
        # empty sentence; masking it away too would leave softmax over nothing, i.e. NaN.
        positions = torch.arange(ids.size(1), device=ids.device)[None, :]
        energies = energies.masked_fill(positions >= lengths.to(ids.device)[:, None], float("-inf"))
        weights = torch.softmax(energies, dim=1)
        return (weights[..., None] * states).sum(dim=1)

    def forward(
        self,
        query_ids: torch.Tensor,
        query_lengths: torch.Tensor,
        reply_ids: torch.Tensor,
        reply_lengths: torch.Tensor,
    ) -> torch.Tensor:
        """Logits ``[batch, 2]`` (class 1 = real); their softmax is eq. 17's score."""
        q = self.encode(query_ids, query_lengths)
        r = self.encode(reply_ids, reply_lengths)
        matches = []
        if self.config.matching != "none":
            matches.append(((q @ self.match_qr) * r).sum(1, keepdim=True))  # qᵀMr, eq. 14
        if self.config.matching == "bi":
            matches.append(((r @ self.match_rq) * q).sum(1, keepdim=True))  # rᵀNq, eq. 15
        if self.config.classifier == "none":
            # Lowe et al.'s dual encoder: σ(qᵀMr + b), written as a two-class softmax.
            logit = torch.cat(matches, dim=1).sum(1, keepdim=True) + self.match_bias
            return torch.cat([torch.zeros_like(logit), logit], dim=1)
        joined = torch.cat([q, *matches, r], dim=1)  # eq. 16 without extra features
        return self.classifier(self.dropout(joined))


@dataclass(frozen=True)
class ClassificationReport:
    """Seed 003 Table 2's columns (准确率, 精确率, 召回率, F1 值), the real response the positive
    class."""

    accuracy: float
    precision: float
    recall: float
    f1: float
    examples: int

    @classmethod
    def from_predictions(cls, labels: np.ndarray, predicted: np.ndarray) -> ClassificationReport:
        labels = np.asarray(labels, dtype=bool)
        predicted = np.asarray(predicted, dtype=bool)
        true_positive = float(np.sum(labels & predicted))
        precision = true_positive / max(float(predicted.sum()), 1.0)
        recall = true_positive / max(float(labels.sum()), 1.0)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return cls(
            accuracy=float(np.mean(labels == predicted)),
            precision=precision,
            recall=recall,
            f1=f1,
            examples=len(labels),
        )


@dataclass
class Discriminator:
    """A trained discriminator: network, vocabulary and config; ``score`` gives P(real)."""

    net: DiscriminatorNet
    vocab: dict[str, int]
    config: DiscriminatorConfig
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        return next(self.net.parameters()).device

    def encode_texts(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded token ids and lengths (an empty text becomes one padding token)."""
        unk = self.vocab[UNK]
        rows = [
            [self.vocab.get(token, unk) for token in tokenize(text, self.config.language)][
                : self.config.max_tokens
            ]
            or [0]
            for text in texts
        ]
        ids = torch.zeros((len(rows), max(len(row) for row in rows)), dtype=torch.long)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = torch.tensor(row)
        return ids.to(self.device), torch.tensor([len(row) for row in rows])

    def logits(self, contexts: Sequence[str], responses: Sequence[str]) -> torch.Tensor:
        query_ids, query_lengths = self.encode_texts(contexts)
        reply_ids, reply_lengths = self.encode_texts(responses)
        return self.net(query_ids, query_lengths, reply_ids, reply_lengths)

    def score(
        self, contexts: Sequence[str], responses: Sequence[str], *, batch_size: int = 256
    ) -> np.ndarray:
        """The unreferenced metric: probability that each response really followed its context."""
        if len(contexts) != len(responses):
            raise ValueError("contexts and responses must have the same length")
        self.net.eval()
        scores = []
        with torch.inference_mode():
            for start in range(0, len(contexts), batch_size):
                logits = self.logits(
                    contexts[start : start + batch_size], responses[start : start + batch_size]
                )
                scores.append(torch.softmax(logits.float(), dim=1)[:, 1].cpu().numpy())
        return np.concatenate(scores) if scores else np.zeros(0)

    def referenced_scores(self, responses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """RUBER's referenced metric: cosine of the ``[max-pool; min-pool]`` word embeddings of
        reply and reference (the embeddings are this model's, i.e. the vectors file's, tuned)."""
        if len(responses) != len(references):
            raise ValueError("responses and references must have the same length")
        if not responses:
            return np.zeros(0)
        with torch.inference_mode():
            reply = self._pooled(responses)
            reference = self._pooled(references)
            cosine = torch.nn.functional.cosine_similarity(reply, reference, dim=1)
        return cosine.cpu().numpy().astype(float)

    def _pooled(self, texts: Sequence[str]) -> torch.Tensor:
        ids, lengths = self.encode_texts(texts)
        vectors = self.net.embedding(ids)
        valid = (torch.arange(ids.size(1))[None, :] < lengths[:, None]).to(self.device)[..., None]
        maximum = vectors.masked_fill(~valid, float("-inf")).max(dim=1).values
        minimum = vectors.masked_fill(~valid, float("inf")).min(dim=1).values
        return torch.cat([maximum, minimum], dim=1)

    def ruber_scores(
        self,
        contexts: Sequence[str],
        responses: Sequence[str],
        references: Sequence[str],
        method: BlendMethod = "arithmetic",
    ) -> np.ndarray:
        """RUBER: this model's unreferenced score blended with the referenced cosine."""
        return ruber_blend(
            self.score(contexts, responses), self.referenced_scores(responses, references), method
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``config.json``, ``vocab.json``, ``weights.pt`` and ``report.json`` to ``path``."""
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / CONFIG_FILE).write_text(json.dumps(asdict(self.config), indent=2))
        (directory / VOCAB_FILE).write_text(json.dumps(self.vocab, ensure_ascii=False))
        (directory / REPORT_FILE).write_text(json.dumps(self.report, indent=2, ensure_ascii=False))
        state = {key: value.cpu() for key, value in self.net.state_dict().items()}
        torch.save(state, directory / WEIGHTS_FILE)
        return directory

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, device: str | None = None) -> Discriminator:
        """Load a saved version; a missing or incomplete directory raises
        :class:`MetricUnavailable`."""
        directory = Path(path)
        if not directory.is_dir():
            raise MetricUnavailable(
                f"discriminator directory {os.fspath(directory)!r} does not exist"
            )
        missing = [
            name
            for name in (CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE)
            if not (directory / name).is_file()
        ]
        if missing:
            raise MetricUnavailable(
                f"discriminator directory {os.fspath(directory)!r} lacks {', '.join(missing)}"
            )
        try:
            config = DiscriminatorConfig(**json.loads((directory / CONFIG_FILE).read_text()))
            vocab = json.loads((directory / VOCAB_FILE).read_text(encoding="utf-8"))
            state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
            net = DiscriminatorNet(config, len(vocab))
            net.load_state_dict(state)
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            raise MetricUnavailable(
                f"cannot load the discriminator in {os.fspath(directory)!r}: {exc}"
            ) from exc
        report_path = directory / REPORT_FILE
        report = (
            json.loads(report_path.read_text(encoding="utf-8")) if report_path.is_file() else {}
        )
        net.to(pick_device(device)).eval()
        return cls(net=net, vocab=vocab, config=config, report=report)


def ruber_blend(
    unreferenced: Sequence[float] | np.ndarray,
    referenced: Sequence[float] | np.ndarray,
    method: BlendMethod = "arithmetic",
) -> np.ndarray:
    """RUBER's blend (Tao et al. 2018 §2.3): min-max normalise each score over the scored set, then
    take the min, max, arithmetic or geometric mean. A set whose scores are all equal carries no
    ranking and normalises to 0.5."""
    normalised = [
        _min_max(np.asarray(scores, dtype=float)) for scores in (unreferenced, referenced)
    ]
    if normalised[0].shape != normalised[1].shape:
        raise ValueError("unreferenced and referenced scores must have the same length")
    pair = np.stack(normalised)
    if method == "min":
        return pair.min(axis=0)
    if method == "max":
        return pair.max(axis=0)
    if method == "arithmetic":
        return pair.mean(axis=0)
    if method == "geometric":
        return np.sqrt(pair[0] * pair[1])
    raise ValueError(f"method must be 'min', 'max', 'arithmetic' or 'geometric', not {method!r}")


def _min_max(scores: np.ndarray) -> np.ndarray:
    if scores.size == 0:
        return scores
    low, high = scores.min(), scores.max()
    if high - low < 1e-12:
        return np.full_like(scores, 0.5)
    return (scores - low) / (high - low)


def load_vectors(
    path: str | os.PathLike[str], vocab: Mapping[str, int], *, seed: int = 0
) -> torch.Tensor:
    """An embedding matrix for ``vocab`` from a text vectors file (word2vec text, GloVe, fastText
    ``.vec``: ``word v1 v2 ...`` per line, an optional ``count dim`` header). Words the file lacks
    are initialised at random, as seed 003 §3.2 does for unseen words; the padding row is zero."""
    file = Path(path)
    if not file.is_file():
        raise MetricUnavailable(f"word vectors file {os.fspath(file)!r} does not exist")
    found: dict[int, np.ndarray] = {}
    dimension = None
    with file.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            parts = line.rstrip().split(" ")
            if number == 1 and len(parts) == 2 and all(part.isdigit() for part in parts):
                continue
            if len(parts) < 2:
                continue
            if dimension is None:
                dimension = len(parts) - 1
            if len(parts) - 1 != dimension:
                raise ValueError(
                    f"{os.fspath(file)!r} line {number}: {len(parts) - 1} values, expected "
                    f"{dimension}"
                )
            index = vocab.get(parts[0])
            if index is not None and index not in found:
                found[index] = np.asarray(parts[1:], dtype=np.float32)
    if dimension is None:
        raise ValueError(f"{os.fspath(file)!r} holds no vectors")
    generator = torch.Generator().manual_seed(seed)
    matrix = torch.randn((len(vocab), dimension), generator=generator) * 0.1
    for index, vector in found.items():
        matrix[index] = torch.from_numpy(vector)
    matrix[vocab[PAD]] = 0.0
    return matrix


@dataclass
class TrainingResult:
    """A trained model with its test and validation reports (seed 003 Table 2 layout)."""

    model: Discriminator
    test: ClassificationReport
    validation: ClassificationReport
    best_epoch: int
    history: list[dict[str, float]]
    sizes: dict[str, int]


def train_discriminator(
    contexts: Sequence[str],
    responses: Sequence[str],
    config: DiscriminatorConfig | None = None,
    *,
    vectors: str | os.PathLike[str] | None = None,
    seed: int = 0,
    device: str | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> TrainingResult:
    """Train on real (context, response) pairs with 1:1 random negatives (seed 003 §3.1-3.2).

    ``vectors`` initialises the embeddings from a text vectors file (whose dimension then replaces
    ``config.embedding_dim``); otherwise they start random. Seeded: the same inputs, seed and
    device give the same model. ``on_epoch`` receives each epoch's losses as it ends (progress).
    """
    config = config or DiscriminatorConfig()
    if len(contexts) != len(responses):
        raise ValueError("contexts and responses must have the same length")
    if len(contexts) < 40:
        # Fewer leave a one-pair test split, whose only candidate negative is its own response.
        raise ValueError("need at least 40 pairs for the test/validation/train splits")
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    pairs = {
        name: _with_negatives(contexts, responses, indices, rng)
        for name, indices in _splits(len(contexts), rng).items()
    }
    model, config = _untrained_model(pairs["train"], config, vectors, seed, device)
    best_epoch, history = _fit(model, pairs, config, rng, on_epoch)
    test = _evaluate(model, pairs["test"])
    validation = _evaluate(model, pairs["validation"])
    sizes = {name: len(labels) for name, (_, _, labels) in pairs.items()}
    model.report = {
        "test": asdict(test),
        "validation": asdict(validation),
        "best_epoch": best_epoch,
        "sizes": sizes,
        "seed": seed,
    }
    return TrainingResult(
        model=model,
        test=test,
        validation=validation,
        best_epoch=best_epoch,
        history=history,
        sizes=sizes,
    )


_Pairs = tuple[list[str], list[str], list[int]]  # contexts, responses, labels (1 = real)


def _splits(size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Shuffled indices: 5% test, then 10% of the rest validation, the remainder training."""
    order = rng.permutation(size)
    test_size = max(1, round(0.05 * len(order)))
    rest = order[test_size:]
    validation_size = max(1, round(0.1 * len(rest)))
    return {
        "train": rest[validation_size:],
        "validation": rest[:validation_size],
        "test": order[:test_size],
    }


def _untrained_model(
    train: _Pairs,
    config: DiscriminatorConfig,
    vectors: str | os.PathLike[str] | None,
    seed: int,
    device: str | None,
) -> tuple[Discriminator, DiscriminatorConfig]:
    """The model on its device, its vocabulary from the training pairs and its embeddings from
    ``vectors`` when given (whose dimension then replaces ``config.embedding_dim``)."""
    vocab = _build_vocab(train[0] + train[1], config)
    embeddings = None
    if vectors is not None:
        embeddings = load_vectors(vectors, vocab, seed=seed)
        config = replace(config, embedding_dim=embeddings.shape[1])
    net = DiscriminatorNet(config, len(vocab))
    if embeddings is not None:
        net.embedding.weight.data.copy_(embeddings)
    return Discriminator(net=net.to(pick_device(device)), vocab=vocab, config=config), config


def _fit(
    model: Discriminator,
    pairs: dict[str, _Pairs],
    config: DiscriminatorConfig,
    rng: np.random.Generator,
    on_epoch: Callable[[dict[str, float]], None] | None,
) -> tuple[int, list[dict[str, float]]]:
    """Train until the validation loss stops improving for ``config.patience`` epochs, then keep
    the best epoch's weights; the best epoch and each epoch's losses."""
    net = model.net
    # Adam's weight_decay adds l2·w to the gradient: the L2 penalty of seed 003 §2.2.
    optimiser = torch.optim.Adam(net.parameters(), lr=config.learning_rate, weight_decay=config.l2)
    loss_function = nn.CrossEntropyLoss()
    best_loss, best_epoch, best_state = math.inf, 0, None
    history: list[dict[str, float]] = []
    for epoch in range(1, config.max_epochs + 1):
        train_loss = _epoch(model, pairs["train"], config, rng, optimiser, loss_function)
        validation_loss = _loss(model, pairs["validation"], loss_function)
        history.append(
            {"epoch": epoch, "train_loss": train_loss, "validation_loss": validation_loss}
        )
        if on_epoch is not None:
            on_epoch(history[-1])
        if validation_loss < best_loss - 1e-6:
            best_loss, best_epoch = validation_loss, epoch
            best_state = {key: value.detach().clone() for key, value in net.state_dict().items()}
        elif epoch - best_epoch >= config.patience:
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return best_epoch, history


def _epoch(
    model: Discriminator,
    train: _Pairs,
    config: DiscriminatorConfig,
    rng: np.random.Generator,
    optimiser: torch.optim.Optimizer,
    loss_function: nn.Module,
) -> float:
    """One pass over the training pairs in shuffled batches; the mean training loss."""
    train_contexts, train_responses, train_labels = train
    model.net.train()
    total = 0.0
    for batch in np.array_split(
        rng.permutation(len(train_labels)),
        max(1, math.ceil(len(train_labels) / config.batch_size)),
    ):
        logits = model.logits(
            [train_contexts[i] for i in batch], [train_responses[i] for i in batch]
        )
        labels = torch.tensor([train_labels[i] for i in batch], device=model.device)
        loss = loss_function(logits, labels)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        total += loss.item() * len(batch)
    return total / len(train_labels)


def train_table2(
    contexts: Sequence[str],
    responses: Sequence[str],
    models: Sequence[str] = tuple(TABLE2_MODELS),
    *,
    vectors: str | os.PathLike[str] | None = None,
    seed: int = 0,
    device: str | None = None,
    **overrides: Any,
) -> dict[str, TrainingResult]:
    """Train every model of seed 003 Table 2 on the same data and seed (``overrides`` apply to
    all, e.g. smaller layers)."""
    return {
        name: train_discriminator(
            contexts,
            responses,
            DiscriminatorConfig.preset(name, **overrides),
            vectors=vectors,
            seed=seed,
            device=device,
        )
        for name in models
    }


def format_table2(reports: Mapping[str, ClassificationReport], corpus: str = "") -> str:
    """A text table laid out like seed 003 Table 2: one row per model, four decimals."""
    title = f"{corpus}: " if corpus else ""
    lines = [
        f"{title}{'model':<18}{'accuracy':>10}{'precision':>11}{'recall':>9}{'F1':>9}",
    ]
    for name, report in reports.items():
        lines.append(
            f"{'':<{len(title)}}{name:<18}{report.accuracy:>10.4f}{report.precision:>11.4f}"
            f"{report.recall:>9.4f}{report.f1:>9.4f}"
        )
    return "\n".join(lines)


def _with_negatives(
    contexts: Sequence[str],
    responses: Sequence[str],
    indices: np.ndarray,
    rng: np.random.Generator,
) -> tuple[list[str], list[str], list[int]]:
    """The split's real pairs plus one random negative each: the response of another pair of the
    split, re-drawn (a few times) while it equals the real response."""
    chosen_contexts = [contexts[i] for i in indices]
    chosen_responses = [responses[i] for i in indices]
    negatives = []
    for position, real in enumerate(chosen_responses):
        candidate = real
        for _ in range(10):
            other = int(rng.integers(len(indices)))
            candidate = chosen_responses[other]
            if other != position and candidate != real:
                break
        negatives.append(candidate)
    return (
        chosen_contexts + chosen_contexts,
        chosen_responses + negatives,
        [1] * len(indices) + [0] * len(indices),
    )


def _build_vocab(texts: Sequence[str], config: DiscriminatorConfig) -> dict[str, int]:
    counts = Counter(token for text in texts for token in tokenize(text, config.language))
    vocab = {PAD: 0, UNK: 1}
    for token, _ in counts.most_common(config.max_vocab):
        vocab.setdefault(token, len(vocab))
    return vocab


def _loss(
    model: Discriminator, pairs: tuple[list[str], list[str], list[int]], loss_function: nn.Module
) -> float:
    model.net.eval()
    total = 0.0
    with torch.inference_mode():
        for start in range(0, len(pairs[2]), model.config.batch_size):
            end = start + model.config.batch_size
            logits = model.logits(pairs[0][start:end], pairs[1][start:end])
            labels = torch.tensor(pairs[2][start:end], device=model.device)
            total += float(loss_function(logits, labels).item()) * len(labels)
    return total / len(pairs[2])


def _evaluate(
    model: Discriminator, pairs: tuple[list[str], list[str], list[int]]
) -> ClassificationReport:
    probabilities = model.score(pairs[0], pairs[1])
    return ClassificationReport.from_predictions(np.asarray(pairs[2]), probabilities >= 0.5)
