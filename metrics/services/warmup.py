"""Warm a metrics worker process: load what the MSDE 16 kernels load on first use.

Measured on the embedded defaults (issue 11 item 15): a 16-response MSDE-16 run's lexical chunks
take 0.03-0.2 s each, but the first chunk of a family in a fresh worker process pays its one-off
loads — ROUGE's tokenizer dictionary ~2 s, METEOR's WordNet ~4.6 s, the offline sentence encoder
~6.7 s — which made a small run take ~20 s. Each pool process therefore scores a two-response
batch per language in a background thread as soon as it starts (a thread, because Celery kills a
child whose start-up takes longer than ``worker_proc_alive_timeout``), so the first real chunk
finds the kernels loaded. Turn it off with ``METRICS_WORKER_WARMUP=false``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings as django_settings

logger = logging.getLogger(__name__)

WARMUP_LANGUAGES = ("zh", "en")
_TEXTS = {
    "zh": (["今天天气很好。", "我喜欢看电影。"], [["今天天气不错。"], ["我也喜欢电影。"]]),
    "en": (["The weather is nice.", "I like films."], [["Nice weather."], ["I like movies."]]),
}


def metrics_warm_up(*, languages: tuple[str, ...] = WARMUP_LANGUAGES) -> dict[str, float]:
    """Score a tiny batch with every MSDE 16 metric in each language (their default models, as
    a run without settings would use); the seconds each language took. Failures are logged,
    never raised: a worker that cannot warm up still scores (cold)."""
    from metrics.scorers.base import Settings
    from metrics.scorers.registry import PRESETS, prepare, score_batch
    from metrics.services.metric_runs import check_settings

    took: dict[str, float] = {}
    for lang in languages:
        started = time.perf_counter()
        try:
            hyps, refs = _TEXTS[lang]
            run_settings = Settings.from_dict(check_settings({"lang": lang}))
            score_batch(PRESETS["msde16"], prepare(hyps, refs, settings=run_settings))
        except Exception:  # a warm-up must never stop the worker
            logger.exception("metrics warm-up failed for lang=%s", lang)
        took[lang] = round(time.perf_counter() - started, 2)
    logger.info("metrics warm-up done: %s", took)
    return took


def start_warm_up(**_signal_kwargs: Any) -> threading.Thread | None:
    """`worker_process_init` receiver: warm up in a daemon thread when the setting is on."""
    if not getattr(django_settings, "METRICS_WORKER_WARMUP", False):
        return None
    thread = threading.Thread(target=metrics_warm_up, name="metrics-warm-up", daemon=True)
    thread.start()
    return thread
