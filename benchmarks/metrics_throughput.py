"""Throughput of the metric kernels against their reference implementations (prints figures).

    python benchmarks/metrics_throughput.py [--pairs 100000] [--reference-pairs 20000]
        [--bert-systems 14] [--bert-pairs 300] [--skip-bertscore]

Lexical part: ``--pairs`` Chinese (response, reference) pairs, 5-40 characters, through every
lexical metric, character tokens (the zh default). Ours: one ``score_batch`` call per metric on a
batch whose tokenization and integer encoding are done once (timed on their own, and all metrics
together in one ``score`` call from raw text, the figure issue 12's 4 s target is about). Times
are CPU seconds of this process (wall seconds beside them; the load average is printed): on a
shared machine the wall clock mostly measures the other processes. The
reference implementation of each metric runs on the first ``--reference-pairs`` of the same
pairs, with the same tokens (0 = all): sacrebleu for BLEU, rouge-score (given our tokenizer) for
ROUGE-N/L, nltk for METEOR, pycocoevalcap for CIDEr-D, Lin's pseudo-code in Python for ROUGE-W,
and the LIC/ParlAI-style Counter code for F1 and DIST. Both are reported in pairs per CPU second,
so a subset for the slow references still gives a fair ratio.

BERTScore part: ``--bert-systems`` systems answer the same ``--bert-pairs`` references, scored one
system after the other by ours (reference embeddings cached by the first call) and by
``bert_score.BERTScorer`` (both models loaded before timing, the two alternating system by
system), with the scores checked to agree within 1e-4. The
encoder is a randomly initialised BERT (``--bert-layers``/``--bert-hidden``, Chinese characters
as vocabulary, layer-norm biases lifted so cosines are positive as with pre-trained encoders), or
``--bert-model DIR`` for a real one. CUDA is used when available.

CPU figures are printed also in units of the CPU reference (benchmarks/cpu_reference.py, a fixed
pure-Python loop timed at the start of the run; not to be confused with the reference
implementations above): ``= x ref`` for seconds, ``pairs/ref`` for pairs per reference time.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from nltk.translate.meteor_score import meteor_score
from pycocoevalcap.cider.cider import Cider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cpu_reference import cpu_reference_s, in_ref, reference_line

from metrics.scorers import Settings, prepare, score, score_batch
from metrics.scorers import bertscore as bertscore_module
from metrics.scorers.ngrams import Encoded, encoded
from metrics.scorers.registry import LEXICAL_FAMILIES, METRICS

CHARS = (
    "的一是不了人我在有他这中大来上个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里"
    "后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从"
    "动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给"
    "等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入"
)
LEXICAL = [name for name, spec in METRICS.items() if spec.family in LEXICAL_FAMILIES]


def make_pairs(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """Responses and single references of 5-40 characters, sharing spans (so n-grams match)."""
    rng = random.Random(seed)
    hyps, refs = [], []
    for _ in range(n):
        ref = "".join(rng.choices(CHARS, k=rng.randint(5, 40)))
        a = rng.randint(0, len(ref) - 1)
        b = rng.randint(a, len(ref))
        noise = "".join(rng.choices(CHARS, k=rng.randint(0, 20)))
        hyp = (noise[: len(noise) // 2] + ref[a:b] + noise[len(noise) // 2 :])[:40]
        hyp = hyp + "".join(rng.choices(CHARS, k=max(0, 5 - len(hyp))))
        hyps.append(hyp)
        refs.append([ref])
    return hyps, refs


# Reference implementations -----------------------------------------------------------------


def ref_f1(h: list[list[str]], r: list[list[str]]) -> None:
    for hyp, ref in zip(h, r, strict=True):
        common = sum((Counter(hyp) & Counter(ref)).values())
        if common:
            p, q = common / len(hyp), common / len(ref)
            _ = 2 * p * q / (p + q)


def ref_dist(n: int) -> Callable[[list[list[str]], list[list[str]]], None]:
    def run(h: list[list[str]], r: list[list[str]]) -> None:
        corpus: Counter[tuple[str, ...]] = Counter()
        for hyp in h:
            grams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
            _ = len(grams) / max(sum(grams.values()), 1)
            corpus.update(grams)
        _ = len(corpus) / max(sum(corpus.values()), 1)

    return run


def ref_bleu(n: int) -> Callable[[list[list[str]], list[list[str]]], None]:
    from sacrebleu.metrics import BLEU

    sentence = BLEU(max_ngram_order=n, tokenize="none", effective_order=True)
    corpus = BLEU(max_ngram_order=n, tokenize="none")

    def run(h: list[list[str]], r: list[list[str]]) -> None:
        hs, rs = [" ".join(x) for x in h], [" ".join(x) for x in r]
        for hyp, ref in zip(hs, rs, strict=True):
            sentence.sentence_score(hyp, [ref])
        corpus.corpus_score(hs, [rs])

    return run


def ref_rouge(kind: str) -> Callable[[list[list[str]], list[list[str]]], None]:
    from rouge_score import rouge_scorer

    class Joined:  # our tokens, already cut: rouge-score only splits them again
        def tokenize(self, text: str) -> list[str]:
            return text.split(" ")

    scorer = rouge_scorer.RougeScorer([kind], tokenizer=Joined())

    def run(h: list[list[str]], r: list[list[str]]) -> None:
        for hyp, ref in zip(h, r, strict=True):
            scorer.score(" ".join(ref), " ".join(hyp))

    return run


def ref_rouge_w(h: list[list[str]], r: list[list[str]]) -> None:
    for x, y in zip(r, h, strict=True):
        c = [[0.0] * (len(y) + 1) for _ in range(len(x) + 1)]
        w = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
        for i in range(1, len(x) + 1):
            for j in range(1, len(y) + 1):
                if x[i - 1] == y[j - 1]:
                    k = w[i - 1][j - 1]
                    c[i][j] = c[i - 1][j - 1] + (k + 1) ** 1.2 - k**1.2
                    w[i][j] = k + 1
                else:
                    c[i][j] = max(c[i - 1][j], c[i][j - 1])


class NoWordNet:
    """nltk's meteor_score always consults a WordNet; ours runs without one (none installed)."""

    def synsets(self, word: str) -> list:
        return []


