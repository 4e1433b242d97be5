"""The cluster's cards, held against in use (docs/usage-metrics.md): now, per node and GPU
model, and hour by hour over the last day; and a job's average GPU use.

A card is *held* while a job holds it (whole, or a vGPU share of it). Cards *in use* are
the held cards' GPU use in cards' worth: 4 cards at 25 % are 1 card in use. A held card is
*idle* when the agent's last look saw it below the site's ``idle_gpu_percent`` (the
idle-cards alert's line). Cards only Slurm's own jobs hold are "held outside"; held cards
no agent looked at (Slurm runs the job) are "not sampled". Over the day a card counts once
however many vGPU jobs share it, each job's look weighing its share of the card."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import Avg, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from resources.models import GpuCard, Node, ResourceKind, SiteSettings

from .models import AttemptSample, Job, ReplicaAttempt

HOUR = 3600
DAY_HOURS = 24
GPU_KINDS = [ResourceKind.GPU, ResourceKind.VGPU]


@dataclass
class Cards:
    """Cards of a node, a model or the cluster, now."""

    total: int = 0
    held: int = 0
    idle: int = 0
    unsampled: int = 0
    held_outside: int = 0
    utils: list[int] = field(default_factory=list)  # the sampled held cards' GPU %

    @property
    def in_use(self) -> float:
        return round(sum(self.utils) / 100, 2)

    @property
    def free(self) -> int:
        return max(0, self.total - self.held - self.held_outside)

    @property
    def average_util(self) -> float | None:
        return round(sum(self.utils) / len(self.utils), 1) if self.utils else None

    def add(self, other: Cards) -> None:
        for name in ("total", "held", "idle", "unsampled", "held_outside"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.utils.extend(other.utils)


@dataclass(frozen=True)
class Hour:
    """One hour of the day: the cards held, in use and not sampled, on average over it."""

    start: datetime
    held: float
    in_use: float
    unsampled: float

    @property
    def average_util(self) -> float | None:
        sampled = self.held - self.unsampled
        return round(self.in_use / sampled * 100, 1) if sampled > 0 else None


def cluster_now(now: datetime | None = None) -> dict:
    """Per ready node with cards and per GPU model, and the cluster's sum. Three queries."""
    now = now or timezone.now()
    threshold = SiteSettings.load().idle_gpu_percent
    looks = _latest_looks(now)
    nodes: dict[int, tuple[Node, Cards]] = {}
    cards = GpuCard.objects.filter(node__state=Node.State.READY).select_related("node__gpu_model")
    for card in cards.order_by("node__gpu_model__name", "node__name", "index"):
        node, figures = nodes.setdefault(
            card.node_id, (card.node, Cards(held_outside=card.node.gpu_held_outside))
        )
        figures.total += 1
        if not (card.compute_allocated_percent or card.memory_allocated_mib):
            continue
        figures.held += 1
        util = looks.get((card.node_id, card.index))
        if util is None:
            figures.unsampled += 1
            continue
        figures.utils.append(util)
        figures.idle += util < threshold
    models: dict[str, Cards] = defaultdict(Cards)
    cluster = Cards()
    for node, figures in nodes.values():
        models[node.gpu_model.name].add(figures)
        cluster.add(figures)
    return {
        "threshold": threshold,
        "nodes": [{"node": node, "cards": figures} for node, figures in nodes.values()],
        "models": [{"name": name, "cards": figures} for name, figures in models.items()],
        "cluster": cluster,
    }


def _latest_looks(now: datetime) -> dict[tuple[int, int], int]:
    """(node, card index) → GPU % at the running attempts' latest look, if recent."""
    recent = now - timedelta(seconds=3 * settings.TRAINYARD_USAGE_SAMPLE_SECONDS)
    samples = (
        AttemptSample.objects.filter(
            at__gte=recent, at__lte=now, attempt__state=ReplicaAttempt.State.RUNNING
        )
        .order_by("at")
        .values_list("attempt_id", "attempt__node_id", "gpus")
    )
    latest = {attempt: (node, cards) for attempt, node, cards in samples}
    looks: dict[tuple[int, int], int] = {}
    for node_id, cards in latest.values():
        for card in cards:  # a card two vGPU jobs share: the same card, seen twice
            looks[node_id, card["index"]] = card["util"]
    return looks


@dataclass(frozen=True)
class _Held:
    """An attempt that held cards: which, for how long, and its share of each."""

    pk: int
    job_id: int
    cards: list[tuple]
    share: float
    start: float
    end: float


