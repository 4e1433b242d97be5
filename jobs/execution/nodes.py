"""Node liveness: agents heartbeat; a node silent past the limit goes down, its attempts lost.

Lost attempts are platform faults (not billed) and their jobs are placed again
(see ``settle.py``). A node that went down only for silence comes back to
ready on its next heartbeat; a node an admin set down stays down.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation

from core.reasons import Reason
from jobs.lifecycle.pass_requests import schedule_soon
from jobs.models import ReplicaAttempt
from resources.models import Node, SiteSettings

from .report import attempt_ended

# A gap longer than this between two heartbeat checks means the checker itself was away.
WATCH_GAP_SECONDS = 15


def silence_reason(last_heartbeat: datetime | None) -> str:
    """The node's state reason while it is down for silence (also how we recognise that case)."""
    with translation.override(settings.LANGUAGE_CODE):
        return silence(last_heartbeat).text()


def silence(last_heartbeat: datetime | None) -> Reason:
    when = last_heartbeat.isoformat(timespec="seconds") if last_heartbeat else "-"
    return Reason("no_heartbeat", {"time": when})


def isolation_reason(problem: str) -> str:
    """The node's state reason while its agent cannot isolate jobs (recognised by its prefix)."""
    return f"{ISOLATION_PREFIX}{problem}"


ISOLATION_PREFIX = "Cannot isolate jobs: "


def node_heartbeat(*, node_name: str, isolation_problem: str | None, unsafe: bool = False) -> None:
    """The agent of ``node_name`` is alive; bring the node back if only silence had downed it.

    An agent that cannot isolate jobs (``isolation_problem``) takes its node
    down with that reason, so nothing is placed there, unless plain processes
    were asked for (``unsafe``); it brings the node back once the problem is gone.
    """
    with transaction.atomic():
        node = Node.objects.select_for_update().filter(name=node_name).first()
        if node is None:
            return
        fields: dict = {"last_heartbeat": timezone.now(), "sandboxed": isolation_problem is None}
        ours = node.state == Node.State.DOWN and node.state_reason.startswith(ISOLATION_PREFIX)
        silent = node.state == Node.State.DOWN and node.state_reason == silence_reason(
            node.last_heartbeat
        )
        if isolation_problem and not unsafe:
            if node.state == Node.State.READY or silent or ours:
                fields.update(
                    state=Node.State.DOWN, state_reason=isolation_reason(isolation_problem)
                )
        elif silent or ours:
            fields.update(state=Node.State.READY, state_reason="")
            schedule_soon()
        Node.objects.filter(pk=node.pk).update(**fields)


def node_cannot_isolate(*, node_name: str, problem: str) -> None:
    """A node whose executor found it cannot isolate jobs goes down with why, until an admin
    brings it back (a Slurm node has no heartbeat of ours to do it)."""
    Node.objects.filter(name=node_name, state=Node.State.READY).update(
        state=Node.State.DOWN, state_reason=isolation_reason(problem), sandboxed=False
    )


def nodes_check_heartbeats(*, now: datetime | None = None) -> list[str]:
    """Mark local nodes silent for longer than the site's limit down; return their names.

    Only silence this check watched counts: after a gap in its own runs (its
    worker or beat was down too) it watches a whole timeout again before it
    declares anything lost, so agents that come back with it first report
    what their runners recorded meanwhile.
    """
    now = now or timezone.now()
    timeout = timedelta(seconds=SiteSettings.load().heartbeat_timeout_seconds)
    if _watching_for(now) < timeout:
        return []
    stale = Node.objects.filter(
        executor=Node.Executor.LOCAL,
        state__in=[Node.State.READY, Node.State.DRAINING],
        last_heartbeat__lt=now - timeout,
    )
    return [node.name for node in stale if node_lost(node=node, now=now)]


def _watching_for(now: datetime) -> timedelta:
    """How long the check has run without a gap, counting this run; one query or two."""
    gap = timedelta(seconds=max(WATCH_GAP_SECONDS, 5 * settings.TRAINYARD_AGENT_POLL_SECONDS))
    with transaction.atomic():
        row = (
            SiteSettings.objects.select_for_update()
            .filter(pk=1)
            .values("heartbeat_watch_since", "heartbeat_checked_at")
            .first()
        )
        if row is None:
            SiteSettings.load()
            return _watching_for(now)
        since, checked = row["heartbeat_watch_since"], row["heartbeat_checked_at"]
        if since is None or checked is None or not (now - gap <= checked <= now + gap):
            since = now
        SiteSettings.objects.filter(pk=1).update(
            heartbeat_watch_since=since, heartbeat_checked_at=max(now, checked or now)
        )
    return now - since


def node_lost(*, node: Node, now: datetime | None = None) -> bool:
    """Take ``node`` down and end its unfinished attempts as lost; False if it was already down."""
    now = now or timezone.now()
    reason = silence_reason(node.last_heartbeat)
    changed = Node.objects.filter(
        pk=node.pk, state__in=[Node.State.READY, Node.State.DRAINING]
    ).update(state=Node.State.DOWN, state_reason=reason)
    if not changed:
        return False
    unfinished = ReplicaAttempt.objects.filter(node=node).exclude(
        state__in=ReplicaAttempt.FINAL_STATES
    )
    attempt_reason = Reason(
        "node_lost", {"node": node.name, "reason": silence(node.last_heartbeat)}
    )
    for attempt_id, started_at in unfinished.values_list("pk", "started_at"):
        # The last moment the node was known alive; platform faults are not billed anyway.
        ended_at = max(filter(None, [started_at, node.last_heartbeat])) if started_at else now
        attempt_ended(
            attempt_id=attempt_id,
            state=ReplicaAttempt.State.LOST,
            ended_at=ended_at,
            reason=attempt_reason,
            platform_fault=True,
        )
    return True