def ref_meteor(h: list[list[str]], r: list[list[str]]) -> None:
    wordnet = NoWordNet()
    for hyp, ref in zip(h, r, strict=True):
        meteor_score([ref], hyp, wordnet=wordnet)


def ref_cider(h: list[list[str]], r: list[list[str]]) -> None:
    Cider().compute_score(
        {i: [" ".join(x)] for i, x in enumerate(r)}, {i: [" ".join(x)] for i, x in enumerate(h)}
    )


REFERENCES: dict[str, tuple[str, Callable[[list[list[str]], list[list[str]]], None]]] = {
    "f1": ("Counter F1 (python)", ref_f1),
    **{f"bleu-{n}": ("sacrebleu", ref_bleu(n)) for n in range(1, 5)},
    **{f"rouge-{n}": ("rouge-score", ref_rouge(f"rouge{n}")) for n in range(1, 5)},
    "rouge-l": ("rouge-score", ref_rouge("rougeL")),
    "rouge-w": ("Lin WLCS (python)", ref_rouge_w),
    "meteor": ("nltk", ref_meteor),
    "dist-1": ("Counter (python)", ref_dist(1)),
    "dist-2": ("Counter (python)", ref_dist(2)),
    "cider": ("pycocoevalcap", ref_cider),
}


