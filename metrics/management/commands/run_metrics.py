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

from django.core.management.base import BaseCommand, CommandError

from chat.models import Campaign, StaticRun
from metrics.models import JobStatus
from metrics.services import metric_runs as services

POLL_SECONDS = 1.0


class Command(BaseCommand):
    help = "Score a campaign's (or one static run's) model turns with automatic metrics."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--static-run", type=int, help="only this static run's answers (id)")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--metrics", help="comma-separated metric names")
        which.add_argument("--preset", choices=sorted(services.PRESETS), help="a named metric set")
        parser.add_argument(
            "--metric-settings", default="{}", help="scorer settings as a JSON object"
        )
        parser.add_argument("--include-submitted", action="store_true")
        parser.add_argument("--name", help="run name (default: campaign and metrics)")
        parser.add_argument("--wait", action="store_true", help="wait until the run ends")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign named {options['campaign']!r}")
        static_run = None
        if options["static_run"] is not None:
            static_run = StaticRun.objects.filter(
                pk=options["static_run"], campaign=campaign
            ).first()
            if static_run is None:
                raise CommandError(
                    f"--static-run: no static run {options['static_run']} in {campaign.name!r}"
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
