"""Resource vectors: requests, capacities, quotas and usage as one comparable value.

Kueue-style: a vector maps resource keys to non-negative integers, so admission
and feasibility are one comparison rather than ten ``if`` statements.

Keys:
- ``cpu_milli``, ``memory_mib``, ``storage_gib``
- ``gpu:<model>``: physical cards of a GPU model (or of an aggregated ``*`` model)
- ``vgpu_compute_percent:<model>``: virtual-GPU compute, in percent of one card
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

CPU = "cpu_milli"
MEMORY = "memory_mib"
STORAGE = "storage_gib"


def gpu_key(model_name: str) -> str:
    return f"gpu:{model_name}"


def vgpu_key(model_name: str) -> str:
    return f"vgpu_compute_percent:{model_name}"


class ResourceVector(Mapping[str, int]):
    """An immutable mapping of resource key → amount; missing keys are zero."""

    __slots__ = ("_amounts",)

    def __init__(self, amounts: Mapping[str, int] | None = None, **more: int) -> None:
        merged = {**(amounts or {}), **more}
        self._amounts = {key: int(value) for key, value in merged.items() if value}

    def __getitem__(self, key: str) -> int:
        return self._amounts.get(key, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._amounts)

    def __len__(self) -> int:
        return len(self._amounts)

    def __repr__(self) -> str:
        return f"ResourceVector({self._amounts!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._amounts == ResourceVector(other)._amounts

    def __hash__(self) -> int:
        return hash(frozenset(self._amounts.items()))

    def __add__(self, other: Mapping[str, int]) -> ResourceVector:
        keys = set(self) | set(other)
        return ResourceVector({k: self[k] + other.get(k, 0) for k in keys})

    def __sub__(self, other: Mapping[str, int]) -> ResourceVector:
        keys = set(self) | set(other)
        return ResourceVector({k: self[k] - other.get(k, 0) for k in keys})

    def __mul__(self, factor: int) -> ResourceVector:
        return ResourceVector({k: v * factor for k, v in self._amounts.items()})

    __rmul__ = __mul__

    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        return self._amounts.get(key, default)

    # The dict's own views: ``Mapping``'s would look every key up again through
    # ``__getitem__`` (a scheduling pass adds up thousands of vectors).
    def keys(self):  # type: ignore[override]
        return self._amounts.keys()

    def items(self):  # type: ignore[override]
        return self._amounts.items()

    def values(self):  # type: ignore[override]
        return self._amounts.values()

    def fits(self, capacity: Mapping[str, int]) -> bool:
        """Every amount is at most the capacity's (a key the capacity lacks has 0)."""
        return all(amount <= capacity.get(key, 0) for key, amount in self._amounts.items())

    def fits_limits(self, limits: Mapping[str, int]) -> bool:
        """Like ``fits``, but a key absent from ``limits`` is unlimited (quotas)."""
        return not self.exceeded_limits(limits)

    def shortfalls(self, capacity: Mapping[str, int]) -> list[str]:
        """Keys whose amount exceeds the capacity, in a stable order."""
        return sorted(k for k, v in self._amounts.items() if v > capacity.get(k, 0))

    def exceeded_limits(self, limits: Mapping[str, int]) -> list[str]:
        return sorted(k for k, v in self._amounts.items() if k in limits and v > limits[k])
