"""What beat sends, and how often: the periodic tasks of every process (settings reads it)."""

from __future__ import annotations

from datetime import timedelta


def _every(task: str, seconds: float, *, expires: float | None = None) -> dict:
    # Each entry expires so that missed runs of a periodic task do not pile up.
    return {
        "task": task,
        "schedule": timedelta(seconds=seconds),
        "options": {"expires": seconds if expires is None else expires},
    }


def beat_schedule(
    *,
    agent_poll_seconds: float,
    agent_poll_expires: float,
    slurm: tuple[float, float] | None,
) -> dict:
    """The schedule; ``slurm`` is (track seconds, inventory sync seconds) when Slurm is on."""
    schedule = {
        "agent-polls": _every(
            "jobs.agent.dispatch_polls", agent_poll_seconds, expires=agent_poll_expires
        ),
        "scheduler-pass": _every("jobs.tasks.schedule_pass", 5),
        "free-resources-refresh": _every("resources.tasks.refresh_free_resources", 60),
        "billing-accrue-usage": _every("accounting.tasks.accrue_usage", 60),
        "notifications-long-waits": _every("notifications.tasks.notify_long_waits", 60),
        "usage-thin": _every("jobs.tasks.usage_thin", 600),
        "idle-cards-check": _every("jobs.tasks.idle_cards_check", 60),
    }
    if slurm is not None:
        track_seconds, sync_seconds = slurm
        # Not shorter than a file broker's delivery; extra passes find the lock taken.
        schedule["slurm-track"] = _every(
            "jobs.slurm.track", track_seconds, expires=max(track_seconds, 5)
        )
        schedule["slurm-sync-nodes"] = _every("jobs.slurm.sync_nodes", sync_seconds)
    return schedule
