"""What keeps one replica apart from the platform and from other jobs on this host.

``isolate`` gives a replica its slot (uid and job address, ``slots.py``) and
its network namespace (``network.py``) before the runner starts; ``release``
takes them back when the attempt ends. No sandbox, no replica: where the host
cannot isolate (no root, no bubblewrap, no job network) the start is refused
with the reason and how to fix it, unless ``TRAINYARD_UNSAFE_PLAIN_PROCESSES``
says a plain process will do (a single-user laptop).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from django.conf import settings

from jobs.execution.replica import limits, network, sandbox, slots
from jobs.execution.replica.failure import isolation_refusal
from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.replica.image_root import attempt_image_release
from jobs.execution.replica.prepare import published_ports
from jobs.models import ReplicaAttempt


class Refused(Exception):
    """The replica must not start here; the message is its reason."""


@dataclass
class Isolation:
    bwrap: str | None
    slot: slots.Slot | None
    network: network.ReplicaNetwork | None

    @property
    def uid(self) -> int | None:
        return self.slot.uid if self.slot else None

    def close_lease(self) -> None:
        """The runner holds the slot from now on (it inherited the lease)."""
        if self.slot:
            self.slot.close()


def unsafe() -> bool:
    return settings.TRAINYARD_UNSAFE_PLAIN_PROCESSES


def isolate(attempt: ReplicaAttempt) -> Isolation:
    """Slot and network for ``attempt``; raises ``Refused`` or ``network.NetworkError``."""
    problem = sandbox.isolation_problem()
    if problem and not unsafe():
        raise Refused(isolation_refusal(attempt.node.name, problem))
    slot = None
    if os.geteuid() == 0:
        owner = f"{settings.TRAINYARD_NODE_ROOT} attempt {attempt.pk}"
        try:
            slot = slots.take_slot(owner=owner, start=attempt.pk % slots.slot_count())
        except slots.NoFreeSlot as error:
            raise Refused(str(error)) from error
    if problem:  # unsafe, and said so in the log and on the job's page
        return Isolation(bwrap=sandbox.bwrap_path(), slot=slot, network=None)
    replica_network = network.ReplicaNetwork(
        namespace=network.namespace_name(slot.number, attempt.pk),
        slot=slot.number,
        address=slot.address,
        published=published_ports(attempt),
        gang=gang_addresses(attempt),
    )
    try:
        network.replica_network_up(replica_network)
    except network.NetworkError:
        slot.close()
        raise
    ReplicaAttempt.objects.filter(pk=attempt.pk).update(address=replica_network.address)
    return Isolation(bwrap=sandbox.bwrap_path(), slot=slot, network=replica_network)


def gang_addresses(attempt: ReplicaAttempt) -> list[str]:
    """Job addresses of the other replicas of the same attempt, as far as they are known."""
    job = attempt.replica.job
    if job.replicas < 2:
        return []
    return sorted(
        ReplicaAttempt.objects.filter(replica__job_id=job.pk, number=attempt.number)
        .exclude(pk=attempt.pk)
        .exclude(address=None)
        .values_list("address", flat=True)
    )


def refresh_gangs(folders: list[tuple[AttemptFolder, ReplicaAttempt]]) -> None:
    """Let each running gang member accept its peers once their addresses are known."""
    for folder, attempt in folders:
        if attempt.replica.job.replicas < 2:
            continue
        spec = folder.read("spec") or {}
        if not spec.get("network"):
            continue
        replica_network = network.ReplicaNetwork.from_dict(spec["network"])
        wanted = gang_addresses(attempt)
        if wanted != replica_network.gang:
            with contextlib.suppress(network.NetworkError):
                network.set_gang(replica_network, wanted)
                folder.write("spec", {**spec, "network": replica_network.as_dict()})


def release(spec: dict) -> None:
    """Remove the attempt's namespace, published ports and cgroup, and its image's lease."""
    attempt_image_release(
        digest=(spec.get("image") or {}).get("digest"), attempt_id=spec.get("attempt_id")
    )
    if spec.get("network"):
        network.replica_network_down(network.ReplicaNetwork.from_dict(spec["network"]))
    limits.remove_cgroup(spec.get("cgroup"))
