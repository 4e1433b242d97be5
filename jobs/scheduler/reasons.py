"""Why a job waits, in words its owner can act on, with the amounts that block it.

"Waiting for quota: needs 4 V100 cards; your quota is 8 and 6 are in use"
"Waiting for resources: needs 2 nodes with 8 free V100 cards; 1 has them"

Each is a ``Reason`` (a code of ``core.reasons`` and its parameters), read
in the language of whoever looks; amounts are formatted here, once.
"""

from __future__ import annotations

from bisect import bisect_left

from core.reasons import Reason
from resources.models import MIB_PER_GIB, MILLI_PER_CORE
from resources.vector import CPU, MEMORY

from .cluster import Cluster, NodeState
from .placement import Shape, fit_on_node

# The quota key to name first when several are short: cards before compute before CPU.
KEY_ORDER = ("gpu:", "vgpu_compute_percent:", CPU, MEMORY)


def quota_reason(*, key: str, need: int, limit: int, used: int) -> Reason:
    need_amount, limit_text, used_text, used_count = _quota_amounts(key, need, limit, used)
    return Reason(
        "wait.quota",
        {
            "need": need_amount,
            "limit": limit_text,
            "used": used_text,
            "used_count": 1 if used_count == 1 else 2,
        },
    )


def image_reason(name: str) -> Reason:
    """A job whose image is still being added (``jobs/images/add.py``): it takes the
    image's digest and may start once the image is ready."""
    return Reason("wait.image", {"image": name})


def kept_reason(job_id: int) -> Reason:
    """A preemptible job beyond its quota that may not borrow: a job within its quota
    waits for the same cards."""
    return Reason("wait.kept", {"job": job_id})


def nothing_idle_reason(quota_wait: Reason) -> Reason:
    """A preemptible job beyond its quota that finds no idle capacity to borrow."""
    return Reason("wait.nothing_idle", {"reason": quota_wait})


def preempting_reason(victims: list[int]) -> Reason:
    """A job within its quota waiting while the borrowing jobs it preempted stop."""
    return Reason("wait.preempting", {"jobs": ", ".join(f"#{pk}" for pk in victims)})


def borrow_reason(*, key: str, need: int, limit: int, used: int) -> Reason:
    """A preemptible job beyond its quota that would also pass its owner's borrow limit."""
    need_amount, limit_text, used_text, _count = _quota_amounts(key, need, limit, used)
    return Reason("wait.borrow", {"need": need_amount, "limit": limit_text, "used": used_text})


def first_key(keys: list[str]) -> str:
    return min(keys, key=lambda k: next(i for i, p in enumerate(KEY_ORDER) if k.startswith(p)))


def _quota_amounts(key: str, need: int, limit: int, used: int) -> tuple:
    """Need, limit and use as a person reads them, and the number the verb agrees with."""
    if key == CPU:
        need_amount = Reason("amount.cores", {"cores": _cores(need)})
        return need_amount, _cores(limit), _cores(used), used / MILLI_PER_CORE
    if key == MEMORY:
        return (
            Reason("amount.memory", {"gib": _gib(need)}),
            Reason("amount.gib", {"gib": _gib(limit)}),
            Reason("amount.gib", {"gib": _gib(used)}),
            used / MIB_PER_GIB,
        )
    kind, _sep, model = key.partition(":")
    if kind == "gpu":
        cards = Reason("amount.cards", {"count": need, "model": model})
        return cards, str(limit), str(used), used
    compute = Reason("amount.vgpu", {"percent": need, "model": model})
    return compute, f"{limit}%", f"{used}%", used


def held_reason(*, job_id: int) -> Reason:
    return Reason("wait.held", {"job": job_id})


def ports_reason(*, need: int, free: int, size: int) -> Reason:
    return Reason("wait.ports", {"need": need, "free": free, "size": size})


