"""Signals billing's accrual sends, for the apps above it (notifications) to connect to.

Sent inside the accrual's transaction: a receiver that acts only once the
accrual is committed uses ``transaction.on_commit``.
"""

from django.dispatch import Signal

# An accrual took a free grant past a warning line: sent with ``grant_id`` and ``percent``.
free_grant_crossed = Signal()
