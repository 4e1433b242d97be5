"""The one way tests wait: for an event, never for a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT_SECONDS = 60
POLL_SECONDS = 0.1


def wait_until(
    predicate: Callable[[], object],
    *,
    what: str,
    timeout: float = WAIT_SECONDS,
    logs: Callable[[], str] | None = None,
):
    """Return ``predicate()``'s first true value; fail naming ``what``, with the tail of
    ``logs()`` (a process's output) when it did not come within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = logs()[-4000:] if logs else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{detail}")
        time.sleep(POLL_SECONDS)


def within(bound_seconds: float, predicate: Callable[[], object], *, what: str, logs=None) -> float:
    """Wait for ``predicate`` and assert it came true within the bound; return the seconds taken."""
    began = time.monotonic()
    bounded = f"{what} (bound {bound_seconds} s)"
    wait_until(predicate, what=bounded, timeout=bound_seconds, logs=logs)
    took = time.monotonic() - began
    print(f"{what}: {took:.1f} s (bound {bound_seconds} s)")
    return took
