"""Metric runs scored in-process (the chunk service called directly): values, idempotency,
unavailable metrics, bad input."""

from __future__ import annotations

import io

import pytest

from chat.models import Campaign, Dialogue, Turn
from metrics.models import JobStatus, MetricRun, MetricScore
from metrics.scorers.registry import PRESETS, score
from metrics.services import metric_run_scoring
from metrics.services import metric_runs as services
from tests.metrics.runs.expected import expected_scores, stored_scores
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db

LEXICAL = ["f1", "bleu-1", "bleu-2", "rouge-l", "dist-1", "dist-2", "cider", "length"]


def run_all_chunks(run: MetricRun) -> None:
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    metric_run_scoring.metric_run_finish(run_id=run.pk)
    run.refresh_from_db()


def test_turn_dialogue_and_system_scores_equal_the_registry(researcher):
    study = make_study()
    run = services.metric_run_create(
        name="词汇指标", campaign=study.campaign, metrics=LEXICAL, created_by=researcher
    )
    # 3 batches (甲/knowledge, 甲/chitchat, 乙/knowledge) + 甲 over all skills, × 6 families.
    assert run.progress_total == 4 * 6
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    assert run.progress_done == run.progress_total
    expected = expected_scores(study.dialogues, LEXICAL, {})
    stored = stored_scores(run)
    assert set(stored) == set(expected)
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, abs=1e-9), key
    assert run.signatures["bleu-2"].startswith("bleu-2|nrefs:1|lang:zh")
    assert run.unavailable == {}


def test_running_a_chunk_again_keeps_one_score_per_unit_and_counts_once(researcher):
    study = make_study(dialogues_per_cell=2)
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=["f1", "cider"], created_by=researcher
    )
    run_all_chunks(run)
    before = stored_scores(run)
    run.chunks.update(status=JobStatus.RUNNING)  # as if a crash had hit every chunk at the end
    run_all_chunks(run)
    assert stored_scores(run) == before
    assert run.progress_done == run.progress_total


def test_live_turns_without_references_are_not_scored_by_reference_metrics(researcher):
    study = make_study(dialogues_per_cell=2, with_references=False)
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=["bleu-1", "dist-1"], created_by=researcher
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    assert run.unavailable == {"bleu-1": "unavailable: no references"}
    assert not run.scores.filter(metric="bleu-1").exists()
    assert run.scores.filter(metric="dist-1", level="turn").count() == 2 * 2 * 3


def test_a_missing_model_is_reported_unavailable_with_no_scores(researcher, tmp_path):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    missing = str(tmp_path / "no-such-model")
    run = services.metric_run_create(
        name="r",
        campaign=study.campaign,
        metrics=["sentence-cosine", "f1"],
        settings={"sentence_model": missing},
        created_by=researcher,
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    assert run.unavailable["sentence-cosine"] == (
        f"unavailable: sentence encoder directory {missing!r} does not exist"
    )
    assert not run.scores.filter(metric="sentence-cosine").exists()
    assert run.scores.filter(metric="f1").exists()


def test_chinese_neural_metrics_without_a_model_say_why(researcher):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=["bertscore-f1"], created_by=researcher
    )
    assert "bertscore_model" not in run.metric_settings
    run_all_chunks(run)
    assert run.unavailable["bertscore-f1"].startswith("unavailable: no BERTScore model")


def test_english_runs_default_to_the_packaged_minilm():
    settings = services.check_settings({"lang": "en"})
    assert settings["sentence_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert settings["bertscore_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert services.check_settings({"lang": "en", "sentence_model": "/m"})["sentence_model"] == "/m"


def test_a_cancelled_run_writes_nothing_more(researcher):
    study = make_study(dialogues_per_cell=1)
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=["f1"], created_by=researcher
    )
    assert services.metric_run_cancel(run=run)
    run_all_chunks(run)
    assert run.status == JobStatus.CANCELLED
    assert MetricScore.objects.filter(run=run).count() == 0
    assert services.metric_run_resume(run=run) == run.progress_total
    run_all_chunks(run)
    assert run.status == JobStatus.DONE and run.scores.exists()


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"metrics": ["bleu-9"]}, "metrics", "unknown metric(s) bleu-9"),
        ({"metrics": []}, "metrics", "choose at least one metric"),
        ({"settings": {"tokeniser": "x"}}, "settings", "unknown setting(s) tokeniser"),
        ({"settings": {"lang": "fr"}}, "settings", "setting lang='fr' is not one of zh, en, ja"),
        ({"settings": {"batch_size": "8"}}, "settings", "setting batch_size='8' has the wrong"),
        ({"settings": {"rouge_beta": -1}}, "settings", "rouge_beta must be a positive number"),
        ({"name": " "}, "name", "a run name is required"),
    ],
)
def test_bad_input_is_refused_naming_the_field(researcher, kwargs, field, message):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    arguments = {"name": "r", "campaign": study.campaign, "metrics": ["f1"], **kwargs}
    with pytest.raises(services.MetricRunError) as caught:
        services.metric_run_create(created_by=researcher, **arguments)
    assert caught.value.field == field
    assert message in str(caught.value)
    assert not MetricRun.objects.exists()


