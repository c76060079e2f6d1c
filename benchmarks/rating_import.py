"""Benchmark: importing a ratings CSV (`annotation.services.rating_import.ratings_import`).

Issue 23 item 12's target: ≥ 2,000 rows/s (40,000 ratings took 4 min 43 s, ≈ 140 rows/s, when
each row cost its own queries). The script fills the database named by DATABASE_URL (use
PostgreSQL, your own database) with a campaign of knowledge dialogues once (later runs reuse it),
writes an MSDE ratings file (each dialogue × 4 raters × the 3 questions MSDE asks of knowledge
dialogues: info, coh, know), and times the import twice: into a fresh imported job, and again
over the same job (every answer replaced). Each import runs in a transaction rolled back at the
end, so the database is left as it was.

CPU reference (to compare figures across machines): the same pure-Python loop timed in the same
run, ``sum(i * i % 7 for i in range(5_000_000))`` (benchmarks/cpu_reference.py); the rates and
times are printed also in its units.

    DATABASE_URL=postgres://…/platform_mine .venv/bin/python benchmarks/rating_import.py \
        [--rows 40000]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cpu_reference import cpu_reference_s, in_ref, per_ref, reference_line  # noqa: E402  (benchmarks/, the script's folder)

TARGET_ROWS_PER_S = 2000.0
CAMPAIGN = "bench-rating-import"
RATERS = 4
QUESTIONS = ("info", "coh", "know")


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SITE_HTTPS", "false")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database of your own")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _campaign(n_dialogues: int) -> list[str]:
    """The external ids of a campaign of `n_dialogues` knowledge dialogues (created once)."""
    from chat.models import Backend, Campaign, Dialogue, Skill

    campaign, _ = Campaign.objects.get_or_create(name=CAMPAIGN)
    ids = list(
        Dialogue.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("external_id", flat=True)
    )
    if len(ids) >= n_dialogues:
        return ids[:n_dialogues]
    backend, _ = Backend.objects.get_or_create(
        name="bench-rating-backend", defaults={"adapter": Backend.Adapter.RETRIEVAL}
    )
    skill = Skill.objects.get(key="knowledge")
    Dialogue.objects.bulk_create(
        Dialogue(
            campaign=campaign,
            backend=backend,
            skill=skill,
            language="zh",
            status=Dialogue.Status.ACCEPTED,
            external_id=f"k-{k}",
        )
        for k in range(len(ids), n_dialogues)
    )
    return _campaign(n_dialogues)


def _csv(dialogue_ids: list[str]) -> bytes:
    lines = ["dialogue_id,rater,question,value"]
    for n, dialogue_id in enumerate(dialogue_ids):
        for r in range(RATERS):
            for q, question in enumerate(QUESTIONS):
                lines.append(f"{dialogue_id},bench-rater-{r},{question},{(n + r + q) % 3}")
    return ("\n".join(lines) + "\n").encode()


def _time_imports(data: bytes, rows: int) -> list[float]:
    from django.db import transaction

    from annotation.services.rating_import import ratings_import

    rates = []
    with transaction.atomic():
        for _ in range(2):  # a fresh job, then the same file again over it
            start = time.perf_counter()
            result = ratings_import(
                fileobj=io.BytesIO(data), campaign_name=CAMPAIGN, rubric_ref="msde"
            )
            rates.append(rows / (time.perf_counter() - start))
            assert result.ratings == rows
        transaction.set_rollback(True)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    args = parser.parse_args()
    _setup()
    dialogue_ids = _campaign(max(1, args.rows // (RATERS * len(QUESTIONS))))
    data = _csv(dialogue_ids)
    rows = len(dialogue_ids) * RATERS * len(QUESTIONS)
    fresh, again = _time_imports(data, rows)
    reference = cpu_reference_s()
    print(reference_line(reference))
    print(f"ratings file: {rows} rows, {len(data) / 1e6:.1f} MB")
    for name, rate in (("import into a new job", fresh), ("import again (replace)", again)):
        verdict = "met" if rate >= TARGET_ROWS_PER_S else "MISSED"
        print(
            f"{name}: {rate:,.0f} rows/s {per_ref(rate, reference)}, {rows / rate:.1f} s "
            f"{in_ref(rows / rate, reference)} "
            f"(target ≥ {TARGET_ROWS_PER_S:,.0f} rows/s: {verdict})"
        )


if __name__ == "__main__":
    main()
