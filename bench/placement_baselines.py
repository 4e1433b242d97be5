"""Placement quality on the trace: the scheduler's placement beside two baselines.

Each policy places the trace's tasks in order on the same in-memory nodes (no
task ends), and we note the share of GPU capacity allocated when the first task
does not fit, and at the end when the misfits are skipped.

- ``trainyard``: ``jobs.scheduler.placement.place`` — what the pass runs.
- ``first-fit``: the first node (name order) that fits; lowest free card indices.
- ``best-fit``: the node left with the least free GPU compute (then CPU) after
  placing; a share goes on the fitting card with the least free compute.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.scheduler.cluster import (
    FULL_CARD_PERCENT,
    CardState,
    CardUse,
    Cluster,
    NodeState,
    ReplicaUse,
    typical_of,
)
from jobs.scheduler.placement import Shape, fit_on_node, place
from resources.catalog import ModelCatalog


@dataclass
class Result:
    placed_before_miss: int = 0
    share_at_miss: float = 0.0
    placed_total: int = 0
    share_at_end: float = 0.0


def replay_policies(node_rows, tasks, card_memory_gib: dict[str, int]) -> dict[str, Result]:
    shapes = [task_shape(task, tuple(card_memory_gib)) for task in tasks]
    return {
        "trainyard": replay(build_nodes(node_rows, card_memory_gib), shapes, trainyard_policy),
        "first-fit": replay(build_nodes(node_rows, card_memory_gib), shapes, first_fit),
        "best-fit": replay(build_nodes(node_rows, card_memory_gib), shapes, best_fit),
    }


def build_nodes(node_rows, card_memory_gib) -> list[NodeState]:
    nodes = []
    for pk, row in enumerate(sorted(node_rows, key=lambda r: r["sn"])):
        memory = card_memory_gib[row["model"]] * 1024
        cards = {
            i: CardState(i, pk * 100 + i, memory, FULL_CARD_PERCENT, memory)
            for i in range(int(row["gpu"]))
        }
        nodes.append(
            NodeState(
                pk=pk,
                name=row["sn"],
                model=row["model"],
                cpu_free=int(row["cpu_milli"]),
                memory_free=int(row["memory_mib"]),
                storage_free=10_000,
                cards=cards,
                whole_free=len(cards),
            )
        )
    return nodes


def task_shape(task: dict[str, str], models: tuple[str, ...]) -> Shape:
    count, milli = int(task["num_gpu"]), int(task["gpu_milli"])
    kind = "cpu" if count == 0 else ("gpu" if milli >= 1000 else "vgpu")
    percent = max(1, round(milli / 10)) if kind == "vgpu" else 0
    return Shape(
        kind=kind,
        models=None if kind == "cpu" else models,
        gpu_count=count,
        vgpu_percent=percent,
        vgpu_memory_mib=16 * 1024 * percent // 100 if kind == "vgpu" else 0,
        cpu_milli=max(int(task["cpu_milli"]), 1),
        memory_mib=max(int(task["memory_mib"]), 1),
        storage_gib=2,
        replicas=1,
    )


def replay(nodes: list[NodeState], shapes: list[Shape], policy) -> Result:
    result = Result()
    cluster = Cluster(nodes, ModelCatalog(), typical=typical_of(shapes))
    missed = False
    for shape in shapes:
        use = policy(cluster, shape)
        if use is None:
            if not missed:
                missed = True
                result.placed_before_miss = result.placed_total
                result.share_at_miss = share(nodes)
            continue
        cluster.allocate(use)
        result.placed_total += 1
    if not missed:
        result.placed_before_miss, result.share_at_miss = result.placed_total, share(nodes)
    result.share_at_end = share(nodes)
    return result


def share(nodes: list[NodeState]) -> float:
    cards = [card for node in nodes for card in node.cards.values()]
    used = sum(FULL_CARD_PERCENT - card.compute_free for card in cards)
    return used / (FULL_CARD_PERCENT * len(cards))


def trainyard_policy(cluster: Cluster, shape: Shape) -> ReplicaUse | None:
    outcome = place(cluster, shape)
    return outcome.uses[0] if outcome.uses else None


def first_fit(cluster: Cluster, shape: Shape) -> ReplicaUse | None:
    for node in sorted(cluster.nodes.values(), key=lambda n: n.name):
        use = fit_on_node(node, shape)
        if use is not None:
            return _lowest_cards(node, shape, use)
    return None


def best_fit(cluster: Cluster, shape: Shape) -> ReplicaUse | None:
    best, best_score = None, None
    for node in cluster.nodes.values():
        use = fit_on_node(node, shape)
        if use is None:
            continue
        gpu_left = sum(c.compute_free for c in node.cards.values()) - sum(
            u.compute_percent for u in use.cards
        )
        score = (gpu_left, node.cpu_free - use.cpu_milli, node.name)
        if best_score is None or score < best_score:
            best, best_score = use, score
    return best


def _lowest_cards(node: NodeState, shape: Shape, use: ReplicaUse) -> ReplicaUse:
    if not use.cards:
        return use
    if shape.whole_cards:
        chosen = [c for c in node.cards.values() if c.whole_free][: shape.gpu_count]
    else:
        chosen = [
            c
            for c in node.cards.values()
            if c.compute_free >= shape.vgpu_percent and c.memory_free_mib >= shape.vgpu_memory_mib
        ][: shape.gpu_count]
    cards = tuple(
        CardUse(
            c.index,
            use.cards[0].compute_percent,
            use.cards[0].memory_mib if not shape.whole_cards else c.memory_mib,
        )
        for c in chosen
    )
    return ReplicaUse(
        use.node_pk, use.cpu_milli, use.memory_mib, use.storage_gib, cards, use.whole_cards
    )
