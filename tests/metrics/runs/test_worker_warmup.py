"""A metrics worker process loads the MSDE 16 kernels' models when it starts (in a thread), so a
small run's first chunks do not pay them (issue 11 item 15)."""

import logging

from django.test import override_settings

from metrics.services import warmup


@override_settings(METRICS_WORKER_WARMUP=False)
def test_no_warm_up_thread_when_the_setting_is_off():
    assert warmup.start_warm_up() is None


@override_settings(METRICS_WORKER_WARMUP=True)
def test_the_warm_up_runs_in_a_daemon_thread(monkeypatch):
    called = []
    monkeypatch.setattr(warmup, "metrics_warm_up", lambda: called.append(True))
    thread = warmup.start_warm_up()
    assert thread is not None and thread.daemon
    thread.join(timeout=5)
    assert called == [True]


def test_a_failing_kernel_is_logged_and_the_warm_up_still_returns(monkeypatch, caplog):
    def broken(names, batch):
        raise RuntimeError("no model files")

    monkeypatch.setattr("metrics.scorers.registry.score_batch", broken)
    with caplog.at_level(logging.ERROR, logger="metrics.services.warmup"):
        took = warmup.metrics_warm_up(languages=("en",))
    assert set(took) == {"en"}
    assert "metrics warm-up failed for lang=en" in caplog.text


def test_the_warm_up_scores_every_msde16_metric_of_each_language(monkeypatch):
    seen = []

    def record(names, batch):
        seen.append((tuple(names), batch.settings.lang, len(batch)))
        return {}

    monkeypatch.setattr("metrics.scorers.registry.score_batch", record)
    warmup.metrics_warm_up()
    from metrics.scorers.registry import PRESETS

    assert seen == [(PRESETS["msde16"], "zh", 2), (PRESETS["msde16"], "en", 2)]


@override_settings(METRICS_WORKER_WARMUP=True)
def test_each_new_pool_process_warms_up_through_the_metrics_app(monkeypatch):
    """The metrics tasks package (which a worker imports before starting its pool) connects the
    warm-up to Celery's `worker_process_init`; sending the signal, as a pool process starts, runs
    it. The project's Celery module imports no app."""
    from celery.signals import worker_process_init

    import metrics.tasks  # noqa: F401  (what a worker's autodiscovery imports)

    called = []
    monkeypatch.setattr(warmup, "metrics_warm_up", lambda: called.append(True))
    threads = [thread for _receiver, thread in worker_process_init.send(sender=None) if thread]
    assert [thread.name for thread in threads] == ["metrics-warm-up"]
    threads[0].join(timeout=5)
    assert called == [True]