class ResourceReasons:
    """Resource-wait reasons against the cluster as the pass leaves it (cached per shape)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._cache: dict[tuple[Shape, str | None], Reason] = {}
        self._free: dict[tuple | None, _FreeAmounts] = {}

    def reason(self, shape: Shape, requested: str | None) -> Reason:
        key = (shape, requested)
        if key not in self._cache:
            self._cache[key] = self._reason(shape, requested)
        return self._cache[key]

    def _reason(self, shape: Shape, requested: str | None) -> Reason:
        free = self._free_amounts(shape)
        if not free.nodes:
            if requested is None:
                return Reason("wait.no_node")
            return Reason("wait.no_model", {"model": requested})
        dimensions = self._dimensions(shape, requested, free)
        short = [(count, i, text) for i, (text, count) in enumerate(dimensions)]
        short = [item for item in short if item[0] < shape.replicas]
        if short:
            count, _i, what = min(short)
        else:
            # Every resource is free somewhere, but not all on enough nodes at once.
            what = _join([text for text, _count in dimensions])
            count = 0
            if shape.replicas > 1:
                count = sum(1 for node in free.nodes if fit_on_node(node, shape))
        reason = _needs(shape.replicas, what, count)
        outside = free.held_outside
        if outside and shape.gpu_count:
            cards = Reason("amount.cards", {"count": outside, "model": requested})
            return Reason("wait.outside", {"reason": reason, "cards": cards})
        return reason

    def _free_amounts(self, shape: Shape) -> _FreeAmounts:
        if shape.models not in self._free:
            nodes = [node for node in self.cluster.nodes.values() if shape.admits(node)]
            free = self._free[shape.models] = _FreeAmounts(nodes)
            held = self.cluster.held_outside
            free.held_outside = sum(held.get(node.pk, 0) for node in nodes) if held else 0
        return self._free[shape.models]

    def _dimensions(
        self, shape: Shape, requested: str | None, free: _FreeAmounts
    ) -> list[tuple[Reason, int]]:
        dimensions = []
        if shape.whole_cards:
            text = Reason("free.cards", {"count": shape.gpu_count, "model": requested})
            dimensions.append((text, _at_least(free.whole_cards, shape.gpu_count)))
        elif shape.is_vgpu:
            text = Reason(
                "free.vgpu",
                {
                    "count": shape.gpu_count,
                    "model": requested,
                    "percent": shape.vgpu_percent,
                    "gib": _gib(shape.vgpu_memory_mib),
                },
            )
            dimensions.append((text, free.nodes_with_shares(shape)))
        dimensions += [
            (
                Reason("free.cores", {"cores": _cores(shape.cpu_milli)}),
                _at_least(free.cpu, shape.cpu_milli),
            ),
            (
                Reason("free.memory", {"gib": _gib(shape.memory_mib)}),
                _at_least(free.memory, shape.memory_mib),
            ),
            (
                Reason("free.storage", {"gib": shape.storage_gib}),
                _at_least(free.storage, shape.storage_gib),
            ),
        ]
        return dimensions


class _FreeAmounts:
    """The free amounts of some nodes, sorted, to count "how many have ≥ x" by bisection."""

    def __init__(self, nodes: list[NodeState]) -> None:
        self.nodes = nodes
        self.whole_cards = sorted(node.whole_free for node in nodes)
        self.cpu = sorted(node.cpu_free for node in nodes)
        self.memory = sorted(node.memory_free for node in nodes)
        self.storage = sorted(node.storage_free for node in nodes)
        self._arrays = None  # ``NodeArrays`` of these nodes, once a share asks
        self.held_outside = 0  # cards on these nodes held by jobs not Trainyard's

    def nodes_with_shares(self, shape: Shape) -> int:
        """How many nodes have ``shape.gpu_count`` cards with room for its share each."""
        # On placement's arrays (numpy), built where a share waits, not at every start-up:
        # a pass asks this of every share shape that waits, each over every card. A padding
        # card has no free compute, and a share asks for some: it never fits.
        from .node_arrays import NodeArrays

        if self._arrays is None:
            self._arrays = NodeArrays(self.nodes)
        arrays = self._arrays
        fits = (arrays.compute >= shape.vgpu_percent) & (
            arrays.card_memory >= shape.vgpu_memory_mib
        )
        return int((fits.sum(1) >= shape.gpu_count).sum())


def _at_least(values: list[int], amount: int) -> int:
    return len(values) - bisect_left(values, amount)


def _needs(replicas: int, what: Reason, count: int) -> Reason:
    if replicas == 1:
        return Reason("wait.node", {"what": what})
    if count == 0:
        return Reason("wait.nodes_none", {"nodes": replicas, "what": what})
    return Reason("wait.nodes", {"nodes": replicas, "what": what, "count": count})


def _join(parts: list[Reason]) -> Reason:
    if len(parts) == 1:
        return parts[0]
    return Reason("and", {"items": parts})


def _cores(milli: int) -> str:
    return _trim(milli / MILLI_PER_CORE)


def _gib(mib: int) -> str:
    return _trim(mib / MIB_PER_GIB)


def _trim(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")
