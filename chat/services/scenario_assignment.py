"""Which (backend, scenario) an arriving crowdworker chats about next.

The rules (MSDE §3.1, a paired design with blind, balanced collection):

- the least-collected (backend, skill) cell goes first; a cell counts the dialogues submitted,
  accepted or in progress (a live reservation), never rejected or abandoned ones;
- every scenario is run with every backend, in rounds: within a cell, a backend gets a scenario
  it has been collected with the fewest times (so no backend repeats a scenario before it has
  had them all), preferring one the other backends are already ahead on, so that when the
  quota is smaller than the number of scenarios every backend still gets the same subset;
- a worker never gets a scenario with a backend they already had (in any status);
- quota per cell (0 = every scenario of the campaign's datasets with that skill, once per
  backend); per-worker cap; flagged workers get nothing more;
- a reservation (an in-progress dialogue) idle longer than `reservation_timeout_minutes` since
  its last change (`Dialogue.updated_at`) is abandoned and its slot is free again;
- a campaign with drawn openings (seed 001) starts each new dialogue with the opening its
  backend used least as the first user turn (`chat.services.openings`); a re-collection keeps
  the rejected dialogue's opening.

Assignments in one campaign are serialised by locking the campaign row (`SELECT … FOR UPDATE`
on PostgreSQL; SQLite runs write transactions one at a time, `transaction_mode=IMMEDIATE`), so
two workers arriving together never get the same slot.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import Campaign, Dialogue, Participant, Sample
from chat.services import side_by_side
from chat.services.openings import dialogue_start, opening_pick, opening_turn_create
from core.errors import ServiceError

# Statuses that hold a slot (in progress only while its reservation is live).
_COLLECTED = (Dialogue.Status.SUBMITTED, Dialogue.Status.ACCEPTED)


class AssignmentError(ServiceError):
    """A worker cannot be given this dialogue (message in the active language)."""


@dataclass(frozen=True)
class WorkerStatus:
    """Where a crowdworker stands in a campaign."""

    done: int  # dialogues submitted or accepted
    cap: int  # the campaign's per-worker cap, 0 = none
    has_more: bool  # scenario_assign_next would give (or resume) a dialogue now
    current: Dialogue | None  # the dialogue in progress, if any
    rejected: list[Dialogue] = field(default_factory=list)  # returned, awaiting re-collection
    flagged: bool = False
    finished: bool = False  # done, nothing more to do: show the completion code
    code_given: bool = False  # the completion code was shown once (`Participant.finished_at`)

    @property
    def earned(self) -> bool:
        """The worker may stop now and get the completion code: at least one dialogue
        submitted, none returned for re-collection, not flagged. More work may remain.

        A code once shown stays (README, the completion page's promise): the worker has it
        already, so a later rejection or flag cannot take it back, only ask for the
        re-collection, which the home page still does."""
        return self.code_given or (self.done > 0 and not self.rejected and not self.flagged)


@dataclass(frozen=True)
class _Slot:
    backend_id: int
    sample_id: int


def _cutoff(campaign: Campaign, now: datetime) -> datetime:
    return now - timedelta(minutes=campaign.reservation_timeout_minutes)


def _holding_slot(campaign: Campaign, now: datetime) -> Q:
    """Dialogues that count towards a cell: collected, or reserved and not yet expired."""
    return Q(status__in=_COLLECTED) | Q(
        status=Dialogue.Status.IN_PROGRESS, updated_at__gte=_cutoff(campaign, now)
    )


def _scenario_order(campaign: Campaign, sample_id: int) -> str:
    # A fixed pseudo-random order per campaign: scenarios are not collected in file order (which
    # often groups topics), and a quota smaller than the dataset takes a reproducible random subset.
    return hashlib.sha1(f"{campaign.pk}:{sample_id}".encode()).hexdigest()


def _one_per_conversation(campaign: Campaign) -> Q:
    """A side-by-side conversation counts once (its left dialogue) towards caps and counts."""
    if campaign.mode == Campaign.Mode.SIDE_BY_SIDE:
        return Q(sbs_as_left__isnull=False)
    return Q()


def _awaiting_recollection(*, campaign: Campaign, worker_id: int) -> list[Dialogue]:
    live_recollection = Dialogue.objects.filter(recollection_of=OuterRef("pk")).exclude(
        status=Dialogue.Status.ABANDONED
    )
    return list(
        Dialogue.objects.filter(
            campaign=campaign, worker_id=worker_id, status=Dialogue.Status.REJECTED
        )
        .filter(_one_per_conversation(campaign))
        .exclude(Exists(live_recollection))
        .select_related("backend", "scenario", "skill")
        .order_by("updated_at")
    )


def _cap_reached(*, campaign: Campaign, worker_id: int, now: datetime) -> bool:
    if not campaign.per_worker_cap:
        return False
    used = (
        Dialogue.objects.filter(campaign=campaign, worker_id=worker_id)
        .filter(_holding_slot(campaign, now), _one_per_conversation(campaign))
        .count()
    )
    # A rejected dialogue still to be re-collected keeps its place under the cap.
    used += len(_awaiting_recollection(campaign=campaign, worker_id=worker_id))
    return used >= campaign.per_worker_cap


def _pick_slot(*, campaign: Campaign, worker_id: int, now: datetime) -> _Slot | None:
    """The next (backend, scenario) for this worker, or None when nothing is left for them."""
    if campaign.mode != Campaign.Mode.INTERACTIVE or campaign.status != Campaign.Status.ACTIVE:
        return None
    if _cap_reached(campaign=campaign, worker_id=worker_id, now=now):
        return None
    backend_ids = list(
        campaign.campaign_backends.order_by("pk").values_list("backend_id", flat=True)
    )
    skill_ids = list(campaign.skills.order_by("pk").values_list("pk", flat=True))
    scenarios: dict[int, list[int]] = {skill_id: [] for skill_id in skill_ids}
    for sample_id, skill_id in Sample.objects.filter(
        dataset__in=campaign.datasets.all(), skill_id__in=skill_ids
    ).values_list("pk", "skill_id"):
        scenarios[skill_id].append(sample_id)
    for ids in scenarios.values():
        ids.sort(key=lambda sample_id: _scenario_order(campaign, sample_id))

    pair_counts: Counter[tuple[int, int]] = Counter()
    cell_counts: Counter[tuple[int, int]] = Counter()
    for backend_id, sample_id, skill_id in (
        Dialogue.objects.filter(campaign=campaign)
        .filter(_holding_slot(campaign, now))
        .values_list("backend_id", "scenario_id", "skill_id")
    ):
        pair_counts[(backend_id, sample_id)] += 1
        cell_counts[(backend_id, skill_id)] += 1
    had = set(
        Dialogue.objects.filter(campaign=campaign, worker_id=worker_id).values_list(
            "backend_id", "scenario_id"
        )
    )

    best: tuple[int, int, _Slot] | None = None
    for skill_position, skill_id in enumerate(skill_ids):
        cell_scenarios = scenarios[skill_id]
        if not cell_scenarios:
            continue
        quota = campaign.quota_per_cell or len(cell_scenarios)
        rounds = math.ceil(quota / len(cell_scenarios))
        for backend_position, backend_id in enumerate(backend_ids):
            collected = cell_counts[(backend_id, skill_id)]
            if collected >= quota:
                continue
            current_round = min(pair_counts[(backend_id, s)] for s in cell_scenarios)
            if current_round >= rounds:
                continue
            candidates = [
                s
                for s in cell_scenarios
                if pair_counts[(backend_id, s)] == current_round and (backend_id, s) not in had
            ]
            if not candidates:
                continue  # this worker had every scenario left in this round with this backend
            # Prefer the scenario most other backends are already ahead on (keeps pairs whole).
            sample_id = max(
                candidates,
                key=lambda s: sum(
                    pair_counts[(other, s)] > current_round
                    for other in backend_ids
                    if other != backend_id
                ),
            )
            rank = (collected, skill_position * len(backend_ids) + backend_position)
            if best is None or rank < best[:2]:
                best = (*rank, _Slot(backend_id=backend_id, sample_id=sample_id))
    return best[2] if best is not None else None


def _slot_available(*, campaign: Campaign, worker_id: int, now: datetime) -> bool:
    """Whether `scenario_assign_next` would start a new dialogue (or conversation) now."""
    if campaign.mode != Campaign.Mode.SIDE_BY_SIDE:
        return _pick_slot(campaign=campaign, worker_id=worker_id, now=now) is not None
    if _cap_reached(campaign=campaign, worker_id=worker_id, now=now):
        return False
    return side_by_side.side_by_side_available(
        campaign=campaign,
        worker_id=worker_id,
        holding=_holding_slot(campaign, now),
        order=lambda sample_id: _scenario_order(campaign, sample_id),
    )


def scenario_holds_release_expired(*, campaign: Campaign, now: datetime | None = None) -> int:
    """Abandon reservations idle past the campaign's timeout; return how many were released
    (both sides of a side-by-side conversation go together)."""
    now = now or timezone.now()
    released = Dialogue.objects.filter(
        campaign=campaign,
        status=Dialogue.Status.IN_PROGRESS,
        worker__isnull=False,
        static_run__isnull=True,
        updated_at__lt=_cutoff(campaign, now),
    ).update(
        status=Dialogue.Status.ABANDONED,
        abandon_reason=Dialogue.AbandonReason.TIMEOUT,
        updated_at=now,
    )
    return released + side_by_side.partners_abandon(campaign=campaign)


def _current(*, campaign: Campaign, worker_id: int) -> Dialogue | None:
    return (
        Dialogue.objects.filter(
            campaign=campaign, worker_id=worker_id, status=Dialogue.Status.IN_PROGRESS
        )
        .select_related("backend", "scenario", "skill")
        .order_by("-updated_at")
        .first()
    )


@transaction.atomic
def scenario_assign_next(
    *, participant: Participant, now: datetime | None = None
) -> Dialogue | None:
    """The worker's dialogue in progress (resumed), else a new one for the next slot, else None."""
    now = now or timezone.now()
    campaign = Campaign.objects.select_for_update().get(pk=participant.campaign_id)
    participant = Participant.objects.get(pk=participant.pk)
    worker_id = participant.user_id
    if participant.flagged:
        # A flagged worker's reservation is given back at once rather than after the timeout.
        Dialogue.objects.filter(
            campaign=campaign, worker_id=worker_id, status=Dialogue.Status.IN_PROGRESS
        ).update(
            status=Dialogue.Status.ABANDONED,
            abandon_reason=Dialogue.AbandonReason.FLAGGED,
            updated_at=now,
        )
        return None
    current = _current(campaign=campaign, worker_id=worker_id)
    if current is not None:
        # Resuming refreshes the worker's own reservation before the others' expired ones go.
        Dialogue.objects.filter(pk=current.pk).update(updated_at=now)
        current.updated_at = now
    scenario_holds_release_expired(campaign=campaign, now=now)
    if current is not None:
        return current
    if campaign.mode == Campaign.Mode.SIDE_BY_SIDE:
        if _cap_reached(campaign=campaign, worker_id=worker_id, now=now):
            return None
        conversation = side_by_side.side_by_side_create_next(
            campaign=campaign,
            worker_id=worker_id,
            holding=_holding_slot(campaign, now),
            order=lambda sample_id: _scenario_order(campaign, sample_id),
        )
        return conversation.left if conversation is not None else None
    slot = _pick_slot(campaign=campaign, worker_id=worker_id, now=now)
    if slot is None:
        return None
    sample = Sample.objects.select_related("dataset").get(pk=slot.sample_id)
    opening = opening_pick(
        campaign=campaign,
        backend_id=slot.backend_id,
        worker_id=worker_id,
        holding=_holding_slot(campaign, now),
    )
    return dialogue_start(
        campaign=campaign,
        backend_id=slot.backend_id,
        sample=sample,
        worker_id=worker_id,
        opening=opening,
    )


WORKER_ABANDON_REASONS = (
    Dialogue.AbandonReason.UNCLEAR,
    Dialogue.AbandonReason.UNFAMILIAR,
    Dialogue.AbandonReason.MODEL_BROKEN,
    Dialogue.AbandonReason.OTHER,
)
ABANDON_NOTE_MAX_LENGTH = 300


@transaction.atomic
def dialogue_abandon(
    *, dialogue: Dialogue, reason: str, note: str = "", now: datetime | None = None
) -> Dialogue:
    """The worker skips (no turn yet) or abandons (some turns) their reserved dialogue.

    Its slot is free again at once, not after the reservation timeout: the (backend, scenario)
    pair goes back to the pool for other workers (never to this worker, who had it). The reason
    is recorded and counted on the campaign page. Turns already written stay with the abandoned
    dialogue (never scored: only submitted and accepted dialogues are).
    """
    now = now or timezone.now()
    if reason not in WORKER_ABANDON_REASONS:
        raise AssignmentError(_("请选择跳过或放弃的原因。"))
    note = note.strip()
    if len(note) > ABANDON_NOTE_MAX_LENGTH:
        raise AssignmentError(_("说明最多 %(n)d 个字。") % {"n": ABANDON_NOTE_MAX_LENGTH})
    Campaign.objects.select_for_update().get(pk=dialogue.campaign_id)
    taken = Dialogue.objects.filter(pk=dialogue.pk, status=Dialogue.Status.IN_PROGRESS).update(
        status=Dialogue.Status.ABANDONED, abandon_reason=reason, abandon_note=note, updated_at=now
    )
    if not taken:
        raise AssignmentError(_("只有进行中的对话才能跳过或放弃。"))
    side_by_side.partners_abandon(campaign=dialogue.campaign)
    dialogue.refresh_from_db()
    return dialogue


@transaction.atomic
def dialogue_recollect(*, dialogue: Dialogue, now: datetime | None = None) -> Dialogue:
    """Start re-collecting a rejected dialogue: same worker, backend, scenario and opening.

    Calling it again while the re-collection is in progress returns that one.
    """
    now = now or timezone.now()
    Campaign.objects.select_for_update().get(pk=dialogue.campaign_id)
    dialogue = Dialogue.objects.select_related("scenario__dataset", "opening").get(pk=dialogue.pk)
    if dialogue.status != Dialogue.Status.REJECTED:
        raise AssignmentError(_("只有被退回的对话才能重新采集。"))
    if dialogue.worker_id is None:
        raise AssignmentError(_("这个对话没有对应的工作者，不能重新采集。"))
    existing = (
        dialogue.recollections.exclude(status=Dialogue.Status.ABANDONED).order_by("-pk").first()
    )
    if existing is not None:
        if existing.status != Dialogue.Status.IN_PROGRESS:
            raise AssignmentError(_("这个对话已经重新采集过了。"))
        return existing
    participant = Participant.objects.filter(
        campaign_id=dialogue.campaign_id, user_id=dialogue.worker_id
    ).first()
    if participant is not None and participant.flagged:
        raise AssignmentError(_("您的账号已被标记，不能继续采集。"))
    other = _current(campaign=dialogue.campaign, worker_id=dialogue.worker_id)
    if other is not None:
        raise AssignmentError(_("请先完成正在进行的对话，再重新采集被退回的对话。"))
    conversation = side_by_side.side_by_side_of(dialogue)
    if conversation is not None:
        # Both sides are re-collected together, as a new conversation in the same order.
        return side_by_side.side_by_side_recollect(
            conversation=conversation, recollect=_recollection_create
        ).left
    return _recollection_create(dialogue)


def _recollection_create(dialogue: Dialogue) -> Dialogue:
    """A fresh in-progress copy of a rejected dialogue (same worker, backend, scenario and
    opening; its first turn when the campaign has openings)."""
    dialogue = Dialogue.objects.select_related("scenario__dataset", "opening").get(pk=dialogue.pk)
    scenario = dialogue.scenario
    recollection = Dialogue.objects.create(
        campaign_id=dialogue.campaign_id,
        backend_id=dialogue.backend_id,
        scenario=scenario,
        opening=dialogue.opening,
        skill_id=dialogue.skill_id,
        language=scenario.dataset.language if scenario is not None else dialogue.language,
        worker_id=dialogue.worker_id,
        status=Dialogue.Status.IN_PROGRESS,
        grounding=scenario.grounding if scenario is not None else dialogue.grounding,
        recollection_of=dialogue,
    )
    if dialogue.opening is not None:
        opening_turn_create(dialogue=recollection, opening=dialogue.opening)
    return recollection


def worker_status(*, participant: Participant, now: datetime | None = None) -> WorkerStatus:
    """Done count, cap, whether more work is available, the current and the returned dialogues.

    `finished` (the worker gets the completion code) means: not flagged, at least one dialogue
    submitted, none in progress or awaiting re-collection, and nothing more to assign.
    """
    now = now or timezone.now()
    campaign = participant.campaign
    worker_id = participant.user_id
    done = (
        Dialogue.objects.filter(campaign=campaign, worker_id=worker_id, status__in=_COLLECTED)
        .filter(_one_per_conversation(campaign))
        .count()
    )
    current = _current(campaign=campaign, worker_id=worker_id)
    rejected = _awaiting_recollection(campaign=campaign, worker_id=worker_id)
    if participant.flagged:
        return WorkerStatus(
            done=done,
            cap=campaign.per_worker_cap,
            has_more=False,
            current=current,
            rejected=rejected,
            flagged=True,
            code_given=participant.finished_at is not None,
        )
    has_more = current is not None or _slot_available(
        campaign=campaign, worker_id=worker_id, now=now
    )
    return WorkerStatus(
        done=done,
        cap=campaign.per_worker_cap,
        has_more=has_more,
        current=current,
        rejected=rejected,
        finished=done > 0 and not has_more and not rejected,
        code_given=participant.finished_at is not None,
    )
