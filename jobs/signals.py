"""Signals the jobs app sends, for the apps above it (notifications) to connect to.

Sent inside the transaction that made the change: a receiver that acts only
once the change is committed uses ``transaction.on_commit``.
"""

from django.dispatch import Signal

# A job changed state: sent with ``event_id`` (its ``JobEvent``), ``from_state``, ``to_state``.
job_state_changed = Signal()

# A running job's cards sat idle over the site's window (jobs/idle_cards.py): sent once per
# spell with ``job_id``, ``percent`` (their average GPU use) and ``minutes`` (the window).
job_cards_idle = Signal()
