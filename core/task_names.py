"""Sending a Celery task by its name: the way back up a layer, without importing it.

``current_app.send_task`` always goes through the broker, even where tasks run in place
(``task_always_eager``, as some tests set): a task sent by name would then never run.
A signature finds the task in the app's registry when its module is loaded (the workers
import every tasks module) and runs it as ``.delay()`` would; otherwise it is sent.
"""

from __future__ import annotations

from celery import current_app


def send_task(name: str, *, args: list | tuple = (), **options) -> None:
    """Queue the task ``name`` with ``args`` (``queue=``… as for ``apply_async``)."""
    current_app.signature(name, args=list(args)).apply_async(**options)
