"""The waiting jobs of one pass, in queue order: priority, fair share, then submission time.

Within a priority, the jobs of users with less recent use go first: each owner's
fair-share factor (``billing/fair_share.py``), highest first; equal factors keep
submission order, or the order their owner gave them (``Job.queue_since``). Ahead
of all: a job for which borrowing jobs were preempted (``preemption.py``), until
it starts on what they freed; those whose victims are gone before those whose
victims still stop (the first take what was freed for them; the others have it
reserved: ``SchedulingPass.reserve_for_reclaiming``).

Each requested GPU model is its own queue (CPU jobs share one), so a blocked
V100 job never holds back a P4 job; quota-wait and resource-wait are separate
queues too, and ``queue_position`` counts within (state, model).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models.functions import Coalesce

from jobs.models import Image, Job, JobPort
from resources.catalog import ModelCatalog
from resources.quota import REQUEST_FIELDS, request_from_values
from resources.request import ResourceRequest

CPU_QUEUE = ""


@dataclass(slots=True)
class WaitingJob:
    pk: int
    owner_id: int
    state: str
    state_reason: str
    queue_position: int | None
    estimated_start: datetime | None
    max_runtime_minutes: int | None
    attempt: int
    expected_seconds: int | None
    request: ResourceRequest
    ports: tuple[int, ...] = ()
    priority: int = Job.Priority.NORMAL
    fair_share: float = 1.0  # the owner's factor (1.0: no recent use)
    preemptible: bool = False
    reclaiming: bool = False  # borrowing jobs were preempted for it; it has not started
    image_adding: str | None = None  # the name of its image while that is being added
    on_victims: bool = False  # reclaiming, and some of its victims still stop

    @property
    def requested_model(self) -> str | None:
        return self.request.gpu_model.name if self.request.gpu_model else None

    @property
    def likely_seconds(self) -> int | None:
        return likely_seconds(self.expected_seconds, self.max_runtime_minutes)

    @property
    def queue(self) -> str:
        return self.requested_model or CPU_QUEUE

    @property
    def host_ports_needed(self) -> int:
        """A host port per job port per replica, and a rendezvous port if distributed."""
        rendezvous = 1 if self.request.replicas > 1 else 0
        return self.request.replicas * len(self.ports) + rendezvous


# A waiting row: these columns, then two flags (reclaiming, on victims: at FLAGS and
# FLAGS + 1, added by ``waiting_rows``), then the request's (``REQUEST_FIELDS``).
WAITING_COLUMNS = (
    "pk",
    "owner_id",
    "state",
    "state_reason",
    "queue_position",
    "estimated_start",
    "max_runtime_minutes",
    "attempt",
    "expected_seconds",
    "priority",
    "preemptible",
    "image__state",
    "image__name",
)
_AT = {column: index for index, column in enumerate(WAITING_COLUMNS)}
FIRST_FIELDS = _AT["priority"]  # pk … expected_seconds: WaitingJob's fields in this order
FLAGS = len(WAITING_COLUMNS)


def waiting_rows() -> list[tuple]:
    """The columns of every waiting job, in queue order (one query; two if any wait).

    Whether borrowing jobs were preempted for a job (reclaiming), and whether some of
    them still stop (on victims), is asked of the few such jobs apart: asked of every
    waiting row inside the query, it cost PostgreSQL more than the rest of it.
    """
    waiting = Job.objects.filter(state__in=Job.WAITING_STATES).annotate(
        queued=Coalesce("queue_since", "submitted_at")
    )
    rows = list(
        waiting.order_by("-priority", "queued", "pk").values_list(*WAITING_COLUMNS, *REQUEST_FIELDS)
    )
    if not rows:
        return rows
    victims: dict[int, bool] = {}  # reclaiming job -> some of its victims still stop
    victim_rows = Job.objects.filter(
        preempted_for__isnull=False, preempted_for__state__in=Job.WAITING_STATES
    )
    for beneficiary, state in victim_rows.order_by().values_list("preempted_for_id", "state"):
        victims[beneficiary] = victims.get(beneficiary, False) or state in Job.ACTIVE_STATES
    rows = [
        (*row[:FLAGS], row[0] in victims, victims.get(row[0], False), *row[FLAGS:]) for row in rows
    ]
    if victims:  # stable: reclaiming first, those whose victims are gone before the others
        rows.sort(key=lambda row: (not row[FLAGS], row[FLAGS + 1]))
    return rows


def load_waiting(rows: list[tuple], catalog: ModelCatalog, *, ports=True) -> list[WaitingJob]:
    """The waiting jobs of ``waiting_rows`` with their ports (one more query, if any;
    none with ``ports=False``: readers of the order alone)."""
    if not rows:
        return []
    by_job: dict[int, list[int]] = {}
    if ports:
        for job_id, port in JobPort.objects.filter(job__state__in=Job.WAITING_STATES).values_list(
            "job_id", "port"
        ):
            by_job.setdefault(job_id, []).append(port)
    return [
        WaitingJob(
            *row[:FIRST_FIELDS],
            priority=row[_AT["priority"]],
            preemptible=row[_AT["preemptible"]],
            image_adding=row[_AT["image__name"]]
            if row[_AT["image__state"]] == Image.State.ADDING
            else None,
            reclaiming=row[FLAGS],
            on_victims=row[FLAGS + 1],
            request=request_from_values(row[FLAGS + 2 :], catalog),
            ports=tuple(sorted(by_job.get(row[0], ()))),
        )
        for row in rows
    ]


def in_fair_share_order(jobs: list[WaitingJob], factors: dict[int, float]) -> list[WaitingJob]:
    """``jobs`` (in priority, then submission order) with each priority's jobs by fair share."""
    for job in jobs:
        job.fair_share = factors.get(job.owner_id, 1.0)
    # Stable: jobs of one priority and factor keep their submission order.
    return sorted(
        jobs, key=lambda job: (not job.reclaiming, job.on_victims, -job.priority, -job.fair_share)
    )


def likely_seconds(expected_seconds: int | None, max_runtime_minutes: int | None) -> int | None:
    """How long a job will likely run once started: expected, else its max run time."""
    if expected_seconds is not None:
        return expected_seconds
    return None if max_runtime_minutes is None else max_runtime_minutes * 60
