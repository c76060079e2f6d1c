"""Per-adapter config validation: unknown keys, types, ranges, required keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat.backends.config import validate_api_key_env, validate_config
from chat.backends.errors import BackendConfigError


@pytest.mark.parametrize(
    ("adapter", "config"),
    [
        ("openai", {"base_url": "https://api.example.com/v1", "model": "m", "stop": ["\n"]}),
        ("http", {"url": "http://127.0.0.1:9000/reply", "max_tokens": 64}),
        ("retrieval", {"dataset": "d", "method": "bm25", "ngram_range": [1, 3], "b": 0}),
        ("imported", {}),
    ],
)
def test_good_configs_pass(adapter: str, config: dict) -> None:
    assert validate_config(adapter, config) == config


@pytest.mark.parametrize(
    ("adapter", "config", "field", "message"),
    [
        ("openai", [], "config", "expected a JSON object, got list"),
        ("openai", {"model": "m"}, "base_url", "required by the 'openai' adapter"),
        ("openai", {"base_url": "http://x", "model": ""}, "model", "non-empty string"),
        ("openai", {"base_url": "http://x", "model": "m", "top_p": 1.5}, "top_p", "≤ 1"),
        (
            "openai",
            {"base_url": "http://x", "model": "m", "max_tokens": 2.5},
            "max_tokens",
            "expected an integer",
        ),
        (
            "openai",
            {"base_url": "http://x", "model": "m", "temperature": True},
            "temperature",
            "expected a number, got boolean",
        ),
        ("openai", {"base_url": "http://x", "model": "m", "stop": [1]}, "stop", "list of strings"),
        ("http", {"url": "http://x", "model_path": "/m"}, "model_path", "unknown key"),
        ("retrieval", {"dataset": "d", "ngram_range": [2, 1]}, "ngram_range", "1 ≤ min ≤ max"),
        ("retrieval", {"dataset": "d", "method": "lsa"}, "method", "not one of: tfidf, bm25"),
        ("retrieval", {"dataset": "d", "max_chars": 0}, "max_chars", "≥ 1"),
        ("transformers", {"model_path": "relative/dir"}, "model_path", "absolute directory"),
        ("transformers", {"model_path": "/no/such/dir/xyz"}, "model_path", "no such directory"),
        ("nope", {}, "adapter", "unknown adapter 'nope'"),
    ],
)
def test_bad_configs_name_the_key(adapter: str, config: object, field: str, message: str) -> None:
    with pytest.raises(BackendConfigError) as caught:
        validate_config(adapter, config)
    assert caught.value.field == field
    assert message in str(caught.value)


def test_a_model_directory_needs_a_config_json(tmp_path: Path) -> None:
    with pytest.raises(BackendConfigError, match="no config.json"):
        validate_config("transformers", {"model_path": str(tmp_path)})
    (tmp_path / "config.json").write_text("{}")
    validate_config("transformers", {"model_path": str(tmp_path), "device": "auto"})


@pytest.mark.parametrize("value", ["sk-abc123", "Bearer xyz", "my key"])
def test_api_key_env_must_be_a_variable_name(value: str) -> None:
    with pytest.raises(BackendConfigError, match="not the key itself"):
        validate_api_key_env(value)
    assert validate_api_key_env(" OPENAI_API_KEY ") == "OPENAI_API_KEY"
