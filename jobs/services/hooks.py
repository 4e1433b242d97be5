"""Cross-cutting triggers: what must happen after a change commits."""

from django.db import transaction


def schedule_soon() -> None:
    """Run a scheduling pass once the current transaction commits."""
    from jobs.tasks import schedule_pass

    transaction.on_commit(schedule_pass.delay)
