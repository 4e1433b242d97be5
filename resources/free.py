"""The free-resource hint: what ready nodes have free, as a snapshot with an "as of" time.

The hint is not live (seed 002): a snapshot is computed by a periodic task or
a Refresh button, and pages read the newest one. Computing it takes a fixed
number of queries whatever the number of nodes: the per-node figures are
grouped in the database and folded per model in Python. The user's own free
quota is added when the panel is shown, since it differs per user
(``jobs.free_panel`` gathers what the user's jobs hold and billing's refusals).
What jobs outside Trainyard hold on a Slurm node (``Node.*_held_outside*``) is
counted as taken, and shown apart (``held_outside_*``).
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Max, Q, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from .models import MIB_PER_GIB, MILLI_PER_CORE, FreeResourceSnapshot, GpuCard, GpuModel, Node
from .quota import quota_limits
from .vector import CPU, MEMORY, ResourceVector


def free_resources_compute() -> dict:
    """Free and total cards per GPU model, and CPU and memory over all ready nodes."""
    return {"gpu_models": _gpu_models_free(), "cpu": _cpu_free()}


def free_resources_refresh() -> FreeResourceSnapshot:
    """Compute a new snapshot and drop the older ones."""
    data = free_resources_compute()
    with transaction.atomic():
        snapshot = FreeResourceSnapshot.objects.create(as_of=timezone.now(), data=data)
        FreeResourceSnapshot.objects.filter(as_of__lt=snapshot.as_of).delete()
    return snapshot


def free_resources_latest() -> FreeResourceSnapshot:
    """The newest snapshot; the first caller on a new site computes one."""
    snapshot = FreeResourceSnapshot.objects.order_by("-as_of").first()
    return snapshot or free_resources_refresh()


def free_panel(
    *, user: AbstractBaseUser, used: ResourceVector, refusals: dict, snapshot: FreeResourceSnapshot
) -> dict:
    """What the panel and ``GET /api/v1/resources/free`` show to ``user``.

    The callers (``jobs.free_panel``) pass what the user's jobs hold (``used``)
    and billing's refusals by model name: each model says whether ``user`` may
    use it, and why not, by the rule submit applies.
    """
    models = [
        {
            **row,
            "available_to_you": row["name"] not in refusals,
            "not_available_reason": refusals[row["name"]].message
            if row["name"] in refusals
            else None,
        }
        for row in snapshot.data["gpu_models"]
    ]
    return {
        "as_of": snapshot.as_of,
        **snapshot.data,
        "gpu_models": models,
        "quota": quota_free(limits=quota_limits(user=user), used=used),
    }


def wholly_free(path: str = "") -> Q:
    """Cards nobody holds any of, compute or memory (reached through ``path``, e.g.
    ``"cards__"`` from a node): what a whole-card request may take."""
    return Q(**{f"{path}compute_allocated_percent": 0, f"{path}memory_allocated_mib": 0})


def _per_node_cards() -> list[dict]:
    """One row per ready node with cards: its model, total and wholly free cards, and the
    cards jobs outside Trainyard hold there (Slurm's, at the last sync)."""
    free_card = wholly_free()
    return list(
        GpuCard.objects.filter(node__state=Node.State.READY)
        .values("node_id", "node__gpu_model_id", "node__gpu_held_outside")
        .annotate(
            total=Count("pk"),
            free=Count("pk", filter=free_card),
            free_compute=Sum(Value(100) - F("compute_allocated_percent")),
        )
        .order_by()
    )


def _gpu_models_free() -> list[dict]:
    by_model: dict[int, dict] = defaultdict(
        lambda: {
            "total": 0,
            "free": 0,
            "largest": 0,
            "nodes": 0,
            "free_compute": 0,
            "held_outside": 0,
        }
    )
    for row in _per_node_cards():
        figures = by_model[row["node__gpu_model_id"]]
        # Cards held outside Trainyard are taken from its free ones, whole.
        taken = min(row["node__gpu_held_outside"], row["free"])
        free = row["free"] - taken
        figures["total"] += row["total"]
        figures["free"] += free
        figures["largest"] = max(figures["largest"], free)
        figures["nodes"] += 1
        figures["free_compute"] += (row["free_compute"] or 0) - 100 * taken
        figures["held_outside"] += row["node__gpu_held_outside"]
    models = GpuModel.objects.prefetch_related("members").order_by("name")
    return [_model_entry(model, by_model) for model in models]


def _model_entry(model: GpuModel, by_model: dict[int, dict]) -> dict:
    # An aggregated model adds up its members; it has no nodes of its own.
    ids = [m.pk for m in model.members.all()] if model.is_aggregated else [model.pk]
    parts = [by_model[pk] for pk in ids if pk in by_model]
    return {
        "name": model.name,
        "free_cards": sum(p["free"] for p in parts),
        "total_cards": sum(p["total"] for p in parts),
        "largest_free_on_one_node": max((p["largest"] for p in parts), default=0),
        "nodes": sum(p["nodes"] for p in parts),
        "aggregated": model.is_aggregated,
        "supports_vgpu": model.supports_vgpu,
        "free_vgpu_compute_percent": sum(p["free_compute"] for p in parts),
        "held_outside_cards": sum(p["held_outside"] for p in parts),
    }


def _cpu_free() -> dict:
    # What jobs outside Trainyard hold (Slurm's, at the last sync) is not free either.
    cpu_free = Greatest(F("cpu_milli") - F("cpu_allocated_milli") - F("cpu_held_outside_milli"), 0)
    memory_free = Greatest(
        F("memory_mib") - F("memory_allocated_mib") - F("memory_held_outside_mib"), 0
    )
    totals = Node.objects.filter(state=Node.State.READY).aggregate(
        nodes=Count("pk"),
        cpu_total=Sum("cpu_milli"),
        cpu_free=Sum(cpu_free),
        cpu_largest=Max(cpu_free),
        cpu_held_outside=Sum("cpu_held_outside_milli"),
        memory_total=Sum("memory_mib"),
        memory_free=Sum(memory_free),
        memory_largest=Max(memory_free),
        memory_held_outside=Sum("memory_held_outside_mib"),
    )
    return {
        "nodes": totals["nodes"],
        "free_cores": _cores(totals["cpu_free"]),
        "total_cores": _cores(totals["cpu_total"]),
        "largest_free_cores_on_one_node": _cores(totals["cpu_largest"]),
        "held_outside_cores": _cores(totals["cpu_held_outside"]),
        "free_memory_gib": _gib(totals["memory_free"]),
        "total_memory_gib": _gib(totals["memory_total"]),
        "largest_free_memory_gib_on_one_node": _gib(totals["memory_largest"]),
        "held_outside_memory_gib": _gib(totals["memory_held_outside"]),
    }


def _cores(milli: int | None) -> float:
    return round((milli or 0) / MILLI_PER_CORE, 3)


def _gib(mib: int | None) -> float:
    return round((mib or 0) / MIB_PER_GIB, 3)


def quota_free(*, limits: dict[str, int], used: ResourceVector) -> dict:
    """Limit, use and free amount of each quota the user has; ``None`` means unlimited."""

    def entry(key: str, scale=lambda v: v) -> dict:
        limit = limits.get(key)
        free = None if limit is None else max(limit - used[key], 0)
        return {
            "limit": None if limit is None else scale(limit),
            "used": scale(used[key]),
            "free": None if free is None else scale(free),
        }

    per_model: dict[str, list[dict]] = {"gpu": [], "vgpu_compute_percent": []}
    for key in sorted(set(limits) | set(used)):
        kind, _sep, model = key.partition(":")
        if kind in per_model:
            per_model[kind].append({"model": model, **entry(key)})
    return {"cpu_cores": entry(CPU, _cores), "memory_gib": entry(MEMORY, _gib), **per_model}


def panel_for_page(panel: dict, refusals: dict) -> dict:
    """``free_panel`` plus its GPU rows with the user's own free quota of each model."""
    rows = [{**row, "not_available": refusals.get(row["name"])} for row in _rows_with_quota(panel)]
    notes = list(dict.fromkeys(r.note for r in refusals.values()))
    return {**panel, "rows": rows, "not_available_notes": notes}


def _rows_with_quota(panel: dict) -> list[dict]:
    quotas = {q["model"]: q for q in panel["quota"]["gpu"]}
    vgpu_quotas = {q["model"]: q for q in panel["quota"]["vgpu_compute_percent"]}
    return [
        {**row, "quota": quotas.get(row["name"]), "vgpu_quota": vgpu_quotas.get(row["name"])}
        for row in panel["gpu_models"]
    ]
