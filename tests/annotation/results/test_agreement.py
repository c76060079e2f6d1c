"""Agreement of a job's ratings against the reference implementations and a hand computation."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotation.models import Assignment
from annotation.selectors.agreement import job_agreement, job_rater_deviations
from tests.annotation.results.factories import dialogue_with_turns, job_for, rate
from tests.chat.factories import BackendFactory

pytestmark = pytest.mark.django_db

# raters × dialogues, MSDE "info" (0–2)
INFO = np.array([[2, 1, 0, 2, 1], [2, 1, 1, 2, 0], [1, 1, 0, 2, 0]])
COH = np.array([[2, 2, 1, 0, 2], [2, 2, 1, 1, 2], [2, 1, 1, 0, 2]])


@pytest.fixture
def msde_job():
    job = job_for("msde")
    backend = BackendFactory()
    dialogues = [dialogue_with_turns(job.campaign, backend, skill_key="chitchat") for _ in range(5)]
    for r, rater in enumerate(("r1", "r2", "r3")):
        for d, dialogue in enumerate(dialogues):
            rate(job, dialogue, rater, {"info": int(INFO[r, d]), "coh": int(COH[r, d])})
    # A gold item with disagreeing answers must not change the figures.
    rate(job, dialogues[0], "r4", {"info": 0, "coh": 0}, kind=Assignment.Kind.GOLD)
    return job


def test_agreement_matches_krippendorff_statsmodels_and_a_hand_computed_kappa(msde_job):
    rows = {row.question: row for row in job_agreement(job=msde_job)}
    assert set(rows) == {"info", "coh", "know", "rec"}
    info = rows["info"]
    assert (info.n_items, info.n_raters, info.raters_per_item) == (5, 3, 3)
    assert info.measurement == "ordinal"
    assert info.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=INFO, level_of_measurement="ordinal")
    )
    table, _ = aggregate_raters(INFO.T)
    assert info.fleiss_kappa == pytest.approx(fleiss_kappa(table, method="fleiss"))
    # Hand: agreeing pairs per item (of 3) = 1/3, 1, 1/3, 1, 1/3 → P̄ = 0.6;
    # free-marginal kappa with k = 3: (0.6 − 1/3) / (1 − 1/3) = 0.4.
    assert info.percent_agreement == pytest.approx(0.6)
    assert info.randolph_kappa == pytest.approx(0.4)
    assert rows["coh"].krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=COH, level_of_measurement="ordinal")
    )
    assert rows["know"].n_items == 0  # not asked for chit-chat


def test_a_rater_far_from_the_others_is_flagged():
    job = job_for("likert")
    backend = BackendFactory()
    dialogues = [dialogue_with_turns(job.campaign, backend) for _ in range(4)]
    typical = [4, 3, 5, 2]
    for r in range(6):
        for d, dialogue in enumerate(dialogues):
            value = typical[d] if (r + d) % 3 else min(5, typical[d] + 1)
            rate(job, dialogue, f"agree{r}", dict.fromkeys(
                ("naturalness", "topic_following", "topic_providing"), value))  # fmt: skip
    for d, dialogue in enumerate(dialogues):
        value = 6 - typical[d]
        rate(job, dialogue, "contrarian", dict.fromkeys(
            ("naturalness", "topic_following", "topic_providing"), value))  # fmt: skip
    rows = job_rater_deviations(job=job)
    assert rows[0].username == "contrarian" and rows[0].flagged
    assert [r.username for r in rows if r.flagged] == ["contrarian"]
    assert rows[0].n == 12  # 4 dialogues × 3 questions
