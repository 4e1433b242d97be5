"""Slurm's nodes as Trainyard ``slurm`` nodes: created, updated, drained and brought back.

Slurm is the source of truth for what a node has (CPUs, memory, GPU gres,
partitions) and whether it takes work. A node Slurm drains or marks down stops
receiving Trainyard work; it comes back when Slurm says so, unless a Trainyard
admin had drained it (their reason does not start with ``Slurm:``, and stands).
GPU types map to GPU models through ``SlurmGpuType`` rows (admin-editable); a
type with no row maps by model name, and that match is saved as a row. Each node
also records what jobs outside Trainyard hold there (``held_outside``); a change
asks for a scheduling pass like any other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.lifecycle.pass_requests import schedule_soon
from resources.models import MIB_PER_GIB, MILLI_PER_CORE, GpuModel, Node, SlurmGpuType
from resources.services import node_sync_cards

from . import cli
from .held_outside import Held, held_outside, trainyard_replicas

# Marks a node state set by this sync (not by an admin); Slurm's words follow it.
SLURM_REASON_PREFIX = "Slurm: "
GPU_GRES = re.compile(r"(?:^|,)gpu:(?:([^:,()]+):)?(\d+)")
DOWN_STATES = {"down", "unknown", "future", "fail", "failing"}
DOWN_FLAGS = {"FAIL", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "REBOOT_ISSUED"}
DRAIN_FLAGS = {"DRAIN", "DRAINED", "DRAINING", "MAINTENANCE", "RESERVED", "NOT_RESPONDING"}
HELD_OUTSIDE_FIELDS = {"gpu_held_outside", "cpu_held_outside_milli", "memory_held_outside_mib"}
Ready, Draining, Down = Node.State.READY, Node.State.DRAINING, Node.State.DOWN


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # no longer in Slurm (or its partition)
    held_outside: list[str] = field(default_factory=list)  # what others' jobs hold changed
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Wanted:
    """What a Trainyard node should say, read from one Slurm node."""

    fields: dict
    state: str
    reason: str
    responding: bool


def inventory_sync() -> SyncReport:
    """One sync against ``sinfo``; raises ``SlurmUnavailable`` when Slurm does not answer."""
    report = SyncReport()
    partition = settings.TRAINYARD_SLURM_PARTITION
    seen = [n for n in cli.nodes() if not partition or partition in n.partitions]
    # After sinfo: a job of ours that Slurm starts in between counts as ours, never as
    # someone else's.
    ours = trainyard_replicas()
    changed = False
    for slurm_node in seen:
        outside = held_outside(slurm_node, ours.get(slurm_node.name, []))
        changed |= _sync(slurm_node, outside, report)
    changed |= _retire_missing({n.name for n in seen}, report)
    if changed:
        schedule_soon()
    return report


def _sync(slurm_node: cli.SlurmNode, outside: Held, report: SyncReport) -> bool:
    wanted = wanted_for(slurm_node, outside)
    with transaction.atomic():
        node = Node.objects.select_for_update().filter(name=slurm_node.name).first()
        if node is not None and not node.from_slurm:
            report.skipped[slurm_node.name] = "a local node has this name"
            return False
        if node is None:
            node = Node.objects.create(
                name=slurm_node.name,
                executor=Node.Executor.SLURM,
                from_slurm=True,
                state=wanted.state,
                state_reason=wanted.reason,
                last_heartbeat=timezone.now() if wanted.responding else None,
                **wanted.fields,
            )
            node_sync_cards(node=node)
            report.created.append(node.name)
            return True
        return _update(node, wanted, report)


def _update(node: Node, wanted: Wanted, report: SyncReport) -> bool:
    fields = dict(wanted.fields)
    # Never below what is allocated: the CHECK constraints would refuse it, and
    # the jobs holding it finish first; Slurm's own limits apply meanwhile.
    fields["cpu_milli"] = max(fields["cpu_milli"], node.cpu_allocated_milli)
    fields["memory_mib"] = max(fields["memory_mib"], node.memory_allocated_mib)
    fields["gpu_count"] = max(fields["gpu_count"], node.gpu_allocated)
    if fields["gpu_count"] and fields["gpu_model"] is None:
        fields["gpu_model"] = node.gpu_model
    state, reason = _next_state(node, wanted)
    fields.update(state=state, state_reason=reason, executor=Node.Executor.SLURM)
    changes = {k: v for k, v in fields.items() if getattr(node, k) != v}
    heartbeat = {"last_heartbeat": timezone.now()} if wanted.responding else {}
    Node.objects.filter(pk=node.pk).update(**changes, **heartbeat)
    if not changes:
        return False
    for name, value in changes.items():
        setattr(node, name, value)
    if {"gpu_model", "gpu_count"} & set(changes):
        node_sync_cards(node=node)
    if set(changes) - HELD_OUTSIDE_FIELDS:
        report.updated.append(node.name)
    if set(changes) & HELD_OUTSIDE_FIELDS:
        report.held_outside.append(node.name)
    return True


def held_outside_fields(outside: Held) -> dict[str, int]:
    return {
        "gpu_held_outside": outside.gpus,
        "cpu_held_outside_milli": outside.cpu_milli,
        "memory_held_outside_mib": outside.memory_mib,
    }


def _next_state(node: Node, wanted: Wanted) -> tuple[str, str]:
    set_by_admin = node.state != Ready and not node.state_reason.startswith(SLURM_REASON_PREFIX)
    if set_by_admin:
        return node.state, node.state_reason
    return wanted.state, wanted.reason


def wanted_for(slurm_node: cli.SlurmNode, outside: Held) -> Wanted:
    state, reason = slurm_state(slurm_node)
    gpu_model, gpu_count, gpu_problem = _gpus(slurm_node.gres)
    if gpu_problem and state == Ready:
        state, reason = Down, SLURM_REASON_PREFIX + gpu_problem
    fields = {
        "address": slurm_node.address,
        "cpu_milli": slurm_node.cpus * MILLI_PER_CORE,
        "memory_mib": slurm_node.memory_mib,
        "gpu_model": gpu_model,
        "gpu_count": gpu_count,
        "slurm_partitions": ",".join(slurm_node.partitions)[:255],
        **held_outside_fields(outside),
    }
    if slurm_node.tmp_disk_mib:
        fields["storage_gib"] = slurm_node.tmp_disk_mib // MIB_PER_GIB
    responding = state != Down and "NOT_RESPONDING" not in slurm_node.flags
    return Wanted(fields=fields, state=state, reason=reason, responding=responding)


def slurm_state(slurm_node: cli.SlurmNode) -> tuple[str, str]:
    """Ready, draining (no new work; running jobs go on) or down, with Slurm's words."""
    flags = set(slurm_node.flags)
    words = " ".join([slurm_node.state.upper(), *sorted(flags)])
    detail = f"{words} ({slurm_node.reason})" if slurm_node.reason else words
    if slurm_node.state in DOWN_STATES or flags & DOWN_FLAGS:
        return Down, SLURM_REASON_PREFIX + detail
    if flags & DRAIN_FLAGS or slurm_node.state in {"drained", "draining", "maint"}:
        return Draining, SLURM_REASON_PREFIX + detail
    return Ready, ""


