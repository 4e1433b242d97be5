"""Work a batch of changes asks for, done once when the batch ends.

A task that reports many jobs (``jobs/execution/slurm/replica_reports.py``) commits each
job on its own; what each commit asks for (a scheduling pass, a notification task) is collected
inside ``batched()`` and handed over once at its end, as one call with every item.
Outside a batch each item is handed over at once, as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar

logger = logging.getLogger(__name__)
Flush = Callable[[list], None]
_pending: ContextVar[dict[Flush, list] | None] = ContextVar("trainyard_batch", default=None)


@contextlib.contextmanager
def batched() -> Iterator[None]:
    """Within: ``defer``'s items wait; at the end each ``flush`` gets its items in one call.

    Nested, the outer batch collects for both. A flush that fails is logged and stops
    no other (each stands for work that its changes, committed, asked for)."""
    if _pending.get() is not None:
        yield
        return
    token = _pending.set({})
    try:
        yield
    finally:
        pending = _pending.get() or {}
        _pending.reset(token)
        for flush, items in pending.items():
            try:
                flush(items)
            except Exception:
                logger.exception("handing over a batch of %d to %s failed", len(items), flush)


def defer(flush: Flush, item) -> None:
    """``flush([item])`` now, or with the rest of the batch's items at its end."""
    pending = _pending.get()
    if pending is None:
        flush([item])
    else:
        pending.setdefault(flush, []).append(item)
