"""Validation of `Backend.config` per adapter, with errors that name the offending key.

Each adapter accepts a fixed set of keys; an unknown key is refused (a misspelt `temprature`
must not be silently ignored). Values are checked for type and range. Checks that need the
database (a retrieval dataset's existence) are done by `chat.services.backends`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chat.backends.errors import BackendConfigError

DEFAULT_MAX_CHARS = 4000
DEFAULT_MAX_RETRIES = 2
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Check = Callable[[str, Any], None]


def _number(minimum: float | None = None, maximum: float | None = None, *, integer: bool = False):
    def check(key: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BackendConfigError(
                f"expected {'an integer' if integer else 'a number'}, got {_type(value)}",
                field=key,
            )
        if integer and not isinstance(value, int):
            raise BackendConfigError(f"expected an integer, got {value!r}", field=key)
        if minimum is not None and value < minimum:
            raise BackendConfigError(f"must be ≥ {minimum:g}, got {value!r}", field=key)
        if maximum is not None and value > maximum:
            raise BackendConfigError(f"must be ≤ {maximum:g}, got {value!r}", field=key)

    return check


def _type(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _string(*, choices: tuple[str, ...] = ()) -> Check:
    def check(key: str, value: Any) -> None:
        if not isinstance(value, str) or not value.strip():
            raise BackendConfigError(f"expected a non-empty string, got {_type(value)}", field=key)
        if choices and value not in choices:
            raise BackendConfigError(f"'{value}' is not one of: {', '.join(choices)}", field=key)

    return check


def _boolean(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise BackendConfigError(f"expected true or false, got {_type(value)}", field=key)


def _url(key: str, value: Any) -> None:
    _string()(key, value)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BackendConfigError(f"expected an http:// or https:// URL, got '{value}'", field=key)


def _stop(key: str, value: Any) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise BackendConfigError("expected a string or a list of strings", field=key)
    if len(value) > 4:
        raise BackendConfigError("at most 4 stop sequences", field=key)


def _object(key: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise BackendConfigError(f"expected an object, got {_type(value)}", field=key)


def _ngram_range(key: str, value: Any) -> None:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)
    ):
        raise BackendConfigError("expected [min, max] with two integers", field=key)
    low, high = value
    if not 1 <= low <= high <= 5:
        raise BackendConfigError(f"need 1 ≤ min ≤ max ≤ 5, got [{low}, {high}]", field=key)


def _model_path(key: str, value: Any) -> None:
    _string()(key, value)
    path = Path(value)
    if not path.is_absolute():
        raise BackendConfigError(f"expected an absolute directory path, got '{value}'", field=key)
    if not path.is_dir():
        raise BackendConfigError(f"no such directory on the server: '{value}'", field=key)
    if not (path / "config.json").is_file():
        raise BackendConfigError(
            f"'{value}' is not a Hugging Face model directory (no config.json)", field=key
        )


def _prompt_templates(key: str, value: Any) -> None:
    # Imported here: prompts imports this module's sibling, not the other way round.
    from chat.backends.prompts import validate_template

    _object(key, value)
    for skill, template in value.items():
        if not isinstance(template, str):
            raise BackendConfigError(
                f"expected the template text, got {_type(template)}", field=f"{key}.{skill}"
            )
        validate_template(template, field=f"{key}.{skill}")


COMMON: dict[str, Check] = {
    "max_chars": _number(1, 100_000, integer=True),
    "max_retries": _number(0, 10, integer=True),
    "prompt_templates": _prompt_templates,
}

GENERATION: dict[str, Check] = {
    "temperature": _number(0, 2),
    "top_p": _number(0, 1),
}

ADAPTER_KEYS: dict[str, dict[str, Check]] = {
    "openai": {
        "base_url": _url,
        "model": _string(),
        **GENERATION,
        "max_tokens": _number(1, 1_000_000, integer=True),
        "presence_penalty": _number(-2, 2),
        "frequency_penalty": _number(-2, 2),
        "stop": _stop,
        "seed": _number(integer=True),
        # Engine-specific request fields (vLLM's top_k, repetition_penalty, …) sent as they are.
        "extra_body": _object,
        # The serving engine, where a client must speak its dialect (vLLM: guided decoding).
        "engine": _string(choices=("generic", "vllm")),
    },
    "http": {
        "url": _url,
        **GENERATION,
        "max_tokens": _number(1, 1_000_000, integer=True),
    },
    "transformers": {
        "model_path": _model_path,
        **GENERATION,
        "max_new_tokens": _number(1, 4096, integer=True),
        "do_sample": _boolean,
        "repetition_penalty": _number(0.5, 5),
        "device": _string(choices=("auto", "cpu", "cuda")),
    },
    "retrieval": {
        "method": _string(choices=("tfidf", "bm25")),
        "dataset": _string(),
        "analyzer": _string(choices=("char", "word")),
        "ngram_range": _ngram_range,
        "k1": _number(0.01, 10),
        "b": _number(0, 1),
        "query_turns": _number(1, 20, integer=True),
        "same_skill": _boolean,
        "use_grounding": _boolean,
        "leave_one_out": _boolean,
        "stream_chars_per_s": _number(0, 1000),
    },
    "imported": {},
}

REQUIRED: dict[str, tuple[str, ...]] = {
    "openai": ("base_url", "model"),
    "http": ("url",),
    "transformers": ("model_path",),
    "retrieval": ("dataset",),
    "imported": (),
}


def allowed_keys(adapter: str) -> list[str]:
    return sorted({**COMMON, **ADAPTER_KEYS[adapter]})


def validate_config(adapter: str, config: Any) -> dict[str, Any]:
    """Check `config` for `adapter`; return it unchanged or raise `BackendConfigError`."""
    if adapter not in ADAPTER_KEYS:
        raise BackendConfigError(
            f"unknown adapter '{adapter}' (expected one of: {', '.join(ADAPTER_KEYS)})",
            field="adapter",
        )
    if not isinstance(config, dict):
        raise BackendConfigError(f"expected a JSON object, got {_type(config)}", field="config")
    checks = {**COMMON, **ADAPTER_KEYS[adapter]}
    for key in REQUIRED[adapter]:
        if key not in config:
            raise BackendConfigError(f"required by the '{adapter}' adapter", field=key)
    for key, value in config.items():
        if key not in checks:
            raise BackendConfigError(
                f"unknown key for the '{adapter}' adapter (known: {', '.join(sorted(checks))})",
                field=key,
            )
        checks[key](key, value)
    return config


def validate_api_key_env(name: str) -> str:
    """An environment variable *name* (the key itself is never stored)."""
    name = name.strip()
    if name and not ENV_NAME_RE.match(name):
        raise BackendConfigError(
            "expected the name of an environment variable (letters, digits, underscores), "
            "not the key itself",
            field="api_key_env",
        )
    return name
