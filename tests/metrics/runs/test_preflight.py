"""The metric-run pre-flight: which chosen metrics would be unavailable, why, and the fix."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from metrics.scorers.registry import PRESETS
from metrics.selectors.preflight import metric_run_preflight
from metrics.services.metric_runs import check_metric_names, check_settings

pytestmark = pytest.mark.django_db

MODEL_METRICS = {
    "sentence-cosine",
    "embedding-average",
    "vector-extrema",
    "greedy-matching",
    "bertscore-p",
    "bertscore-r",
    "bertscore-f1",
    "bleurt",
    "perplexity",
    "discriminator",
    "ruber",
}


def _preflight(metrics: list[str], settings: dict | None = None):
    return metric_run_preflight(
        metrics=check_metric_names(metrics), settings=check_settings(settings or {})
    )


def test_msde16_in_chinese_without_models_names_each_missing_model_and_its_fix() -> None:
    result = _preflight(["msde16"])
    expected = [name for name in PRESETS["msde16"] if name in MODEL_METRICS]
    assert [item.metric for item in result.unavailable] == expected
    reasons = {item.metric: item.reason for item in result.unavailable}
    assert reasons["sentence-cosine"] == "no sentence encoder configured (setting sentence_model)"
    assert reasons["embedding-average"] == "no word vectors configured (setting word_vectors)"
    fixes = {item.metric: item.fix for item in result.unavailable}
    assert "sentence_model" in fixes["sentence-cosine"]
    assert "word_vectors" in fixes["vector-extrema"]
    assert "f1" in result.available and "bleu-1" in result.available
    summary = result.summary()
    assert summary.startswith(f"{len(expected)} / 16 ")
    assert "no sentence encoder configured" in summary


def test_configured_local_models_and_vectors_make_their_metrics_available(tmp_path) -> None:
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text("{}")
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("你好 0.1 0.2\n")
    result = _preflight(
        ["sentence-cosine", "embedding-average", "bertscore-f1", "f1"],
        {"sentence_model": str(encoder), "word_vectors": str(vectors)},
    )
    assert [item.metric for item in result.unavailable] == ["bertscore-f1"]
    assert result.available == ["sentence-cosine", "embedding-average", "f1"]


def test_a_missing_directory_is_reported_as_such(tmp_path) -> None:
    result = _preflight(["perplexity"], {"perplexity_model": str(tmp_path / "gone")})
    (item,) = result.unavailable
    assert "does not exist" in item.reason and "gone" in item.reason
    assert "perplexity_model" in item.fix


def test_a_missing_bertscore_baseline_file_is_caught_before_the_run(tmp_path) -> None:
    encoder = tmp_path / "bert"
    encoder.mkdir()
    result = _preflight(
        ["bertscore-f1"],
        {"bertscore_model": str(encoder), "bertscore_baseline": str(tmp_path / "none.tsv")},
    )
    (item,) = result.unavailable
    assert "baseline" in item.reason


def test_the_api_answers_the_preflight_and_refuses_an_unknown_metric(researcher) -> None:
    client = APIClient()
    client.force_authenticate(researcher)
    url = reverse("api-metric-run-preflight")
    response = client.post(url, {"metrics": ["f1", "sentence-cosine"]}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["available"] == ["f1"]
    assert body["unavailable"][0]["metric"] == "sentence-cosine"
    assert body["summary"].startswith("1 / 2 ")
    refused = client.post(url, {"metrics": ["f1", "blue-9"]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["field"] == "metrics"


def test_the_run_form_shows_the_preflight_as_metrics_are_chosen(researcher_client) -> None:
    page = researcher_client.get(reverse("metrics:metric-run-create"))
    html = page.content.decode()
    assert 'id="preflight-box"' in html and reverse("metrics:metric-run-preflight") in html
    partial = researcher_client.post(
        reverse("metrics:metric-run-preflight"), {"metrics": ["msde16"], "setting_lang": "zh"}
    )
    text = partial.content.decode()
    assert partial.status_code == 200
    assert "no sentence encoder configured (setting sentence_model)" in text
    assert "sentence-cosine" in text and "sentence_model" in text
    ok = researcher_client.post(
        reverse("metrics:metric-run-preflight"), {"metrics": ["f1", "bleu-2"]}
    )
    assert "preflight-ok" in ok.content.decode()
    bad = researcher_client.post(
        reverse("metrics:metric-run-preflight"),
        {"metrics": ["f1"], "setting_batch_size": "0"},
    )
    assert "preflight-error" in bad.content.decode()


def test_a_refused_submission_keeps_the_preflight_in_view(researcher_client) -> None:
    response = researcher_client.post(
        reverse("metrics:metric-run-create"), {"name": "", "metrics": ["sentence-cosine"]}
    )
    assert response.status_code == 400
    assert "no sentence encoder configured" in response.content.decode()
