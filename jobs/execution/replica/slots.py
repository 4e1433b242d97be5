"""Replica slots: the uid and the job-network address a replica holds on its host.

A slot is a number ``n`` below ``slot_count()``; it gives the replica uid
``TRAINYARD_SANDBOX_UID_BASE + n`` and the address ``n + 2`` of the host's job
subnet (``.1`` is the bridge). Slots are host-wide, not per install or per
node: the lease is a file under ``TRAINYARD_HOST_RUN_DIR`` (``/run/trainyard``,
gone at reboot with every replica) locked with ``flock``, and the lock lives
as long as the replica's runner, which inherits it. So no two live replicas on
a host share a uid or an address, whichever install started them, and a
runner that dies frees its slot without anyone cleaning up.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
from pathlib import Path

from jobs.execution.node_settings import settings


class NoFreeSlot(Exception):
    pass


# A plain class, not a dataclass: the keeper imports this module on every replica's start,
# and ``dataclasses`` (with ``inspect``) would be a sixth of the keeper's CPU there.
class Slot:
    __slots__ = ("number", "fd")

    def __init__(self, *, number: int, fd: int) -> None:
        self.number = number
        self.fd = fd  # the locked lease; pass it to the runner, then close it here

    @property
    def uid(self) -> int:
        return settings.TRAINYARD_SANDBOX_UID_BASE + self.number

    @property
    def address(self) -> str:
        return str(job_subnet()[self.number + 2])

    def close(self) -> None:
        os.close(self.fd)


def job_subnet() -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(settings.TRAINYARD_JOB_SUBNET)


def slot_count() -> int:
    return min(settings.TRAINYARD_SANDBOX_UID_COUNT, job_subnet().num_addresses - 3)


def leases_dir() -> Path:
    return Path(settings.TRAINYARD_HOST_RUN_DIR) / "slots"


def take_slot(*, owner: str, start: int = 0) -> Slot:
    """Lock the first free slot from ``start`` on (wrapping); ``owner`` is written for people."""
    folder = leases_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    count = slot_count()
    for offset in range(count):
        number = (start + offset) % count
        fd = os.open(folder / str(number), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{owner}\n".encode(), 0)
        return Slot(number=number, fd=fd)
    raise NoFreeSlot(f"all {count} replica slots of this host are taken")
