"""`manage.py train_discriminator --name NAME --dataset DATASET [--preset P | --all-presets]`.

Trains in this process (no worker needed) and prints the seed 003 Table 2 row(s).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from chat.models import Dataset
from core.commands import WorkspaceCommand
from metrics.scorers.discriminator import TABLE2_MODELS
from metrics.services import discriminators as services


class Command(WorkspaceCommand):
    help = "Train response discriminator(s) (seed 003) on a dataset's context-response pairs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--dataset", required=True, help="dataset name")
        parser.add_argument("--preset", default="AB-LSTM-bi-MLP", choices=list(TABLE2_MODELS))
        parser.add_argument("--all-presets", action="store_true", help="every Table 2 model")
        parser.add_argument("--config", default="{}", help='JSON overrides, e.g. {"max_epochs": 5}')
        parser.add_argument("--vectors", default="", help="word vectors text file")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        try:
            overrides = json.loads(options["config"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc}") from exc
        presets = list(TABLE2_MODELS) if options["all_presets"] else [options["preset"]]
        versions = []
        try:
            for preset in presets:
                name = f"{options['name']}-{preset}" if options["all_presets"] else options["name"]
                # Train here, not on a worker: keep the row but skip the queue.
                with transaction.atomic():
                    version = services.discriminator_create(
                        name=name,
                        dataset=dataset,
                        preset=preset,
                        overrides=overrides,
                        vectors=options["vectors"],
                        seed=options["seed"],
                        enqueue=False,
                    )
                versions.append(services.discriminator_train(version.pk))
        except services.DiscriminatorError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{'model':<18}{'accuracy':>10}{'precision':>11}{'recall':>9}{'F1':>9}")
        for version in versions:
            test = version.results["test"]
            self.stdout.write(
                f"{version.results['preset']:<18}{test['accuracy']:>10.4f}"
                f"{test['precision']:>11.4f}{test['recall']:>9.4f}{test['f1']:>9.4f}"
                f"  → {version.path}"
            )
