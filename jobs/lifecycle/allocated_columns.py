"""The allocated columns of nodes and cards, changed by increments in one statement each.

Taking (positive amounts) and giving back (negative) both go through here:
rows are locked nodes first, then cards, each in primary-key order, so a pass
and a release running at once never deadlock; the CHECK constraints refuse an
over-commit (and a negative allocation) whatever the caller computed.
"""

from __future__ import annotations

from core.bulk import lock_rows, update_from_values
from resources.models import GpuCard, Node

NODE_COLUMNS = (
    "gpu_allocated",
    "cpu_allocated_milli",
    "memory_allocated_mib",
    "storage_allocated_gib",
)
CARD_COLUMNS = ("compute_allocated_percent", "memory_allocated_mib")


def add_to_allocated(
    *, nodes: dict[int, list[int]], cards: dict[int, list[int]], ready_only: bool
) -> bool:
    """Add ``nodes[pk]`` (NODE_COLUMNS order) and ``cards[pk]`` (CARD_COLUMNS order).

    With ``ready_only``, nothing is added to a node that is no longer ready and
    the answer is False: the caller rolls back.
    """
    lock_rows(Node, nodes)
    match = ["state"] if ready_only else []
    guard = [Node.State.READY] if ready_only else []
    [updated] = update_from_values(
        Node,
        rows=[(pk, *guard, *delta) for pk, delta in nodes.items()],
        match_fields=match,
        set_fields=NODE_COLUMNS,
        increment=True,
    )
    if updated != len(nodes):
        return False
    lock_rows(GpuCard, cards)
    update_from_values(
        GpuCard,
        rows=[(pk, *delta) for pk, delta in cards.items()],
        set_fields=CARD_COLUMNS,
        increment=True,
    )
    return True
