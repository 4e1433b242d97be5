"""Signals resources sends, for the apps above it (jobs' scheduler) to connect to."""

from django.dispatch import Signal

# What nodes offer changed in a way the model signals do not show (a node's state
# set by a queryset update): sent with ``node``, inside the change's transaction.
capacity_changed = Signal()
