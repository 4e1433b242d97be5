"""Reads of nodes and GPU models."""

from django.db.models import QuerySet

from .models import Node


def nodes_overview() -> QuerySet[Node]:
    return Node.objects.select_related("gpu_model").order_by("gpu_model__name", "name")
