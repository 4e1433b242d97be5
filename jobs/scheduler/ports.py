"""Host ports from the platform pool (``SiteSettings.port_pool_start`` / ``_size``)."""

from __future__ import annotations

from jobs.models import PortAllocation
from resources.models import SiteSettings


class PortPool:
    """The pool's free ports as one pass sees them; ``take`` hands out the lowest."""

    def __init__(self, *, start: int, size: int, used: set[int]) -> None:
        self.start, self.size = start, size
        self._used = {port for port in used if start <= port < start + size}
        self._next = start

    @classmethod
    def load(cls) -> PortPool:
        site = SiteSettings.load()
        used = set(PortAllocation.objects.values_list("host_port", flat=True))
        return cls(start=site.port_pool_start, size=site.port_pool_size, used=used)

    @property
    def free(self) -> int:
        return self.size - len(self._used)

    def take(self, count: int) -> list[int] | None:
        """``count`` free ports, or None (and nothing taken) if the pool is short."""
        if count > self.free:
            return None
        taken: list[int] = []
        port = self._next
        while len(taken) < count:
            if port not in self._used:
                taken.append(port)
            port += 1
        self._used.update(taken)
        self._next = port
        return taken