def cluster_day(now: datetime | None = None) -> list[Hour]:
    """The last ``DAY_HOURS`` hours, the current one so far last. Two queries."""
    now = now or timezone.now()
    first = int(now.timestamp()) // HOUR - DAY_HOURS + 1
    since = _at(first)
    attempts = _held(
        Q(ended_at__isnull=True) | Q(ended_at__gt=since),
        started_at__isnull=False,
        started_at__lt=now,
        since=since,
        now=now,
    )
    held = _card_seconds(attempts)
    utils = _hourly_utils([a.pk for a in attempts], since, now)
    in_use: dict[int, float] = defaultdict(float)
    unsampled: dict[int, float] = defaultdict(float)
    for attempt in attempts:
        for hour, seconds in _hours_of(attempt.start, attempt.end):
            card_seconds = seconds * len(attempt.cards) * attempt.share
            util = utils.get((attempt.pk, hour))
            if util is None:
                unsampled[hour] += card_seconds
            else:
                in_use[hour] += card_seconds * util / 100
    hours = []
    for hour in range(first, first + DAY_HOURS):
        span = min(HOUR, now.timestamp() - hour * HOUR)
        hours.append(
            Hour(
                start=_at(hour),
                held=round(sum(held[hour].values()) / span, 2),
                in_use=round(in_use[hour] / span, 2),
                unsampled=round(unsampled[hour] / span, 2),
            )
        )
    return hours


def _at(hour: int) -> datetime:
    return datetime.fromtimestamp(hour * HOUR, tz=timezone.get_current_timezone())


def _held(*filters, since: datetime | None, now: datetime, **lookups) -> list[_Held]:
    """The GPU jobs' attempts that match, clipped to ``since``…``now``. A card is (node,
    index); one of an attempt without indices (Slurm placed it) is its own, by attempt."""
    rows = ReplicaAttempt.objects.filter(
        *filters, replica__job__resource_kind__in=GPU_KINDS, **lookups
    ).values_list(
        "pk",
        "replica__job_id",
        "node_id",
        "replica__card_indices",
        "replica__job__gpu_count",
        "replica__job__vgpu_compute_percent",
        "started_at",
        "ended_at",
    )
    held = []
    for pk, job_id, node_id, indices, count, compute, started, ended in rows:
        start = max(started, since) if since else started
        held.append(
            _Held(
                pk=pk,
                job_id=job_id,
                cards=[(node_id, i) for i in indices] or [(pk, i) for i in range(count)],
                share=(compute or 100) / 100,
                start=start.timestamp(),
                end=(ended or now).timestamp(),
            )
        )
    return held


def _hours_of(start: float, end: float):
    """(hour, seconds of it) for each hour the span ``start``…``end`` touches."""
    hour = int(start) // HOUR
    while hour * HOUR < end:
        yield hour, min(end, (hour + 1) * HOUR) - max(start, hour * HOUR)
        hour += 1


def _card_seconds(attempts: list[_Held]) -> dict[int, dict[tuple, float]]:
    """hour → card → seconds any job held it in that hour."""
    spans: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for attempt in attempts:
        for card in attempt.cards:
            spans[card].append((attempt.start, attempt.end))
    seconds: dict[int, dict[tuple, float]] = defaultdict(lambda: defaultdict(float))
    for card, card_spans in spans.items():
        for start, end in _merged(card_spans):
            for hour, overlap in _hours_of(start, end):
                seconds[hour][card] += overlap
    return seconds


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _hourly_utils(attempt_ids: list[int], since: datetime | None, now: datetime) -> dict:
    """(attempt, hour) → its cards' mean GPU % over its looks in that hour, averaged in the
    database (a day of a busy cluster's looks is too many rows to carry here)."""
    samples = AttemptSample.objects.filter(
        attempt_id__in=attempt_ids, gpu_util__isnull=False, at__lte=now
    )
    if since is not None:
        samples = samples.filter(at__gte=since)
    rows = (
        samples.annotate(hour=TruncHour("at", tzinfo=UTC))
        .values("attempt_id", "hour")
        .annotate(util=Avg("gpu_util"))
        .order_by()
        .values_list("attempt_id", "hour", "util")
    )
    return {(pk, int(hour.timestamp()) // HOUR): util for pk, hour, util in rows}


def average_card_use(job_ids: list[int], now: datetime | None = None) -> dict[int, float]:
    """Each job's GPU % over the hours its cards were sampled (each hour weighing the card
    time it held, so a thinned hour counts as much as one in full detail). Two queries."""
    if not job_ids:
        return {}
    now = now or timezone.now()
    attempts = _held(replica__job_id__in=job_ids, started_at__isnull=False, since=None, now=now)
    utils = _hourly_utils([a.pk for a in attempts], None, now)
    weighted: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for attempt in attempts:
        for hour, seconds in _hours_of(attempt.start, attempt.end):
            util = utils.get((attempt.pk, hour))
            if util is not None:
                sums = weighted[attempt.job_id]
                sums[0] += util * seconds * len(attempt.cards)
                sums[1] += seconds * len(attempt.cards)
    return {job: round(total / seconds, 1) for job, (total, seconds) in weighted.items() if seconds}


def idle_jobs() -> list[Job]:
    """The running jobs marked for idle cards (``jobs/idle_cards.py``), longest idle first."""
    return list(
        Job.objects.filter(state=Job.State.RUNNING, idle_since__isnull=False)
        .select_related("owner", "gpu_model")
        .order_by("idle_since")
    )
