"""Writes to nodes and cards."""

from django.db import transaction

from .models import GpuCard, Node
from .signals import capacity_changed


def node_sync_cards(*, node: Node) -> None:
    """Make a node's GpuCard rows match its GPU model and count (new cards are free)."""
    memory_mib = node.gpu_model.card_memory_mib if node.gpu_model_id else 0
    with transaction.atomic():
        existing = set(node.cards.values_list("index", flat=True))
        wanted = set(range(node.gpu_count))
        GpuCard.objects.bulk_create(
            [GpuCard(node=node, index=i, memory_mib=memory_mib) for i in sorted(wanted - existing)]
        )
        node.cards.filter(index__gte=node.gpu_count, allocations__isnull=True).delete()
        node.cards.filter(allocations__isnull=True).exclude(memory_mib=memory_mib).update(
            memory_mib=memory_mib
        )


def node_set_state(*, node: Node, state: str, reason: str = "") -> None:
    """Change a node's state; work stops going to a node that is not ready.

    Capacity changed either way (jobs' scheduler schedules a pass on it): a
    node that is ready again may start waiting jobs, and one that is no longer
    ready changes their reasons.
    """
    Node.objects.filter(pk=node.pk).update(state=state, state_reason=str(reason))
    node.state, node.state_reason = state, str(reason)
    capacity_changed.send(sender=Node, node=node)
