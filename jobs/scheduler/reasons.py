"""Why a job waits, in words its owner can act on, with the amounts that block it.

"Waiting for quota: needs 4 V100 cards; your quota is 8 and 6 are in use"
"Waiting for resources: needs 2 nodes with 8 free V100 cards; 1 has them"
"""

from __future__ import annotations

from bisect import bisect_left

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from resources.models import MIB_PER_GIB, MILLI_PER_CORE
from resources.vector import CPU, MEMORY

from .placement import Shape, fit_on_node
from .state import Cluster, NodeState

# The quota key to name first when several are short: cards before compute before CPU.
KEY_ORDER = ("gpu:", "vgpu_compute_percent:", CPU, MEMORY)


def quota_reason(*, key: str, need: int, limit: int, used: int) -> str:
    need_text, limit_text, used_text, used_count = _quota_amounts(key, need, limit, used)
    message = ngettext(
        "Waiting for quota: needs %(need)s; your quota is %(limit)s and %(used)s is in use",
        "Waiting for quota: needs %(need)s; your quota is %(limit)s and %(used)s are in use",
        1 if used_count == 1 else 2,
    )
    return message % {"need": need_text, "limit": limit_text, "used": used_text}


def first_key(keys: list[str]) -> str:
    return min(keys, key=lambda k: next(i for i, p in enumerate(KEY_ORDER) if k.startswith(p)))


def _quota_amounts(key: str, need: int, limit: int, used: int) -> tuple[str, str, str, float]:
    """Need, limit and use as a person reads them, and the number the verb agrees with."""
    if key == CPU:
        need_text = _("%(cores)s CPU cores") % {"cores": _cores(need)}
        return need_text, _cores(limit), _cores(used), used / MILLI_PER_CORE
    if key == MEMORY:
        gib = _("%(gib)s GiB")
        return (
            _("%(gib)s GiB of memory") % {"gib": _gib(need)},
            gib % {"gib": _gib(limit)},
            gib % {"gib": _gib(used)},
            used / MIB_PER_GIB,
        )
    kind, _sep, model = key.partition(":")
    if kind == "gpu":
        cards = ngettext("%(count)s %(model)s card", "%(count)s %(model)s cards", need)
        return cards % {"count": need, "model": model}, str(limit), str(used), used
    compute = _("%(percent)s%% of %(model)s virtual-GPU compute")
    return (
        compute % {"percent": need, "model": model},
        f"{limit}%",
        f"{used}%",
        used,
    )


def held_reason(*, job_id: int) -> str:
    return _(
        "Waiting for resources: what it needs is held for job #%(job)s, which is ahead in the queue"
    ) % {"job": job_id}


def ports_reason(*, need: int, free: int, size: int) -> str:
    return _(
        "Waiting for resources: needs %(need)s host ports; %(free)s of the pool's %(size)s are free"
    ) % {"need": need, "free": free, "size": size}


class ResourceReasons:
    """Resource-wait reasons against the cluster as the pass leaves it (cached per shape)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._cache: dict[tuple[Shape, str | None], str] = {}
        self._free: dict[tuple | None, _FreeAmounts] = {}

    def reason(self, shape: Shape, requested: str | None) -> str:
        key = (shape, requested)
        if key not in self._cache:
            self._cache[key] = self._reason(shape, requested)
        return self._cache[key]

    def _reason(self, shape: Shape, requested: str | None) -> str:
        free = self._free_amounts(shape)
        if not free.nodes:
            if requested is None:
                return _("Waiting for resources: no node is ready")
            return _("Waiting for resources: no ready node has %(model)s cards") % {
                "model": requested
            }
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
        return _needs(shape.replicas, what, count)

    def _free_amounts(self, shape: Shape) -> _FreeAmounts:
        if shape.models not in self._free:
            nodes = [node for node in self.cluster.nodes.values() if shape.admits(node)]
            self._free[shape.models] = _FreeAmounts(nodes)
        return self._free[shape.models]

    def _dimensions(
        self, shape: Shape, requested: str | None, free: _FreeAmounts
    ) -> list[tuple[str, int]]:
        dimensions = []
        if shape.whole_cards:
            text = ngettext(
                "%(count)s free %(model)s card", "%(count)s free %(model)s cards", shape.gpu_count
            ) % {"count": shape.gpu_count, "model": requested}
            dimensions.append((text, _at_least(free.whole_cards, shape.gpu_count)))
        elif shape.is_vgpu:
            text = ngettext(
                "%(count)s %(model)s card with %(percent)s%% compute and %(gib)s GiB of card "
                "memory free",
                "%(count)s %(model)s cards with %(percent)s%% compute and %(gib)s GiB of card "
                "memory free each",
                shape.gpu_count,
            ) % {
                "count": shape.gpu_count,
                "model": requested,
                "percent": shape.vgpu_percent,
                "gib": _gib(shape.vgpu_memory_mib),
            }
            dimensions.append((text, free.nodes_with_shares(shape)))
        dimensions += [
            (
                _("%(cores)s free CPU cores") % {"cores": _cores(shape.cpu_milli)},
                _at_least(free.cpu, shape.cpu_milli),
            ),
            (
                _("%(gib)s GiB of free memory") % {"gib": _gib(shape.memory_mib)},
                _at_least(free.memory, shape.memory_mib),
            ),
            (
                _("%(gib)s GiB of free temporary storage") % {"gib": shape.storage_gib},
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

    def nodes_with_shares(self, shape: Shape) -> int:
        return sum(
            1
            for node in self.nodes
            if sum(
                1
                for card in node.cards.values()
                if card.compute_free >= shape.vgpu_percent
                and card.memory_free_mib >= shape.vgpu_memory_mib
            )
            >= shape.gpu_count
        )


def _at_least(values: list[int], amount: int) -> int:
    return len(values) - bisect_left(values, amount)


def _needs(replicas: int, what: str, count: int) -> str:
    if replicas == 1:
        return _("Waiting for resources: needs a node with %(what)s; none has them") % {
            "what": what
        }
    if count == 0:
        return _("Waiting for resources: needs %(nodes)s nodes with %(what)s; none has them") % {
            "nodes": replicas,
            "what": what,
        }
    return ngettext(
        "Waiting for resources: needs %(nodes)s nodes with %(what)s; %(count)s has them",
        "Waiting for resources: needs %(nodes)s nodes with %(what)s; %(count)s have them",
        count,
    ) % {"nodes": replicas, "what": what, "count": count}


def _join(parts: list[str]) -> str:
    if len(parts) == 1:
        return parts[0]
    return _("%(items)s and %(last)s") % {"items": ", ".join(parts[:-1]), "last": parts[-1]}


def _cores(milli: int) -> str:
    return _trim(milli / MILLI_PER_CORE)


def _gib(mib: int) -> str:
    return _trim(mib / MIB_PER_GIB)


def _trim(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")
