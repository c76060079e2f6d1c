"""`manage.py judge`: create, preview, estimate and run a judge from the command line."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judges.models import Judge
from metrics.models import MetricScore
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db


def call(*args: str) -> str:
    out = StringIO()
    call_command("judge", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_create_preview_estimate_and_run_here(tmp_path):
    with FakeOpenAI(reply_fn=answer_for) as server:
        backend = judge_backend(server)
        study = make_study(dialogues_per_cell=1, skills=("chitchat",))
        template = tmp_path / "zh.txt"
        template.write_text("请评价：\n$dialogue\n\n$questions\n$output_format", encoding="utf-8")
        created = json.loads(
            call(
                "create",
                "--name",
                "命令行裁判",
                "--backend",
                backend.name,
                "--rubric",
                "msde",
                "--sampling",
                '{"temperature": 0}',
                "--template-zh",
                str(template),
            )
        )
        judge = Judge.objects.get(pk=created["id"])
        preview = call("preview", "--judge", judge.key, "--dialogue", str(study.dialogues[0].pk))
        assert preview.split("=== user ===\n", 1)[1].startswith("请评价：\n用户：")
        estimate = json.loads(
            call("estimate", "--judge", str(judge.pk), "--campaign", study.campaign.name)
        )
        assert estimate["requests"] == len(study.dialogues)
        result = json.loads(
            call("run", "--judge", judge.key, "--campaign", study.campaign.name, "--here")
        )
        assert result["status"] == "done" and result["requests_sent"] == len(study.dialogues)
        assert MetricScore.objects.filter(
            run_id=result["run"], metric=f"{judge.metric_prefix}:info"
        ).exists()


def test_bad_input_is_named():
    with pytest.raises(CommandError, match="--backend: no backend"):
        call("create", "--name", "x", "--backend", "nope", "--rubric", "msde")
    with pytest.raises(CommandError, match="--judge: no judge"):
        call("estimate", "--judge", "missing", "--campaign", "x")
