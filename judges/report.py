"""The judges' section of a correlation report: agreement and bias tables, and their files.

Registered as a :class:`metrics.services.report_extensions.ReportExtension` (``judges.apps``, which
imports this module only when a report is computed): for every judge run
among the report's metric runs and every rating job over the same campaign, the
meta-evaluation of :func:`judges.selectors.meta_evaluation`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from annotation.models import RatingJob
from core.cells import spreadsheet_cell
from judges.selectors import meta_evaluation
from metrics.models import MetricRun

FILES = ("judges.json", "judges_agreement.csv", "judges_bias.csv", "judges_win_rates.csv")


def report_section(config: Mapping[str, Any]) -> dict[str, Any] | None:
    runs = list(
        MetricRun.objects.filter(pk__in=config["metric_runs"], judge_run__isnull=False).order_by(
            "pk"
        )
    )
    if not runs:
        return None
    jobs = list(RatingJob.objects.filter(pk__in=config["rating_jobs"]).select_related("rubric"))
    evaluations, notes = [], []
    for run in runs:
        matching = [job for job in jobs if job.campaign_id == run.campaign_id]
        if not matching:
            notes.append(
                f"judge run '{run.name}': no selected rating job rates its campaign, so it is "
                "correlated at the system level only (no rater agreement or bias tables)"
            )
        for job in matching:
            evaluations.append(meta_evaluation(run=run, job=job))
    return {"evaluations": evaluations, "notes": notes}


def _csv(rows: list[dict[str, Any]], fields: list[str]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    # Judge rationales and system names are other people's text: no live formulas.
    writer.writerows({key: spreadsheet_cell(value) for key, value in row.items()} for row in rows)
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")  # BOM: Excel opens UTF-8 correctly


def report_files(section: Mapping[str, Any]) -> dict[str, bytes]:
    agreement, bias, wins = [], [], []
    for e in section.get("evaluations", []):
        base = {"judge_run": e["run_name"], "judge": e["judge"], "rating_job": e["job_name"]}
        for row in e["agreement"]:
            q = row["question"]
            for expert, pair in row["judge_vs_expert"].items():
                agreement.append({**base, "question": q, "compared_with": expert, **pair})
            agreement.append(
                {**base, "question": q, "compared_with": "majority", **row["judge_vs_majority"]}
            )
            agreement.append(
                {
                    **base,
                    "question": q,
                    "compared_with": "experts among themselves",
                    "alpha": row["experts_alpha"],
                }
            )
        for row in e["length_bias"]:
            bias.append({**base, "bias": "length", "dimension": row["dimension"], **row})
        for row in e["position_bias"]:
            bias.append({**base, "bias": "position", "dimension": row["question"], **row})
        if e.get("self_preference"):
            bias.append({**base, "bias": "self-preference", **e["self_preference"]})
        for row in e["win_rates"]:
            wins.append({**base, **row})
    return {
        "judges.json": json.dumps(section, ensure_ascii=False, indent=2).encode(),
        "judges_agreement.csv": _csv(
            agreement,
            [
                "judge_run",
                "judge",
                "rating_job",
                "question",
                "compared_with",
                "n",
                "alpha",
                "kappa",
                "exact",
            ],
        ),
        "judges_bias.csv": _csv(
            bias,
            [
                "judge_run",
                "judge",
                "rating_job",
                "bias",
                "dimension",
                "n",
                "judge_length_r",
                "human_length_r",
                "judge_length_partial_r",
                "flip_rate",
                "first_position_rate",
                "second_position_rate",
                "system",
                "judge_mean",
                "human_mean",
                "self_preference",
            ],
        ),
        "judges_win_rates.csv": _csv(
            wins,
            [
                "judge_run",
                "judge",
                "rating_job",
                "question",
                "system_1",
                "system_2",
                "wins",
                "losses",
                "ties",
                "n",
                "win_rate",
            ],
        ),
    }