def test_presets_expand_to_the_papers_metric_sets():
    assert services.check_metric_names(["msde16"]) == list(PRESETS["msde16"])
    assert len(PRESETS["msde16"]) == 16
    assert services.check_metric_names(["MSDE 16", "seed002-extra", "f1"])[-1] == "length"


def test_a_campaign_without_accepted_dialogues_has_nothing_to_score(researcher):
    study = make_study(dialogues_per_cell=1, status=Dialogue.Status.SUBMITTED)
    with pytest.raises(services.MetricRunError, match="among accepted dialogues"):
        services.metric_run_create(name="r", campaign=study.campaign, metrics=["f1"])
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=["f1"], include_submitted=True
    )
    assert run.progress_total == 4


def _upload(text: str, name: str = "answers.jsonl") -> services.Upload:
    return services.Upload(io.BytesIO(text.encode()), name, system="外部系统", skill="persona")


def test_an_uploaded_answer_file_is_scored_like_a_static_run(researcher):
    lines = [
        '{"id": "a", "hypothesis": "我喜欢看电影", "references": ["我也喜欢看电影"],'
        ' "context": ["你好", "你好呀", "你喜欢什么？"]}',
        '{"id": "b", "hypothesis": "去爬山", "references": ["周末去爬山"]}',
    ]
    run = services.metric_run_create(
        name="上传",
        upload=_upload("\n".join(lines)),
        metrics=["f1", "bleu-1"],
        created_by=researcher,
    )
    assert run.target == MetricRun.Target.UPLOAD
    assert run.campaign.mode == Campaign.Mode.STATIC
    run_all_chunks(run)
    turns = {s.dialogue.external_id: s.value for s in run.scores.filter(level="turn", metric="f1")}
    expected = score(["f1"], ["我喜欢看电影", "去爬山"], [["我也喜欢看电影"], ["周末去爬山"]])[
        "f1"
    ].per_response
    assert turns == pytest.approx({"a": expected[0], "b": expected[1]})
    dialogue = run.campaign.dialogues.get(external_id="a")
    assert [t.speaker for t in dialogue.turns.order_by("index")] == [
        "user",
        "system",
        "user",
        "system",
    ]


def test_an_upload_with_a_bad_line_names_it_and_stores_nothing(researcher):
    lines = [
        '{"id": 1, "hypothesis": "好", "references": ["好的"]}',
        '{"id": 2, "hypothesis": "行", "references": []}',
    ]
    campaigns = Campaign.objects.count()
    with pytest.raises(services.MetricRunError) as caught:
        services.metric_run_create(name="u", upload=_upload("\n".join(lines)), metrics=["f1"])
    assert str(caught.value) == (
        "answers.jsonl line 2, field 'references': expected a non-empty list of strings"
    )
    assert caught.value.line == 2
    assert Campaign.objects.count() == campaigns
    assert not MetricRun.objects.exists()


