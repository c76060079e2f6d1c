"""``python manage.py run_metrics --campaign NAME [--static-run ID] --metrics NAME,...|--preset
msde16 [--metric-settings JSON] [--include-submitted] [--name NAME] [--wait]``.

Creates a metric run (the same service as the UI and the API) whose chunks Celery workers score;
``--wait`` follows its progress until it ends and exits non-zero unless it is done. The settings
option is not called ``--settings``: manage.py takes every ``--settings`` as the Django settings
module before any command runs.
"""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from chat.management.options import campaign_and_static_run
from core.commands import WorkspaceCommand
from metrics.models import JobStatus
from metrics.scorers.registry import PRESETS
from metrics.services import metric_runs as services

POLL_SECONDS = 1.0


class Command(WorkspaceCommand):
    help = "Score a campaign's (or one static run's) model turns with automatic metrics."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--static-run", type=int, help="only this static run's answers (id)")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--metrics", help="comma-separated metric names")
        which.add_argument("--preset", choices=sorted(PRESETS), help="a named metric set")
        parser.add_argument(
            "--metric-settings", default="{}", help="scorer settings as a JSON object"
        )
        parser.add_argument("--include-submitted", action="store_true")
        parser.add_argument("--name", help="run name (default: campaign and metrics)")
        parser.add_argument("--wait", action="store_true", help="wait until the run ends")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign, static_run = campaign_and_static_run(
            campaign_name=options["campaign"], static_run_id=options["static_run"]
        )
        try:
            settings = json.loads(options["metric_settings"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--metric-settings: not valid JSON ({exc.msg})") from exc
        if not isinstance(settings, dict):
            raise CommandError("--metric-settings: expected a JSON object")
        names = [options["preset"]] if options["preset"] else options["metrics"].split(",")
        name = options["name"] or f"{campaign.name} · {options['preset'] or options['metrics']}"
        try:
            run = services.metric_run_create(
                name=name[:160],
                metrics=names,
                settings=settings,
                campaign=None if static_run else campaign,
                static_run=static_run,
                include_submitted=options["include_submitted"],
            )
        except services.MetricRunError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"metric run {run.pk}: {run.progress_total} chunks queued")
        if not options["wait"]:
            return
        while run.status in (JobStatus.PENDING, JobStatus.RUNNING):
            time.sleep(POLL_SECONDS)
            run.refresh_from_db()
            self.stderr.write(f"\r{run.progress_done}/{run.progress_total}", ending="")
        self.stderr.write("")
        for metric, reason in run.unavailable.items():
            self.stderr.write(f"{metric}: {reason}")
        if run.status != JobStatus.DONE:
            raise CommandError(f"metric run {run.pk} ended {run.status}: {run.error}")
        self.stdout.write(f"metric run {run.pk} done: {run.scores.count()} scores")
