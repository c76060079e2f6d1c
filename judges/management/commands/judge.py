"""`manage.py judge …`: LLM judges from the command line (the same services as the pages/API).

    manage.py judge create --name "GPT-4o MSDE" --backend gpt4o --rubric msde \
        [--mode direct|pairwise|reference] [--sampling '{"n": 3, "temperature": 0.7}'] \
        [--template-zh FILE] [--price-input 2.5 --price-output 10]
    manage.py judge list
    manage.py judge preview --judge 3 --dialogue 120 [--other 121]
    manage.py judge estimate --judge 3 --campaign "MSDE 交互采集"
    manage.py judge run --judge 3 --campaign "MSDE 交互采集" [--here] [--wait]

`run` enqueues a metric run for the workers (`--wait` follows it); `--here` judges in this
process instead (no worker needed; the same chunks, cache and idempotent writes).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Rubric
from chat.models import Backend, Campaign, Dialogue, StaticRun
from core.commands import WorkspaceCommand
from judges import services
from judges.models import Judge, JudgeRun
from metrics.models import JobStatus, MetricRun
from metrics.services import metric_run_scoring


def _judge(value: str) -> Judge:
    found = Judge.objects.filter(pk=int(value)).first() if value.isdigit() else None
    if found is None:
        found = Judge.objects.filter(key=value).order_by("-version").first()
    if found is None:
        raise CommandError(f"--judge: no judge with id or key {value!r}")
    return found


def _target(options: dict[str, Any]) -> dict[str, Any]:
    campaign = static_run = None
    if options.get("campaign"):
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None and options["campaign"].isdigit():
            campaign = Campaign.objects.filter(pk=int(options["campaign"])).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign {options['campaign']!r}")
    if options.get("static_run"):
        static_run = StaticRun.objects.filter(pk=options["static_run"]).first()
        if static_run is None:
            raise CommandError(f"--static-run: no static run {options['static_run']}")
    return {
        "campaign": campaign,
        "static_run": static_run,
        "include_submitted": options.get("include_submitted", False),
    }


class Command(WorkspaceCommand):
    help = "Create, preview, estimate and run LLM judges."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="a new judge")
        create.add_argument("--name", required=True)
        create.add_argument("--backend", required=True, help="backend name")
        create.add_argument("--rubric", required=True, help="rubric key (latest version) or id")
        create.add_argument("--mode", default="direct", choices=Judge.Mode.values)
        create.add_argument("--sampling", default="{}", help="JSON object")
        create.add_argument("--structured", default="auto", choices=Judge.Structured.values)
        create.add_argument("--max-attempts", type=int, default=3)
        for language in ("zh", "en", "ja"):
            create.add_argument(f"--template-{language}", type=Path, help="template file")
        create.add_argument("--price-input", type=float, default=0.0)
        create.add_argument("--price-output", type=float, default=0.0)
        sub.add_parser("list", help="every judge and version")
        preview = sub.add_parser("preview", help="the prompts for a dialogue")
        preview.add_argument("--judge", required=True)
        preview.add_argument("--dialogue", type=int, required=True)
        preview.add_argument("--other", type=int)
        for name in ("estimate", "run"):
            target = sub.add_parser(name)
            target.add_argument("--judge", required=True)
            target.add_argument("--campaign", help="campaign name or id")
            target.add_argument("--static-run", type=int)
            target.add_argument("--include-submitted", action="store_true")
            if name == "run":
                target.add_argument("--name", default="")
                target.add_argument("--here", action="store_true", help="judge in this process")
                target.add_argument("--wait", action="store_true", help="wait for the workers")
                target.add_argument("--timeout", type=float, default=24 * 3600.0)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except services.JudgeError as exc:
            raise CommandError(str(exc)) from None

    def _print(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, ensure_ascii=False, indent=2))

    def _create(self, options: dict[str, Any]) -> None:
        backend = Backend.objects.filter(name=options["backend"]).first()
        if backend is None:
            raise CommandError(f"--backend: no backend named {options['backend']!r}")
        key = options["rubric"]
        rubric = (
            Rubric.objects.filter(pk=int(key)).first()
            if key.isdigit()
            else Rubric.objects.filter(key=key).order_by("-version").first()
        )
        if rubric is None:
            raise CommandError(f"--rubric: no rubric {key!r}")
        try:
            sampling = json.loads(options["sampling"])
        except ValueError as exc:
            raise CommandError(f"--sampling: not JSON ({exc})") from None
        templates = {}
        for language in ("zh", "en", "ja"):
            path = options.get(f"template_{language}")
            if path:
                templates[language] = path.read_text(encoding="utf-8")
        judge = services.judge_create(
            name=options["name"],
            backend=backend,
            rubric=rubric,
            mode=options["mode"],
            sampling=sampling,
            structured=options["structured"],
            max_attempts=options["max_attempts"],
            prompt_templates=templates,
            price_input=options["price_input"],
            price_output=options["price_output"],
        )
        self._print({"id": judge.pk, "key": judge.key, "version": judge.version})

    def _list(self, options: dict[str, Any]) -> None:
        for judge in Judge.objects.select_related("backend", "rubric"):
            self.stdout.write(
                f"{judge.pk}\t{judge.key} v{judge.version}\t{judge.name}\t{judge.backend.name}\t"
                f"{judge.rubric.key}\t{judge.mode}"
            )

    def _preview(self, options: dict[str, Any]) -> None:
        judge = _judge(options["judge"])
        dialogue = Dialogue.objects.filter(pk=options["dialogue"]).first()
        if dialogue is None:
            raise CommandError(f"--dialogue: no dialogue {options['dialogue']}")
        other = Dialogue.objects.filter(pk=options["other"]).first() if options["other"] else None
        for prompt in services.judge_preview(judge=judge, dialogue=dialogue, other=other):
            self.stdout.write(f"=== system ===\n{prompt.system}\n=== user ===\n{prompt.user}\n")

    def _estimate(self, options: dict[str, Any]) -> None:
        self._print(services.judge_estimate(judge=_judge(options["judge"]), **_target(options)))

    def _run(self, options: dict[str, Any]) -> None:
        judge = _judge(options["judge"])
        if options["here"]:
            run = services.judge_run_create(
                judge=judge, name=options["name"], enqueue=False, **_target(options)
            )
            for chunk_id in run.chunks.values_list("pk", flat=True):
                metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
                run.refresh_from_db()
                self.stderr.write(f"\r{run.progress_done}/{run.progress_total} chunks", ending="")
            self.stderr.write("")
            metric_run_scoring.metric_run_finish(run_id=run.pk)
        else:
            run = services.judge_run_create(judge=judge, name=options["name"], **_target(options))
            if options["wait"]:
                deadline = time.monotonic() + options["timeout"]
                while run.status in (JobStatus.PENDING, JobStatus.RUNNING):
                    if time.monotonic() > deadline:
                        raise CommandError(f"run {run.pk} still {run.status} after the timeout")
                    time.sleep(1)
                    run.refresh_from_db()
        run = MetricRun.objects.get(pk=run.pk)
        judge_run = JudgeRun.objects.get(pk=run.pk)
        self._print(
            {
                "run": run.pk,
                "status": run.status,
                "progress": f"{run.progress_done}/{run.progress_total}",
                "estimate": judge_run.estimate,
                "requests_sent": judge_run.requests_sent,
                "cache_hits": judge_run.cache_hits,
                "prompt_tokens": judge_run.prompt_tokens,
                "completion_tokens": judge_run.completion_tokens,
                "cost": round(judge_run.cost, 6),
                "error": run.error,
            }
        )
