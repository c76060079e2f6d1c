"""Speed-up of the shared-history KV cache over the plain path for follow-up likelihood metrics.

FED-Cond over the 18 FED items scores ~45 distinct follow-ups after every dialogue. The plain path
re-encodes history + follow-up for each of them; the cached path encodes the history once and runs
all follow-ups against its key/value cache (``metrics/scorers/followup.py``). This script builds a
randomly initialised, sized-down GPT-2 with a byte-level BPE tokenizer trained in memory (no
download), scores the same dialogues both ways, checks that the scores agree and prints the timings
(on the CPU also in units of the CPU reference, benchmarks/cpu_reference.py, timed in the same run).

    .venv/bin/python benchmarks/followup_kv_cache.py [--dialogues 16] [--turns 10] [--device cpu]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from cpu_reference import cpu_reference_s, in_ref, reference_line
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from metrics.scorers.followup import FollowupScorer, followup_scores, load_followups

VOCABULARY = (
    "i you we they like love hate think know want talk about the a my your this that music movies "
    "books cats dogs weather today tomorrow work school travel food coffee really very good bad "
    "interesting boring new old favourite why how what when where because and but so"
)


def synthetic_dialogues(count: int, turns: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    words = VOCABULARY.split()
    return [
        [
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize() + "."
            for _ in range(turns)
        ]
        for _ in range(count)
    ]


def build_model(directory: Path, layers: int, width: int, heads: int) -> None:
    followups = load_followups("en")
    corpus = [t for item in followups.items for t in (*item.positive, *item.negative, item.tag)]
    corpus += [" ".join(turns) for turns in synthetic_dialogues(200, 10, seed=1)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=2000, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")
    tokenizer.save_pretrained(directory)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=1024,
        n_layer=layers,
        n_embd=width,
        n_head=heads,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(directory)


def timed(
    scorer: FollowupScorer, dialogues: list[list[str]], use_cache: bool
) -> tuple[float, np.ndarray]:
    if scorer.device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    scores = followup_scores(dialogues, scorer, "en", "fed-cond", "all", use_cache=use_cache)
    if scorer.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=16)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        build_model(Path(directory), args.layers, args.width, args.heads)
        scorer = FollowupScorer.load(directory, device=args.device)
    dialogues = synthetic_dialogues(args.dialogues, args.turns, seed=0)
    followups = load_followups("en")
    texts = {t for item in followups.items for t in (*item.positive, *item.negative)}
    history_tokens = [len(scorer.history_ids(d, scorer.max_length)) for d in dialogues]
    parameters = sum(p.numel() for p in scorer.model.parameters()) / 1e6
    print(
        f"device={scorer.device} threads={torch.get_num_threads()} torch={torch.__version__} "
        f"model: GPT-2 {args.layers} layers, width {args.width}, {parameters:.1f}M parameters"
    )
    print(
        f"{len(dialogues)} dialogues x {args.turns} turns, history {np.mean(history_tokens):.0f} "
        f"tokens on average; FED-Cond, 18 items, {len(texts)} distinct follow-ups"
    )
    timed(scorer, dialogues[:2], use_cache=True)  # warm-up (allocator, kernels)
    timed(scorer, dialogues[:2], use_cache=False)
    plain_times, cached_times = [], []
    for _ in range(args.repeats):
        seconds, plain = timed(scorer, dialogues, use_cache=False)
        plain_times.append(seconds)
        seconds, cached = timed(scorer, dialogues, use_cache=True)
        cached_times.append(seconds)
    plain_best, cached_best = min(plain_times), min(cached_times)
    on_cpu = scorer.device.type == "cpu"
    ref = cpu_reference_s()
    print(reference_line(ref))
    for label, best in (("plain path", plain_best), ("KV-cache path", cached_best)):
        per_dialogue = 1000 * best / len(dialogues)
        print(
            f"{label:<14}: {best:8.3f} s  ({per_dialogue:7.1f} ms/dialogue"
            + (f" {in_ref(per_dialogue / 1000, ref)})" if on_cpu else ")")
        )
    print(f"{'speed-up':<14}: {plain_best / cached_best:8.2f}x (best of {args.repeats})")
    print(f"max |score difference| = {np.max(np.abs(plain - cached)):.2e}")


if __name__ == "__main__":
    main()