def test_dialogue_level_metrics_score_each_dialogue_as_a_whole(researcher, tmp_path):
    from metrics.scorers.learned import FOLLOWUP_METRICS
    from metrics.scorers.registry import METRICS, score
    from tests.metrics.reference_free.conftest import build_tiny_causal_lm

    name = FOLLOWUP_METRICS[0]
    assert "dialogue" in METRICS[name].levels
    settings = {"followup_model": str(build_tiny_causal_lm(tmp_path / "lm"))}
    study = make_study(dialogues_per_cell=2, skills=("knowledge",))
    run = services.metric_run_create(
        name="r", campaign=study.campaign, metrics=[name], settings=settings, created_by=researcher
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE and run.unavailable == {}, run.unavailable
    for backend in study.backends:
        dialogues = sorted((d for d in study.dialogues if d.backend == backend), key=lambda d: d.pk)
        histories = [
            list(d.turns.order_by("index").values_list("text", flat=True)) for d in dialogues
        ]
        whole = score(
            [name],
            [h[-1] for h in histories],
            None,
            [h[:-1] for h in histories],
            settings,
            unit="dialogue",
        )[name]
        stored = dict(
            run.scores.filter(level="dialogue", backend=backend).values_list("dialogue_id", "value")
        )
        assert stored == pytest.approx(
            {d.pk: v for d, v in zip(dialogues, whole.per_response.tolist(), strict=True)}
        )
    turn_values = dict(run.scores.filter(level="turn").values_list("turn_id", "value"))
    assert len(turn_values) == 2 * 2 * 2


def test_english_neural_metrics_run_offline_on_the_packaged_minilm(researcher):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    for turn in Turn.objects.filter(dialogue__in=study.dialogues, speaker="system"):
        turn.text, turn.references = "The cat sat on the mat.", ["A cat was sitting on the mat."]
        turn.save()
    run = services.metric_run_create(
        name="en",
        campaign=study.campaign,
        metrics=["sentence-cosine", "bertscore-f1"],
        settings={"lang": "en"},
        created_by=researcher,
    )
    run_all_chunks(run)
    assert run.unavailable == {}
    assert "model:sentence-transformers/all-MiniLM-L6-v2" in run.signatures["sentence-cosine"]
    values = list(run.scores.filter(level="turn").values_list("value", flat=True))
    assert len(values) == 2 * 2 * 2 and all(0.5 < v <= 1.0 for v in values)


def test_model_heavy_chunks_go_to_the_gpu_queue_only_where_configured(settings):
    settings.GPU_QUEUE = False
    assert metric_run_scoring.chunk_queue("neural") == "metrics"
    settings.GPU_QUEUE = True
    assert [metric_run_scoring.chunk_queue(f) for f in ("neural", "follow-up", "bleu")] == [
        "gpu",
        "gpu",
        "metrics",
    ]


def test_a_static_run_target_scores_only_each_answer_not_the_copied_context(researcher):
    from chat.models import StaticRun
    from tests.chat.factories import BackendFactory, DatasetFactory, DialogueFactory, TurnFactory

    campaign = make_study(dialogues_per_cell=1).campaign  # other dialogues: not in the run
    static = StaticRun.objects.create(name="静态", campaign=campaign, dataset=DatasetFactory())
    backend = BackendFactory(name="静态系统")
    answers = []
    for n in range(3):
        dialogue = DialogueFactory(
            campaign=campaign, backend=backend, static_run=static, status="accepted"
        )
        for index, (speaker, text) in enumerate(
            [("user", "你好"), ("system", "你好呀"), ("user", f"第{n}个问题？")]
        ):
            TurnFactory(dialogue=dialogue, index=index, speaker=speaker, text=text)
        answers.append(
            TurnFactory(
                dialogue=dialogue,
                index=3,
                speaker="system",
                text=f"这是第{n}个回答",
                references=[f"第{n}个参考回答"],
            )
        )
    run = services.metric_run_create(
        name="静态", static_run=static, metrics=["f1", "length"], created_by=researcher
    )
    assert run.target == MetricRun.Target.STATIC_RUN and run.campaign == campaign
    run_all_chunks(run)
    turns = set(run.scores.filter(level="turn").values_list("turn_id", flat=True))
    assert turns == {t.pk for t in answers}
    expected = score(["length"], [t.text for t in answers], None, [["你好", "你好呀", "?"]] * 3)[
        "length"
    ]
    system = run.scores.get(level="system", metric="length", group="knowledge")
    assert system.value == pytest.approx(expected.corpus)


def test_an_oversized_upload_is_refused(researcher, settings):
    settings.DATASET_UPLOAD_MAX_BYTES = 1 << 20
    lines = [f'{{"id": {n}, "hypothesis": "好", "references": ["好的"]}}' for n in range(40_000)]
    big = _upload("\n".join(lines))
    with pytest.raises(services.MetricRunError, match="larger than 1 MiB") as caught:
        services.metric_run_create(name="u", upload=big, metrics=["f1"])
    assert caught.value.field == "file"
    assert not MetricRun.objects.exists()
