"""Which jobs Slurm places, and how many of them may wait inside Slurm at once.

A GPU model served only by Slurm nodes is Slurm's to place: the pass admits a job of
it (quota, billing, fair share) and has it submitted at once, without a node, rather
than choosing the node and submitting it pinned there; Slurm then starts it the moment
cards free, as it would a job submitted by plain ``sbatch`` (``docs/slurm-placement.md``).

Trainyard's order still decides who goes next. Inside Slurm, each job's nice carries
that order (``slurm/priority.py``). A job enters Slurm's queue only while fewer than
``limit`` (the look-ahead) of the jobs already inside would go before it there; the rest
wait in Trainyard's queue in its own order (priority, fair share, submission). So a job
of equal standing waits behind at most ``limit`` others inside Slurm, and one that
outranks them enters at once and starts when the next cards free. The default is two
jobs per card of the model on Slurm nodes (``LOOKAHEAD_PER_CARD``): when every card
frees at once, Slurm starts a job on each and still holds as many for the next wave
while Trainyard refills its queue (tracking, report, pass, submission: a second or two
under load, longer than a short job). With one job per card, 500 one-second jobs kept
the cards idle 3 to 6 s each with nothing in Slurm's queue, against about 2 s with two
(``bench/slurm_side_by_side.py``, ``docs/slurm-placement.md``). A lower limit gives
Slurm's cards more idle moments between jobs; a higher one fixes more jobs' places
(their nice) inside Slurm before Trainyard's order could change them.

A distributed job is Slurm's to place too: one Slurm job of ``-N`` nodes, whose
replicas find replica 0's node when Slurm starts them (``slurm/scripts.py``). So is a job
of a ``*`` model whose members (those with nodes) only Slurm serves: Trainyard picks the
member when it admits it (``_member``), as Kueue assigns a flavor, so that its quota is
charged exactly from then on; Slurm picks among that member's nodes. Not yet Slurm's to
place (placed by Trainyard and pinned, as on local-agent nodes): a job of a model that
local-agent nodes serve too, a CPU job, a job sharing cards.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Q, Sum

from core.reasons import Reason
from jobs.execution.slurm.priority import nice
from jobs.models import Job, Replica
from resources.models import Node

from .lookahead_forecast import Queued, in_slurm_order, lookahead_starts
from .placement import Shape
from .queue import WaitingJob, likely_seconds
from .writes import Start

LOOKAHEAD_REASON = "slurm.lookahead"
LOOKAHEAD_PER_CARD = 2  # the default look-ahead, per card of the model on Slurm nodes


@dataclass
class Lookahead:
    cards: dict[str, int]  # model -> its cards on ready Slurm nodes, for models only Slurm serves
    # model -> each of its jobs submitted for Slurm to place, not started: (owner,
    # priority), and the job as the forecast replays it; in submission order
    inside_jobs: dict[str, list[tuple[tuple[int, int], Queued]]] = field(default_factory=dict)
    setting: int = 0  # TRAINYARD_SLURM_LOOKAHEAD (0: LOOKAHEAD_PER_CARD per card)
    inside: dict[str, list[int]] = field(default_factory=dict)  # model -> their nices, sorted
    # model -> (nice, job) of the jobs this pass submitted, and of those it left behind
    entered: dict[str, list[tuple[int, Queued]]] = field(default_factory=dict)
    held: dict[str, list[tuple[int, Queued]]] = field(default_factory=dict)
    ranked: dict[str, list[tuple[int, Queued]]] = field(default_factory=dict)
    served: set[str] = field(default_factory=set)  # every model some node serves

    @classmethod
    def load(cls) -> Lookahead:
        """Two queries: the models only Slurm serves, and their jobs waiting in Slurm."""
        slurm = Q(executor=Node.Executor.SLURM)
        models = (
            Node.objects.filter(gpu_model__isnull=False, gpu_count__gt=0)
            .values("gpu_model__name")
            .annotate(
                nodes=Count("pk"),
                slurm_nodes=Count("pk", filter=slurm),
                cards=Sum("gpu_count", filter=slurm & Q(state=Node.State.READY)),
            )
        )
        cards = {
            row["gpu_model__name"]: row["cards"] or 0
            for row in models
            if row["nodes"] == row["slurm_nodes"]
        }
        served = {row["gpu_model__name"] for row in models}
        inside: dict[str, list[tuple[tuple[int, int], Queued]]] = {}
        if cards:
            waiting = (
                Replica.objects.filter(node__isnull=True, index=0, job__state=Job.State.STARTING)
                .order_by("job__submitted_at", "job_id")
                .values_list(*INSIDE_COLUMNS)
            )
            for model, asked, owner_id, priority, *job in waiting:
                # (Submitted before the model was kept: the job's own, never a ``*`` one.)
                entry = ((owner_id, priority), _inside(*job))
                inside.setdefault(model or asked, []).append(entry)
        return cls(cards, inside, settings.TRAINYARD_SLURM_LOOKAHEAD, served=served)

    @property
    def owners(self) -> set[int]:
        return {owner for jobs in self.inside_jobs.values() for (owner, _p), _job in jobs}

    def rank(self, factors: dict[int, float]) -> None:
        """Place the jobs inside Slurm in Trainyard's order (their nices), with these
        fair-share factors of their owners."""
        self.ranked = {
            model: sorted(
                ((nice(priority, factors.get(owner, 1.0)), job) for (owner, priority), job in jobs),
                key=lambda pair: pair[0],
            )
            for model, jobs in self.inside_jobs.items()
        }
        self.inside = {model: [rank for rank, _job in jobs] for model, jobs in self.ranked.items()}

    def models_for(self, shape: Shape) -> list[str]:
        """The models Slurm may place a job of ``shape`` on (those its quota admits, of a
        ``*`` model the members that nodes serve); none when Trainyard places it: some are
        served by local-agent nodes too, or it is no job of whole cards."""
        if not self.cards or not shape.models or None in shape.models or shape.whole_cards < 1:
            return []  # (no model is Slurm's alone, as at a site without Slurm: at once)
        models = [model for model in shape.models if model in self.served]
        if not models or any(model not in self.cards for model in models):
            return []
        return models

    def limit(self, model: str) -> int:
        return self.setting or max(1, LOOKAHEAD_PER_CARD * self.cards[model])

    def ahead(self, model: str, rank: int) -> int:
        """How many jobs inside Slurm would go before one of nice ``rank`` (ties: those
        that came first)."""
        return bisect.bisect_right(self.inside.get(model, []), rank)

    def enter(self, model: str, rank: int) -> bool:
        """Take a place in Slurm's queue for a job of ``model`` and nice ``rank`` if fewer
        than the look-ahead would go before it there: Slurm then starts it as Trainyard's
        order says (a job that outranks those inside enters even when they are many)."""
        if self.ahead(model, rank) >= self.limit(model):
            return False
        bisect.insort(self.inside.setdefault(model, []), rank)
        return True


def submit_for_slurm(scheduling, job: WaitingJob, shape: Shape) -> bool:
    """Whether Slurm places ``job`` (admitted, within its quota): then it is submitted
    now if the look-ahead has room, else it waits its turn in Trainyard's queue.

    While jobs borrowing beyond their quota hold cards of its model, Trainyard places it
    (and may preempt them for it): a job inside Slurm could not reclaim those cards.
    """
    lookahead: Lookahead | None = scheduling.lookahead
    models = lookahead.models_for(shape) if lookahead is not None else []
    if not models or any(_borrowed(scheduling, model) for model in models):
        return False
    rank = nice(job.priority, job.fair_share)
    model = _member(scheduling, lookahead, models, rank)
    queued = Queued(job.pk, shape.whole_cards * shape.replicas, job.likely_seconds)
    if not lookahead.enter(model, rank):
        reason = lookahead_reason(model, waiting=lookahead.ahead(model, rank))
        scheduling.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, reason)
        scheduling._want(job, shape)
        lookahead.held.setdefault(model, []).append((rank, queued))
        return True
    host_ports = scheduling._take_ports(job)
    if host_ports is None:
        lookahead.inside[model].remove(rank)
        return True
    lookahead.entered.setdefault(model, []).append((rank, queued))
    scheduling.quotas.charge_started(job, [model] * shape.replicas, scheduling.now)
    model_id = scheduling.catalog.models[model].pk
    scheduling.starts.append(
        Start(job, (), tuple(host_ports), slurm_model=model, slurm_model_id=model_id)
    )
    return True


def _member(scheduling, lookahead: Lookahead, models: list[str], rank: int) -> str:
    """Which of ``models`` a job goes to Slurm for (one, unless it asked for a ``*``
    model), as Kueue assigns a flavor at admission: one whose look-ahead has room, with
    the most cards free in Trainyard's view less its jobs inside Slurm; else the one with
    the fewest ahead of it. Its quota is charged to that model from now on, as if placed."""
    if len(models) == 1:
        return models[0]
    room = [model for model in models if lookahead.ahead(model, rank) < lookahead.limit(model)]
    if not room:
        return min(models, key=lambda model: (lookahead.ahead(model, rank), model))
    cluster = scheduling.cluster
    return max(room, key=lambda m: (cluster.whole_free_of(m) - len(lookahead.inside.get(m, [])), m))


def _borrowed(scheduling, model: str) -> bool:
    nodes = scheduling.cluster.nodes
    return any(
        use.node_pk in nodes and nodes[use.node_pk].model == model
        for borrower in scheduling.borrowing().candidates.values()
        for use in borrower.uses
    )


def held_starts(scheduling) -> dict[int, datetime | None]:
    """The expected starts of the jobs this pass left behind the look-ahead
    (``lookahead_forecast.py``: behind those inside Slurm, at Slurm's estimates)."""
    lookahead: Lookahead | None = scheduling.lookahead
    if lookahead is None or not lookahead.held:
        return {}
    queues = {
        model: in_slurm_order(
            lookahead.ranked.get(model, []), lookahead.entered.get(model, []), held
        )
        for model, held in lookahead.held.items()
    }
    starts = lookahead_starts(
        now=scheduling.now,
        cluster=scheduling.cluster,
        releases=scheduling.releases(),
        queues=queues,
    )
    return {job.pk: starts[job.pk] for held in lookahead.held.values() for _rank, job in held}


# Model (submitted for, asked for), owner, priority, then the forecast's job (``_inside``).
INSIDE_COLUMNS = (
    "slurm_model__name",
    "job__gpu_model__name",
    "job__owner_id",
    "job__priority",
    "job_id",
    "job__gpu_count",
    "job__replicas",
    "job__estimated_start",
    "job__expected_seconds",
    "job__max_runtime_minutes",
)


def _inside(pk, cards, replicas, slurm_start, expected_seconds, max_runtime_minutes) -> Queued:
    return Queued(
        pk, cards * replicas, likely_seconds(expected_seconds, max_runtime_minutes), slurm_start
    )


def lookahead_reason(model: str, *, waiting: int) -> Reason:
    return Reason(LOOKAHEAD_REASON, {"model": model, "waiting": waiting})
