"""Follow-up likelihoods: the causal LM, the sequence layouts and the KV-cached scoring kernel."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from metrics.scorers.models import load_pretrained, pick_device, position_limit, resolve_model

if TYPE_CHECKING:
    import torch

Layout = Literal["fed", "eos"]
LAYOUTS: tuple[Layout, ...] = ("fed", "eos")
Normalisation = Literal["mean", "sum"]
NORMALISATIONS: tuple[Normalisation, ...] = ("mean", "sum")


@dataclass(frozen=True)
class FollowupLikelihoods:
    """Summed negative log-likelihoods (nats) of follow-ups after each dialogue."""

    followups: tuple[str, ...]
    followup_nll: np.ndarray  # [dialogues, follow-ups]: summed NLL of the follow-up's tokens
    followup_tokens: np.ndarray  # [follow-ups]
    history_nll: np.ndarray  # [dialogues]: summed NLL of the history's tokens after the first
    history_tokens: np.ndarray  # [dialogues]

    def mean_nll(self, *, conditional: bool) -> np.ndarray:
        """Mean token NLL per (dialogue, follow-up): of the follow-up given the history
        (FED-Cond, FULL) or of the whole sequence (FED, the loss ``shikib/fed`` scores)."""
        return self.nll(conditional=conditional, normalisation="mean")

    def nll(self, *, conditional: bool, normalisation: Normalisation = "mean") -> np.ndarray:
        """NLL per (dialogue, follow-up), per-token ``mean`` or token ``sum`` (module doc)."""
        if normalisation not in NORMALISATIONS:
            raise ValueError(
                f"normalisation must be one of {NORMALISATIONS}, not {normalisation!r}"
            )
        if conditional:
            if normalisation == "sum":
                return self.followup_nll.copy()
            return self.followup_nll / self.followup_tokens[None, :]
        total = self.history_nll[:, None] + self.followup_nll
        if normalisation == "sum":
            return total
        return total / (self.history_tokens[:, None] + self.followup_tokens[None, :])


class FollowupScorer:
    """A causal LM and its tokenizer, scoring follow-ups after dialogues (see the module doc)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        device: str | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        layout: Layout = "fed",
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
        self.layout: Layout = layout
        self.device = pick_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        separator = tokenizer.eos_token_id
        if separator is None:
            separator = tokenizer.sep_token_id
        if separator is None:
            raise ValueError("the tokenizer has neither an end-of-sequence nor a separator token")
        self.separator: int = separator
        self._separator_text = tokenizer.convert_ids_to_tokens(separator)
        if layout == "fed":
            probe = self._ids(f"{self._separator_text} x {self._separator_text}")
            if not probe or probe[0] != separator or probe[-1] != separator:
                raise ValueError(
                    f"layout fed writes the separator {self._separator_text!r} as text, and this "
                    "tokenizer does not read it back as one token; use layout eos"
                )
        limit = position_limit(tokenizer, model)
        if max_length is not None and max_length > limit:
            raise ValueError(f"max_length {max_length} exceeds the model's limit {limit}")
        self.max_length = max_length or limit
        self.batch_size = batch_size
        self._encoded: dict[str, list[int]] = {}
        self._turns: dict[str, list[int]] = {}
        self._followups: dict[str, list[int]] = {}

    @classmethod
    def load(
        cls,
        model_dir: str | os.PathLike[str],
        *,
        device: str | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        layout: Layout = "fed",
    ) -> FollowupScorer:
        """Load a local causal LM directory (or a hub id already in the local cache) through
        ``metrics.scorers.models``; a missing or unreadable one raises ``MetricUnavailable`` with
        the reason. Nothing is downloaded."""
        path = resolve_model(os.fspath(model_dir), "model_dir", "causal LM")
        chosen = str(pick_device(device))
        tokenizer, model = load_pretrained("causal-lm", path, chosen, "causal LM")
        return cls(
            model,
            tokenizer,
            device=chosen,
            max_length=max_length,
            batch_size=batch_size,
            layout=layout,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of one utterance, without special tokens (memoised: follow-ups repeat)."""
        ids = self._encoded.get(text)
        if ids is None:
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            self._encoded[text] = ids
        return ids

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def turn_ids(self, turn: str) -> list[int]:
        """A turn's ids between two separators: ``" t "`` (``fed`` layout) or ``t`` (``eos``)."""
        if self.layout == "eos":
            return self.encode(turn)
        ids = self._turns.get(turn)
        if ids is None:
            sep = self._separator_text
            ids = self._turns[turn] = self._ids(f"{sep} {turn} {sep}")[1:-1]
        return ids

    def followup_ids(self, text: str) -> list[int]:
        """A follow-up's ids after the last separator: ``" f"`` (``fed``) or ``f`` (``eos``)."""
        if self.layout == "eos":
            return self.encode(text)
        ids = self._followups.get(text)
        if ids is None:
            ids = self._followups[text] = self._ids(f"{self._separator_text} {text}")[1:]
        return ids

    def history_ids(self, dialogue: Sequence[str], budget: int) -> list[int]:
        """``SEP t1 SEP ... tn SEP``, keeping the last ``budget`` tokens with a ``SEP`` first."""
        ids = [self.separator]
        for turn in dialogue:
            ids.extend(self.turn_ids(turn))
            ids.append(self.separator)
        if len(ids) > budget:
            ids = [self.separator, *ids[len(ids) - budget + 1 :]]
        return ids

    def likelihoods(
        self,
        dialogues: Sequence[Sequence[str]],
        followups: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> FollowupLikelihoods:
        """NLL of every follow-up after every dialogue, via the shared KV cache or the plain
        path."""
        import torch  # here, not at the top: importing the scorers must not load torch

        followups = tuple(dict.fromkeys(followups))
        encoded = [self.followup_ids(text) for text in followups]
        empty = [text for text, ids in zip(followups, encoded, strict=True) if not ids]
        if empty:
            raise ValueError(f"follow-up(s) {empty} tokenize to nothing")
        budget = self.max_length - max(len(ids) for ids in encoded)
        if budget < 2:
            raise ValueError(
                f"the longest follow-up leaves {budget} token(s) of history within max_length "
                f"{self.max_length}"
            )
        followup_nll = np.zeros((len(dialogues), len(followups)))
        history_nll = np.zeros(len(dialogues))
        history_tokens = np.zeros(len(dialogues))
        score = self._score_cached if use_cache else self._score_plain
        with torch.inference_mode():
            for row, dialogue in enumerate(dialogues):
                history = self.history_ids(dialogue, budget)
                history_nll[row], followup_nll[row] = score(history, encoded)
                history_tokens[row] = len(history) - 1
        return FollowupLikelihoods(
            followups=followups,
            followup_nll=followup_nll,
            followup_tokens=np.array([len(ids) for ids in encoded], dtype=float),
            history_nll=history_nll,
            history_tokens=history_tokens,
        )

    def _score_cached(
        self, history: list[int], followups: list[list[int]]
    ) -> tuple[float, np.ndarray]:
        import torch

        history_tensor = torch.tensor([history], device=self.device)
        output = self.model(input_ids=history_tensor, use_cache=True)
        history_nll = _token_nll(output.logits[0, :-1], history_tensor[0, 1:]).sum().item()
        # The history's last position predicts every follow-up's first token.
        last_logits = output.logits[0, -1]
        sums = []
        for start in range(0, len(followups), self.batch_size):
            chunk = followups[start : start + self.batch_size]
            ids, mask = self._pad(chunk)
            # batch_repeat_interleave works in place: each chunk gets its own copy of the cache.
            cache = copy.deepcopy(output.past_key_values)
            cache.batch_repeat_interleave(len(chunk))
            attention = torch.cat(
                [torch.ones(len(chunk), len(history), dtype=mask.dtype, device=self.device), mask],
                dim=1,
            )
            logits = self.model(
                input_ids=ids, past_key_values=cache, attention_mask=attention
            ).logits
            predicting = torch.cat([last_logits.expand(len(chunk), 1, -1), logits[:, :-1]], dim=1)
            sums.append((_token_nll(predicting, ids) * mask).sum(1))
        return history_nll, torch.cat(sums).double().cpu().numpy()

    def _score_plain(
        self, history: list[int], followups: list[list[int]]
    ) -> tuple[float, np.ndarray]:
        import torch

        size = len(history)
        sums = []
        history_nll = 0.0
        for start in range(0, len(followups), self.batch_size):
            chunk = followups[start : start + self.batch_size]
            ids, mask = self._pad([history + followup for followup in chunk])
            logits = self.model(input_ids=ids, attention_mask=mask).logits
            # Every row repeats the history; its NLL is read from the first row.
            history_nll = _token_nll(logits[0, : size - 1], ids[0, 1:size]).sum().item()
            token_nll = _token_nll(logits[:, size - 1 : -1], ids[:, size:])
            sums.append((token_nll * mask[:, size:]).sum(1))
        return history_nll, torch.cat(sums).double().cpu().numpy()

    def _pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        # Right padding: in a causal model a pad never precedes a real token, so it cannot change
        # a real token's prediction; the mask also drops the pads from the sums.
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.separator, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = torch.tensor(row)
            mask[index, : len(row)] = 1
        return ids.to(self.device), mask.to(self.device)


def _token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-log softmax(logits)[target]`` per position, in float32 whatever the model's dtype."""
    import torch

    logits = logits.float()
    return torch.logsumexp(logits, dim=-1) - logits.gather(-1, targets[..., None])[..., 0]