def _gpus(gres: str) -> tuple[GpuModel | None, int, str]:
    """(model, cards, problem) for a node's gres, e.g. ``gpu:v100:4(S:0-1)``."""
    found = GPU_GRES.findall(gres or "")
    if not found:
        return None, 0, ""
    types = {gpu_type for gpu_type, _count in found}
    if len(types) > 1:
        return (
            None,
            0,
            _("GPUs of several types (%(gres)s); Trainyard needs one per node.") % {"gres": gres},
        )
    gpu_type = types.pop()
    count = sum(int(count) for _type, count in found)
    if not gpu_type:
        return (
            None,
            0,
            _("GPUs without a type (%(gres)s); give them Type= in gres.conf.") % {"gres": gres},
        )
    model = gpu_model_for(gpu_type)
    if model is None:
        return (
            None,
            0,
            _("GPU type %(type)s maps to no GPU model; add it under Slurm GPU types.")
            % {"type": gpu_type},
        )
    return model, count, ""


def gpu_model_for(slurm_type: str) -> GpuModel | None:
    mapping = SlurmGpuType.objects.select_related("gpu_model").filter(slurm_type=slurm_type).first()
    if mapping is not None:
        return mapping.gpu_model
    model = GpuModel.objects.filter(name__iexact=slurm_type).first()
    if model is not None:
        SlurmGpuType.objects.get_or_create(slurm_type=slurm_type, defaults={"gpu_model": model})
    return model


def _retire_missing(seen: set[str], report: SyncReport) -> bool:
    partition = settings.TRAINYARD_SLURM_PARTITION
    reason = SLURM_REASON_PREFIX + (
        _("no longer in partition %(partition)s.") % {"partition": partition}
        if partition
        else _("no longer in the cluster.")
    )
    gone = Node.objects.filter(from_slurm=True).exclude(name__in=seen).exclude(state=Down)
    report.left = sorted(gone.values_list("name", flat=True))
    Node.objects.filter(name__in=report.left).update(state=Down, state_reason=reason)
    return bool(report.left)
