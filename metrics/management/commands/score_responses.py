"""``python manage.py score_responses --input FILE.jsonl --metrics NAME,... [--lang zh]
[--profile default|lic] --output OUT.jsonl [--summary SUMMARY.json]`` (no server needed).

A thin wrapper: the work is :func:`metrics.scorers.offline.score_file`; the input format and the
metrics are described in docs/metrics.md.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from metrics.scorers import METRICS, Settings
from metrics.scorers.base import BLEU_SMOOTHINGS, EMBEDDING_OOV, METEOR_SYNONYMS
from metrics.scorers.offline import score_file
from metrics.scorers.text import LANGUAGES, PROFILES, TOKENIZERS

# option name -> Settings field, for the options that map one to one
_SETTINGS = {
    "lang": "lang",
    "profile": "profile",
    "tokenizer": "tokenizer",
    "lowercase": "lowercase",
    "smoothing": "bleu_smoothing",
    "rouge_beta": "rouge_beta",
    "meteor_synonyms": "meteor_synonyms",
    "word_vectors": "word_vectors",
    "embedding_oov": "embedding_oov",
    "sentence_model": "sentence_model",
    "bertscore_model": "bertscore_model",
    "bertscore_layer": "bertscore_layer",
    "bertscore_idf": "bertscore_idf",
    "bertscore_baseline": "bertscore_baseline",
    "bleurt_model": "bleurt_model",
    "perplexity_model": "perplexity_model",
    "perplexity_context": "perplexity_context",
    "device": "device",
    "batch_size": "batch_size",
}


class Command(BaseCommand):
    help = (
        "Score responses in a JSONL file (id, hypothesis, references, optional context) with "
        f"automatic metrics; metrics: {' '.join(METRICS)}."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--input", required=True, type=Path)
        parser.add_argument("--metrics", required=True, help="comma-separated metric names")
        parser.add_argument("--output", required=True, type=Path)
        parser.add_argument("--summary", type=Path)
        parser.add_argument("--lang", default="zh", choices=LANGUAGES)
        parser.add_argument("--profile", default="default", choices=PROFILES)
        parser.add_argument(
            "--tokenizer",
            choices=TOKENIZERS,
            help="default: the language's (zh-char, ja-char, en-13a)",
        )
        parser.add_argument("--lowercase", action="store_true")
        parser.add_argument(
            "--smoothing",
            default="exp",
            choices=BLEU_SMOOTHINGS,
            help="sentence-level BLEU smoothing",
        )
        parser.add_argument("--rouge-beta", type=float, default=1.0)
        parser.add_argument("--meteor-synonyms", default="auto", choices=METEOR_SYNONYMS)
        parser.add_argument("--word-vectors", help="word2vec/fastText file or model directory")
        parser.add_argument("--embedding-oov", default="mean", choices=EMBEDDING_OOV)
        parser.add_argument("--sentence-model")
        parser.add_argument("--bertscore-model")
        parser.add_argument("--bertscore-layer", type=int)
        parser.add_argument("--bertscore-idf", action="store_true")
        parser.add_argument("--bertscore-baseline", help="bert_score baseline file (rescaling)")
        parser.add_argument("--bleurt-model")
        parser.add_argument("--perplexity-model")
        parser.add_argument("--perplexity-context", action="store_true")
        parser.add_argument("--device", help="default: cuda when available, else cpu")
        parser.add_argument("--batch-size", type=int, default=64)

    def handle(self, *args: Any, **options: Any) -> None:
        names = [n.strip() for n in options["metrics"].split(",") if n.strip()]
        try:
            settings = Settings(**{field: options[opt] for opt, field in _SETTINGS.items()})
            summary = score_file(
                input_path=options["input"],
                output_path=options["output"],
                metrics=names,
                settings=settings,
                summary_path=options["summary"],
            )
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        for name, entry in summary["metrics"].items():
            if entry["status"] != "ok":
                self.stderr.write(f"{name}: {entry['status']}")
                continue
            corpus = "undefined" if entry["corpus"] is None else f"{entry['corpus']:.6g}"
            self.stdout.write(f"{name} = {corpus} ({entry['corpus_kind']})  {entry['signature']}")
        timings = summary["timings"]
        self.stdout.write(
            self.style.SUCCESS(
                f"Scored {summary['items']} items in {timings['total_s']:.2f} s "
                f"-> {options['output']}"
            )
        )
