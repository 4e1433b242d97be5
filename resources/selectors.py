"""Reads of nodes and GPU models."""

from django.db.models import Count, F, QuerySet, Value
from django.db.models.functions import Greatest

from .free import wholly_free
from .models import Node


def nodes_overview() -> QuerySet[Node]:
    """The nodes, each with ``cards_free``: its wholly free cards (a card with a share on it
    is not), less those jobs outside Trainyard hold, as the free panel counts them."""
    wholly = Count("cards", filter=wholly_free("cards__"))
    return (
        Node.objects.select_related("gpu_model")
        .annotate(cards_free=Greatest(wholly - F("gpu_held_outside"), Value(0)))
        .order_by("gpu_model__name", "name")
    )
