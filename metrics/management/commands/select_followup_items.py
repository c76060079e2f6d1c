"""`manage.py select_followup_items --name N --job ID --model DIR --language ja [--dimension D]
[--joint] [--criterion pearson] [--max-items K] [--seed S] [--layout eos] [--normalisation sum]
[--max-length L]`.

Chooses FED items against a rating job (seed 004 §3) in this process (no worker needed), with
the scorer inputs given, and prints the chosen items and the run setting that uses them.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from annotation.models import RatingJob
from core.commands import WorkspaceCommand
from metrics.models import JobStatus
from metrics.scorers import followup
from metrics.services import followup_selection as services


class Command(WorkspaceCommand):
    help = "Choose the FED follow-up items that agree with a rating job's scores (seed 004)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--job", type=int, required=True, help="rating job id")
        parser.add_argument("--dimension", default="overall", help="rubric question key")
        parser.add_argument("--model", required=True, help="local causal LM directory")
        parser.add_argument("--language", required=True, choices=list(followup.LANGUAGES))
        parser.add_argument("--joint", action="store_true", help="FED-Selected (not FED-Cond)")
        parser.add_argument("--criterion", default="spearman", choices=("spearman", "pearson"))
        parser.add_argument("--max-items", type=int, default=None)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--layout", default="fed", choices=list(followup.LAYOUTS))
        parser.add_argument(
            "--normalisation", default="mean", choices=list(followup.NORMALISATIONS)
        )
        parser.add_argument("--max-length", type=int, default=None, help="default: the model's")

    def handle(self, *args: Any, **options: Any) -> None:
        job = RatingJob.objects.select_related("rubric").filter(pk=options["job"]).first()
        if job is None:
            raise CommandError(f"--job: there is no rating job {options['job']}")
        try:
            with transaction.atomic():
                selection = services.selection_create(
                    name=options["name"],
                    job=job,
                    dimension=options["dimension"],
                    model_path=options["model"],
                    language=options["language"],
                    conditional=not options["joint"],
                    criterion=options["criterion"],
                    max_items=options["max_items"],
                    seed=options["seed"],
                    layout=options["layout"],
                    normalisation=options["normalisation"],
                    max_length=options["max_length"],
                    enqueue=False,
                )
        except services.SelectionError as exc:
            raise CommandError(str(exc)) from exc
        try:
            selection = services.selection_execute(selection.pk)
        except Exception as exc:  # recorded on the selection as well (FAILED, its error)
            raise CommandError(f"selection {selection.pk} failed: {exc}") from exc
        if selection.status != JobStatus.DONE:
            raise CommandError(f"selection {selection.pk} {selection.status}: {selection.error}")
        results = selection.results
        self.stdout.write(
            f"{results['variant']}: {', '.join(results['items'])} "
            f"(held-out Spearman {results['spearman']:.3f}, Pearson {results['pearson']:.3f})"
        )
        self.stdout.write(f"run setting: {json.dumps({'followup_selection': selection.pk})}")
