"""Pre-flight of a metric run: which chosen metrics cannot run here, why, and how to fix that.

Runs in the web process before a run starts, so it only looks at settings and at files on disk
(model directories, the Hugging Face cache, word-vector files); it never imports torch or
loads a model (``tests/core/test_light_imports.py``). The kernels on the worker make the same
checks (``metrics.scorers.models.resolve_model``); a metric that passes here can still fail on
the worker for a reason only loading reveals (a corrupt checkpoint), and is then reported
``unavailable: <why>`` as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from metrics.scorers.base import MetricUnavailable, Settings
from metrics.scorers.models import default_models, resolve_model
from metrics.scorers.registry import METRICS


def local_models_dir() -> Path:
    """Where model directories trained on this installation live (``VAR_DIR/models/``): the
    demo's demo-quality vectors (:mod:`workspace.demo`); runs in a language without a packaged
    model default to them (:func:`metrics.scorers.models.default_models`). Tests point
    ``METRIC_MODELS_DIR`` at a folder of their own."""
    configured = getattr(django_settings, "METRIC_MODELS_DIR", None)
    return Path(configured) if configured else Path(django_settings.VAR_DIR) / "models"


# kernel -> (setting holding its model, what the model is, how to make it available)
MODEL_REQUIREMENTS: dict[str, tuple[str, str, Any]] = {
    "sentence": (
        "sentence_model",
        "sentence encoder",
        gettext_lazy(
            "设置 sentence_model 为本地句向量模型目录（如 paraphrase-multilingual-MiniLM-L12-v2）"
        ),
    ),
    "bertscore": (
        "bertscore_model",
        "BERTScore model",
        gettext_lazy("设置 bertscore_model 为本地 BERT 类模型目录（中文如 bert-base-chinese）"),
    ),
    "bleurt": (
        "bleurt_model",
        "BLEURT checkpoint",
        gettext_lazy("设置 bleurt_model 为本地 BLEURT 模型目录"),
    ),
    "perplexity": (
        "perplexity_model",
        "causal language model",
        gettext_lazy("设置 perplexity_model 为本地因果语言模型目录（如 GPT-2）"),
    ),
    "followup": (
        "followup_model",
        "causal LM",
        gettext_lazy("设置 followup_model 为本地对话语言模型目录（如 DialoGPT）"),
    ),
    "discriminator": (
        "discriminator_model",
        "discriminator",
        gettext_lazy("先在“学习型指标”页面训练判别器，再在 discriminator_model 中选择它"),
    ),
    "embedding": (
        "word_vectors",
        "word vectors",
        gettext_lazy("设置 word_vectors 为本地词向量文件（word2vec/GloVe 文本或二进制格式）"),
    ),
}


@dataclass(frozen=True)
class UnavailableMetric:
    metric: str
    reason: str  # why, from the same checks the kernels make
    fix: str  # how to make it available


@dataclass(frozen=True)
class Preflight:
    metrics: list[str]  # the chosen metrics, presets expanded
    unavailable: list[UnavailableMetric]

    @property
    def available(self) -> list[str]:
        missing = {item.metric for item in self.unavailable}
        return [name for name in self.metrics if name not in missing]

    def grouped(self) -> list[tuple[str, str, list[str]]]:
        """``(reason, fix, metrics)`` per distinct reason, in the order first met."""
        groups: dict[tuple[str, str], list[str]] = {}
        for item in self.unavailable:
            groups.setdefault((item.reason, item.fix), []).append(item.metric)
        return [(reason, fix, names) for (reason, fix), names in groups.items()]

    def summary(self) -> str:
        """E.g. "8 of 16 unavailable: no sentence encoder configured …"."""
        if not self.unavailable:
            return _("所选 %(n)d 个指标都可以计算。") % {"n": len(self.metrics)}
        reasons = "; ".join(reason for reason, _fix, _names in self.grouped())
        return _("%(k)d / %(n)d 个指标不可用：%(reasons)s") % {
            "k": len(self.unavailable),
            "n": len(self.metrics),
            "reasons": reasons,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "available": self.available,
            "unavailable": [
                {"metric": item.metric, "reason": item.reason, "fix": item.fix}
                for item in self.unavailable
            ],
            "summary": self.summary(),
        }


def _model_problem(kernel: str, settings: Settings) -> tuple[str, str] | None:
    requirement = MODEL_REQUIREMENTS.get(kernel)
    if requirement is None:
        return None
    setting, what, fix = requirement
    value = getattr(settings, setting)
    try:
        if setting == "word_vectors" and value and Path(value).expanduser().is_file():
            return None
        resolve_model(value, setting, what)
    except MetricUnavailable as exc:
        return exc.reason, str(fix)
    baseline = settings.bertscore_baseline
    if kernel == "bertscore" and baseline and not Path(baseline).expanduser().is_file():
        return (
            f"BERTScore baseline file {baseline!r} does not exist",
            _("修正 bertscore_baseline 的路径，或留空（不做基线重标定）"),
        )
    return None


def metric_run_preflight(*, metrics: Iterable[str], settings: Mapping[str, Any]) -> Preflight:
    """Check chosen metric names (already expanded and validated) against ``settings`` as a run
    would store them (language defaults for packaged models applied)."""
    values = dict(settings)
    resolved = Settings.from_dict(values)
    for key, model in default_models(resolved.lang, local_models_dir()).items():
        if not values.get(key):
            values[key] = model
    resolved = Settings.from_dict(values)
    names = list(metrics)
    unavailable: list[UnavailableMetric] = []
    problems: dict[str, tuple[str, str] | None] = {}
    for name in names:
        spec = METRICS[name]
        if resolved.lang not in spec.languages:
            unavailable.append(
                UnavailableMetric(
                    name,
                    f"not defined for language {resolved.lang!r}",
                    _("仅支持：%(langs)s") % {"langs": ", ".join(spec.languages)},
                )
            )
            continue
        if spec.kernel not in problems:
            problems[spec.kernel] = _model_problem(spec.kernel, resolved)
        problem = problems[spec.kernel]
        if problem is not None:
            unavailable.append(UnavailableMetric(name, *problem))
    return Preflight(names, unavailable)
