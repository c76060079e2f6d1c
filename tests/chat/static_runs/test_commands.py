"""`run_static`: queue a run from the command line, follow it with --wait, refuse bad names."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chat.models import StaticRun
from core.models import JobStatus
from tests.chat.static_runs.helpers import make_dataset, retrieval_backend


@pytest.mark.django_db
def test_it_queues_a_seeded_sample_run_after_commit(sent_jobs, django_capture_on_commit_callbacks):
    dataset = make_dataset()
    retrieval_backend("检索-A", dataset)
    retrieval_backend("检索-B", dataset, method="bm25")
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "run_static",
            "--name=命令行",
            f"--dataset={dataset.name}",
            "--backends=检索-A, 检索-B",
            "--sample=4",
            "--seed=2",
            stdout=out,
        )
    run = StaticRun.objects.get()
    assert [(job.kind, job.pk) for job in sent_jobs] == [("static_run", run.pk)]
    assert (run.sample_size, run.seed, run.progress_total) == (4, 2, 8)
    assert f"Static run {run.pk} '命令行' queued: 8 answers" in out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--dataset=没有", "--backends=检索-A"], "no dataset named '没有'"),
        (["--dataset=静态测试集", "--backends=检索-A,幽灵"], "no backend named '幽灵'"),
        (["--dataset=静态测试集", "--backends=检索-A", "--sample=99"], "sample_size: 数据集只有"),
        (["--dataset=静态测试集", "--backends=检索-A", "--campaign=没有"], "no campaign named"),
    ],
)
def test_bad_names_and_arguments_exit_with_the_reason(arguments, message):
    dataset = make_dataset()
    retrieval_backend("检索-A", dataset)
    with pytest.raises(CommandError, match=message):
        call_command("run_static", "--name=坏", *arguments)
    assert not StaticRun.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_wait_follows_the_run_to_the_end(run_jobs_inline):
    dataset = make_dataset(n=3)
    retrieval_backend("检索-A", dataset)
    out = StringIO()
    call_command(
        "run_static",
        "--name=等",
        f"--dataset={dataset.name}",
        "--backends=检索-A",
        "--wait",
        stdout=out,
    )
    assert "done: 3 done, 0 failed of 3" in out.getvalue()
    assert StaticRun.objects.get().status == JobStatus.DONE
