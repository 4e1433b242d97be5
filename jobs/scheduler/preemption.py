"""Preemption: which borrowing jobs stop so that a job within its quota can start.

Only a job that borrows idle quota (``Job.borrowed``: preemptible, started beyond its
owner's quota) is ever preempted, and only for another owner's job within its quota
that waits for capacity and that the capacity freed lets start, on one placement (an
owner's own borrowing job stops borrowing once their quota has room for it:
``Quotas.end_borrowing``). The victims are chosen, in order of preference: fewest
jobs; then the most recently started; then the fewest card-hours lost. A victim is
freed whole (every replica of a gang).

No cycles: a beneficiary takes the capacity when its victims stop (it sorts first in the
queue until it starts, ``queue.waiting_rows``, and what it needs beside their capacity is
claimed for it meanwhile, ``reclaim.py``); while its victims stop it preempts no more and
starts nowhere else; a stopping victim is never chosen again; and a borrowing job is
never a beneficiary (it starts only on capacity no within-quota job waits for).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from jobs.models import Job

from .backfill import Release
from .cluster import Cluster, ReplicaUse

# A victim still running this long after it was asked to stop is asked again (the stop
# is idempotent; its KILL time stands).
ASK_AGAIN_AFTER = timedelta(seconds=30)


@dataclass(frozen=True)
class Borrower:
    """An active borrowing job as preemption sees it."""

    job_id: int
    owner_id: int
    started_at: datetime | None  # None: still starting
    uses: tuple[ReplicaUse, ...]

    def card_hours_lost(self, now: datetime) -> float:
        """The card-hours its current attempt has run (lost unless it checkpointed)."""
        if self.started_at is None:
            return 0.0
        cards = sum(card.compute_percent for use in self.uses for card in use.cards) / 100
        return cards * max((now - self.started_at).total_seconds(), 0) / 3600


@dataclass
class Borrowing:
    """The borrowing jobs of the pass: those that may be preempted, and those stopping."""

    candidates: dict[int, Borrower]
    stopping_for: dict[int, list[int]]  # beneficiary -> its victims, not yet stopped
    asked_at: dict[int, datetime] = field(default_factory=dict)  # victim -> when marked

    @classmethod
    def load(cls, releases: Iterable[Release]) -> Borrowing:
        """From the active borrowing jobs (one query) and what each holds (``releases``)."""
        rows = Job.objects.filter(state__in=Job.ACTIVE_STATES, borrowed=True).values_list(
            "pk",
            "owner_id",
            "started_at",
            "preempt_requested_at",
            "preempted_for_id",
            "stop_requested_at",
        )
        uses: dict[int, list[ReplicaUse]] = {}
        for release in releases:
            uses.setdefault(release.job_id, []).append(release.use)
        candidates: dict[int, Borrower] = {}
        stopping_for: dict[int, list[int]] = {}
        asked_at: dict[int, datetime] = {}
        for pk, owner_id, started_at, preempt_requested, beneficiary, stop_requested in rows:
            if preempt_requested is not None:
                if beneficiary is not None:
                    stopping_for.setdefault(beneficiary, []).append(pk)
                    asked_at[pk] = preempt_requested
            elif stop_requested is None and pk in uses:
                candidates[pk] = Borrower(pk, owner_id, started_at, tuple(uses[pk]))
        return cls(candidates, stopping_for, asked_at)

    def unanswered(self, beneficiary: int, now: datetime) -> list[int]:
        """Its victims asked to stop long enough ago that the message may have been lost
        (a worker that died after the pass committed): to ask again, which is harmless."""
        return [
            victim
            for victim in self.stopping_for.get(beneficiary, ())
            if victim in self.asked_at and now - self.asked_at[victim] > ASK_AGAIN_AFTER
        ]

    def claim(self, victims: list[Borrower], beneficiary: int) -> None:
        for victim in victims:
            del self.candidates[victim.job_id]
        self.stopping_for[beneficiary] = [victim.job_id for victim in victims]


def choose_victims(
    borrowers: Iterable[Borrower], *, cluster: Cluster, fits: Callable[[], bool], now: datetime
) -> list[Borrower] | None:
    """The fewest borrowers whose freed capacity lets ``fits`` place the waiting job, or None.

    ``cluster`` is changed while trying and given back as it was.
    """
    ordered = sorted(
        borrowers,
        key=lambda b: (-(b.started_at or now).timestamp(), b.card_hours_lost(now), b.job_id),
    )

    def free(victim: Borrower, sign: int = -1) -> None:
        for use in victim.uses:
            cluster.allocate(use, sign)

    for victim in ordered:
        free(victim)
        placed = fits()
        free(victim, +1)
        if placed:
            return [victim]
    chosen: list[Borrower] = []
    for victim in ordered:
        free(victim)
        chosen.append(victim)
        if fits():
            break
    else:
        for victim in chosen:
            free(victim, +1)
        return None
    # Fewest jobs: give back each one the placement does not need, least preferred first.
    for victim in reversed(chosen[:-1]):
        free(victim, +1)
        if fits():
            chosen.remove(victim)
        else:
            free(victim)
    for victim in chosen:
        free(victim, +1)
    return chosen
