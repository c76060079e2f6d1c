"""`manage.py run_static --name N --dataset D --backends A,B [--sample N --seed S] [--wait]`."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError
from django.db import transaction

from chat.models import Backend, StaticRun
from chat.selectors import static_runs as selectors
from chat.selectors.datasets import dataset_get
from chat.selectors.dialogues import campaign_get
from chat.services import static_runs as services
from core.commands import WorkspaceCommand
from core.errors import ServiceError
from core.models import JobStatus

POLL_INTERVAL_S = 1.0


class Command(WorkspaceCommand):
    help = (
        "Create a static generation run and queue it for a worker on the 'chat' queue; with "
        "--wait, follow its progress until it finishes (exit status 1 when items failed)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--name", required=True, help="run name")
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--backends", required=True, help="backend names, comma-separated")
        parser.add_argument(
            "--campaign",
            help="an existing static campaign holding the backends (default: a new campaign "
            "named after the run)",
        )
        parser.add_argument("--sample", type=int, help="answer a seeded random sample of N")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--wait", action="store_true", help="wait until the run finishes")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = dataset_get(name=options["dataset"])
        if dataset is None:
            raise CommandError(f"no dataset named '{options['dataset']}'")
        names = [name.strip() for name in options["backends"].split(",") if name.strip()]
        backends = {backend.name: backend for backend in Backend.objects.filter(name__in=names)}
        missing = [name for name in names if name not in backends]
        if missing:
            raise CommandError(f"no backend named {', '.join(repr(n) for n in missing)}")
        campaign = None
        if options["campaign"]:
            campaign = campaign_get(name=options["campaign"])
            if campaign is None:
                raise CommandError(f"no campaign named '{options['campaign']}'")
        try:
            with transaction.atomic():
                run = services.static_run_create(
                    name=options["name"],
                    dataset=dataset,
                    backends=[backends[name] for name in names],
                    campaign=campaign,
                    sample_size=options["sample"],
                    seed=options["seed"],
                )
                services.static_run_start(run=run)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Static run {run.pk} '{run.name}' queued: {run.progress_total} answers "
            f"({len(names)} backends), campaign '{run.campaign.name}'."
        )
        if options["wait"]:
            self._wait(run)

    def _wait(self, run: StaticRun) -> None:
        shown = None
        while True:
            run.refresh_from_db()
            counts = selectors.static_run_counts(run=run)
            line = f"{run.status}: {counts.done} done, {counts.failed} failed of {counts.total}"
            if line != shown:
                self.stdout.write(line)
                shown = line
            if run.status not in (JobStatus.PENDING, JobStatus.RUNNING):
                break
            time.sleep(POLL_INTERVAL_S)
        if run.status != JobStatus.DONE:
            raise CommandError(
                f"static run {run.pk} ended {run.status}" + (f": {run.error}" if run.error else "")
            )
        self.stdout.write(self.style.SUCCESS(f"Static run {run.pk} done."))