def _timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``run()``. Everything here is single-threaded, so on a shared,
    loaded machine the CPU time is what the code costs and the wall time mostly measures the
    other processes."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def lexical(pairs: int, reference_pairs: int, ref: float) -> None:
    hyps, refs = make_pairs(pairs)
    zh = Settings(lang="zh")
    print(
        f"Lexical metrics, {pairs:,} zh pairs (5-40 chars), references on "
        f"{reference_pairs or pairs:,} of them; load average {_load()}"
    )
    # First-call costs (imports, numba loading its compiled kernels, the allocator growing to
    # this size) out of the timings:
    score(LEXICAL, hyps[:2000], refs[:2000], settings=zh)
    batch = prepare(hyps, refs, settings=zh)
    wall, cpu = _timed(lambda: encoded(batch))
    enc: Encoded = encoded(batch)
    print(
        f"  tokenize + integer encoding from raw text (shared by all metrics, excluded below): "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU {in_ref(cpu, ref)} (target <= 1 s)"
    )
    tokens = (batch.hyp_tokens, batch.ref_tokens)  # the same tokens, for the references
    for _, run in REFERENCES.values():
        run(tokens[0][:200], tokens[1][:200])
    k = reference_pairs or pairs
    tok_h, tok_r = tokens[0][:k], tokens[1][:k]  # one reference per pair: units are pairs
    print(
        f"  {'metric':<10}{'ours CPU s':>11}{'wall s':>8}{'pairs/CPU s':>13}{'reference':>22}"
        f"{'pairs/CPU s':>13}{'ratio':>8}{'ours pairs/ref':>16}"
    )
    for name in LEXICAL:
        # A fresh batch per metric holding the token ids (as the references get the tokens):
        # each metric pays for its own n-gram ids and statistics, which metrics of one call
        # otherwise share.
        fresh = prepare(hyps, refs, settings=zh)
        fresh.cached("encoded", lambda: Encoded(enc.ids, enc.lens, enc.vocab, len(hyps), enc.owner))
        wall, ours = _timed(lambda: score_batch([name], fresh))  # noqa: B023
        line = f"  {name:<10}{ours:>11.2f}{wall:>8.2f}{pairs / ours:>13,.0f}"
        if name in REFERENCES:
            label, run = REFERENCES[name]
            _, theirs = _timed(lambda: run(tok_h, tok_r))  # noqa: B023
            ratio = (pairs / ours) / (k / theirs)
            line += f"{label:>22}{k / theirs:>13,.0f}{ratio:>7.1f}x"
        else:
            line += " " * 43
        print(f"{line}{pairs / ours * ref:>16,.0f}")
    wall, cpu = _timed(lambda: score(LEXICAL, hyps, refs, settings=zh))
    print(
        f"  all {len(LEXICAL)} lexical metrics together from raw text: {wall:.2f} s wall, "
        f"{cpu:.2f} s CPU {in_ref(cpu, ref)} (target <= 4 s for 100,000 pairs on a quiet "
        f"machine); "
        f"load average {_load()}"
    )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _random_bert(directory: Path, layers: int, hidden: int) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(CHARS))]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(directory / "vocab.txt"), model_max_length=512).save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
    )
    model = BertModel(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("LayerNorm.bias"):
                param.fill_(1.0)
    model.save_pretrained(directory)
    return directory


def bertscore(
    systems: int, pairs: int, model: str | None, layers: int, hidden: int, ref: float
) -> None:
    import torch
    from bert_score import BERTScorer

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(model) if model else _random_bert(Path(tmp), layers, hidden)
        layer = layers if not model else None
        device = "cuda" if torch.cuda.is_available() else "cpu"
        _, refs = make_pairs(pairs, seed=1)
        outputs = [make_pairs(pairs, seed=100 + s)[0] for s in range(systems)]
        settings = Settings(bertscore_model=str(model_dir), bertscore_layer=layer, device=device)
        names = ["bertscore-p", "bertscore-r", "bertscore-f1"]
        # Both models load before timing; the systems alternate between the two implementations
        # so that load on a shared machine affects both alike.
        bertscore_module._SCORERS.clear()
        ours_scorer = bertscore_module.scorer_for(prepare(["x"], [["y"]], settings=settings))
        reference = BERTScorer(
            model_type=str(model_dir), num_layers=ours_scorer.layer, device=device, nthreads=0
        )
        ours, theirs, ours_s, theirs_s = [], [], 0.0, 0.0
        for hyps in outputs:
            started = time.perf_counter()
            ours.append(score(names, hyps, refs, settings=settings))
            ours_s += time.perf_counter() - started
            started = time.perf_counter()
            theirs.append(reference.score(hyps, refs))
            theirs_s += time.perf_counter() - started
    worst = 0.0
    for mine, (p, r, f) in zip(ours, theirs, strict=True):
        for name, want in zip(names, (p, r, f), strict=True):
            worst = max(worst, float(np.abs(mine[name].per_response - want.numpy()).max()))
    print(
        f"BERTScore, {systems} systems x {pairs} pairs sharing references, device {device}, "
        f"{'model ' + model if model else f'random BERT {layers} layers x {hidden}'}"
    )
    print(
        f"  ours {ours_s:.2f} s{'' if device != 'cpu' else ' ' + in_ref(ours_s, ref)}, "
        f"bert_score {theirs_s:.2f} s: {theirs_s / ours_s:.2f}x "
        f"(target >= 1.5x); max |difference| {worst:.2e} (target <= 1e-4)"
        f"{'' if worst <= 1e-4 and not math.isnan(worst) else '  <-- DISAGREES'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument(
        "--reference-pairs",
        type=int,
        default=20_000,
        help="pairs the reference implementations run on (0 = all)",
    )
    parser.add_argument("--bert-systems", type=int, default=14)
    parser.add_argument("--bert-pairs", type=int, default=300)
    parser.add_argument("--bert-model", help="a local encoder directory instead of a random one")
    parser.add_argument("--bert-layers", type=int, default=4)
    parser.add_argument("--bert-hidden", type=int, default=256)
    parser.add_argument("--skip-bertscore", action="store_true")
    args = parser.parse_args()
    ref = cpu_reference_s()
    print(reference_line(ref))
    lexical(args.pairs, min(args.reference_pairs, args.pairs), ref)
    if not args.skip_bertscore:
        bertscore(
            args.bert_systems,
            args.bert_pairs,
            args.bert_model,
            args.bert_layers,
            args.bert_hidden,
            ref,
        )


if __name__ == "__main__":
    main()
