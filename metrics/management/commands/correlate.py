"""Correlate metric scores with human scores from two CSV files, without any server.

    python manage.py correlate --metric-scores M.csv --human-scores H.csv --level system \
        --methods pearson,spearman,kendall --bootstrap 1000 --seed 0 --output report.zip

M.csv: group,unit,metric,value; H.csv: group,unit,dimension,value (optional item column; see
docs/correlation.md). The format follows --format, else the extension of --output.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from metrics.analysis.correlation import METHODS
from metrics.analysis.join import LEVELS
from metrics.analysis.results import StudyConfig
from metrics.analysis.scores import ScoreFileError
from metrics.analysis.study import correlate_csv
from metrics.reporting.bundle import REPORT_FORMATS, format_for_path, write_report


class Command(BaseCommand):
    help = "Correlate metric scores with human scores (two CSV files) and write the report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--metric-scores", required=True, help="CSV: group,unit,metric,value")
        parser.add_argument("--human-scores", required=True, help="CSV: group,unit,dimension,value")
        parser.add_argument("--level", required=True, choices=LEVELS)
        parser.add_argument(
            "--methods",
            default="pearson,spearman",
            help=f"comma-separated, any of {','.join(METHODS)} (default pearson,spearman)",
        )
        parser.add_argument(
            "--bootstrap", type=int, default=0, help="bootstrap resamples for 95%% CIs (0: none)"
        )
        parser.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap")
        parser.add_argument("--output", required=True, help="file to write")
        parser.add_argument(
            "--format", choices=REPORT_FORMATS, help="default: from the --output extension"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        methods = tuple(m.strip().lower() for m in options["methods"].split(",") if m.strip())
        try:
            config = StudyConfig(
                level=options["level"],
                methods=methods,
                bootstrap=options["bootstrap"],
                seed=options["seed"],
            )
            study = correlate_csv(options["metric_scores"], options["human_scores"], config)
        except (ScoreFileError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        fmt = options["format"] or format_for_path(options["output"])
        try:
            path = write_report(study, options["output"], fmt)
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc}") from exc
        for warning in study.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        undefined = sum(1 for cell in study.cells if cell.value is None)
        self.stdout.write(
            f"{len(study.cells)} correlations ({undefined} undefined) over "
            f"{len(study.groups)} group(s), {len(study.metrics)} metric(s), "
            f"{len(study.dimensions)} dimension(s) at the {config.level} level; "
            f"wrote {path} ({fmt})."
        )
