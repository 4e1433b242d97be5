"""Which jobs Slurm places, and how many of them may wait inside Slurm at once.

A GPU model served only by Slurm nodes is Slurm's to place: the pass admits a job of
it (quota, billing, fair share) and has it submitted at once, without a node, rather
than choosing the node and submitting it pinned there; Slurm then starts it the moment
cards free, as it would a job submitted by plain ``sbatch`` (``docs/slurm-placement.md``).

Trainyard's order still decides who goes next: only ``limit`` admitted jobs of a model
wait inside Slurm at once (the look-ahead), and the rest wait in Trainyard's queue in
its own order (priority, fair share, submission). The default is the model's cards on
Slurm nodes: Slurm has a job ready for every card that can free at once, and a job
admitted later overtakes all but that many of those admitted before it. A lower limit
gives Trainyard's order more say and Slurm's cards more idle moments between jobs.

Not yet Slurm's to place (placed by Trainyard and pinned, as on local-agent nodes): a
distributed job (its replicas' rendezvous is chosen before it starts), a job of a ``*``
model or of a model that local-agent nodes serve too, a CPU job, a job sharing cards.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q, Sum

from core.reasons import Reason
from jobs.models import Job, Replica
from resources.models import Node

from .placement import Shape
from .queue import WaitingJob
from .writes import Start

LOOKAHEAD_REASON = "slurm.lookahead"


@dataclass
class Lookahead:
    cards: dict[str, int]  # model -> its cards on ready Slurm nodes, for models only Slurm serves
    inside: dict[str, int]  # model -> its jobs submitted for Slurm to place, not started yet
    setting: int = 0  # TRAINYARD_SLURM_LOOKAHEAD (0: the model's cards)

    @classmethod
    def load(cls) -> Lookahead:
        """Two queries: the models only Slurm serves, and how many of theirs wait in Slurm."""
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
        inside = {}
        if cards:
            waiting = (
                Replica.objects.filter(node__isnull=True, index=0, job__state=Job.State.STARTING)
                .values("job__gpu_model__name")
                .annotate(jobs=Count("pk"))
            )
            inside = {row["job__gpu_model__name"]: row["jobs"] for row in waiting}
        return cls(cards, inside, settings.TRAINYARD_SLURM_LOOKAHEAD)

    def model_for(self, job: WaitingJob, shape: Shape) -> str | None:
        """The model Slurm places ``job`` on, or None when Trainyard places it."""
        model = job.requested_model
        if (
            model is None
            or model not in self.cards
            or shape.models != (model,)
            or shape.replicas != 1
            or shape.whole_cards < 1
        ):
            return None
        return model

    def limit(self, model: str) -> int:
        return self.setting or max(1, self.cards[model])

    def enter(self, model: str) -> bool:
        """Take a place in Slurm's queue for a job of ``model``, if one is left."""
        if self.inside.get(model, 0) >= self.limit(model):
            return False
        self.inside[model] = self.inside.get(model, 0) + 1
        return True


def submit_for_slurm(scheduling, job: WaitingJob, shape: Shape) -> bool:
    """Whether Slurm places ``job`` (admitted, within its quota): then it is submitted
    now if the look-ahead has room, else it waits its turn in Trainyard's queue.

    While jobs borrowing beyond their quota hold cards of its model, Trainyard places it
    (and may preempt them for it): a job inside Slurm could not reclaim those cards.
    """
    lookahead: Lookahead | None = scheduling.lookahead
    model = lookahead.model_for(job, shape) if lookahead is not None else None
    if model is None or _borrowed(scheduling, model):
        return False
    if not lookahead.enter(model):
        reason = lookahead_reason(model, waiting=lookahead.inside[model])
        scheduling.outcomes[job.pk] = (Job.State.RESOURCE_WAIT, reason)
        scheduling._want(job, shape)
        return True
    host_ports = scheduling._take_ports(job)
    if host_ports is None:
        lookahead.inside[model] -= 1
        return True
    scheduling.quotas.charge_started(job, [model], scheduling.now)
    scheduling.starts.append(Start(job, (), tuple(host_ports), slurm_model=model))
    return True


def _borrowed(scheduling, model: str) -> bool:
    nodes = scheduling.cluster.nodes
    return any(
        use.node_pk in nodes and nodes[use.node_pk].model == model
        for borrower in scheduling.borrowing().candidates.values()
        for use in borrower.uses
    )


def lookahead_reason(model: str, *, waiting: int) -> Reason:
    return Reason(LOOKAHEAD_REASON, {"model": model, "waiting": waiting})
