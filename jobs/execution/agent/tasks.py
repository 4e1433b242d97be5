"""The node agent's Celery tasks; each is short and idempotent.

``start_attempt`` / ``stop_attempt`` / ``poll`` arrive on the node's own queue
(``node.<name>``) and run on the agent worker of that node. ``dispatch_polls``
runs on the central queue from beat: it sends every local node its poll and
takes silent nodes down.
"""

from __future__ import annotations

import logging
import signal
from datetime import timedelta

from celery import current_app, shared_task
from django.conf import settings
from django.utils import timezone

from core.reasons import Reason
from jobs.execution.node_name import NODE_NAME
from jobs.execution.nodes import nodes_check_heartbeats
from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.report import attempt_ended
from jobs.models import Job, ReplicaAttempt
from resources.models import Node, SiteSettings

from .attempt_start import start_attempt as start
from .poll import poll_node, request_stop
from .queues import agent_queues

logger = logging.getLogger(__name__)


def serves(node_name: object) -> bool:
    """Whether this agent serves the node: one of its nodes by name, never a path."""
    if not isinstance(node_name, str) or not NODE_NAME.fullmatch(node_name):
        return False
    if settings.TRAINYARD_AGENT_NODES:
        return node_name in settings.TRAINYARD_AGENT_NODES
    return Node.objects.filter(name=node_name, executor=Node.Executor.LOCAL).exists()


def served_attempt(task: str, attempt_id: object) -> ReplicaAttempt | None:
    """The attempt a task names, if it is one of this agent's; else None, and a log line."""
    attempt = None
    if isinstance(attempt_id, int) and not isinstance(attempt_id, bool):
        attempt = ReplicaAttempt.objects.select_related("node").filter(pk=attempt_id).first()
    if attempt is not None and attempt.node is not None and serves(attempt.node.name):
        return attempt
    logger.warning("Refused %s(%r): not an attempt of a node this agent serves", task, attempt_id)
    return None


@shared_task(name="jobs.agent.start_attempt", ignore_result=True)
def start_attempt(attempt_id: int) -> None:
    if served_attempt("start_attempt", attempt_id):
        start(attempt_id)


@shared_task(name="jobs.agent.stop_attempt", ignore_result=True)
def stop_attempt(attempt_id: int, reason: dict | str) -> None:
    """Stop one attempt; ``reason`` is a ``Reason`` as JSON (plain text from older senders)."""
    attempt = served_attempt("stop_attempt", attempt_id)
    if attempt is None or not isinstance(reason, dict | str):
        return
    reason = Reason.of(reason)
    folder = AttemptFolder.of(attempt)
    now = timezone.now()
    site = SiteSettings.load()
    preempted = Job.objects.filter(
        pk=attempt.replica.job_id, preempt_requested_at__isnull=False, stop_requested_at=None
    ).exists()
    grace = timedelta(seconds=site.preempt_grace_seconds if preempted else site.stop_grace_seconds)
    with folder.lock():
        if folder.exists("exit"):
            return
        if not folder.exists("spec"):
            # Not started: remember the stop so a late start message does nothing.
            folder.write(
                "stop",
                {"kind": "stopped", "reason": reason.as_json(), "requested_at": now.isoformat()},
            )
            attempt_ended(
                attempt_id=attempt.pk,
                state=ReplicaAttempt.State.STOPPED,
                ended_at=now,
                reason=reason,
            )
            return
        request_stop(folder, kind=ReplicaAttempt.State.STOPPED, reason=reason, now=now, grace=grace)
        if grace.total_seconds() == 0:
            folder.signal(signal.SIGKILL)


@shared_task(name="jobs.agent.poll", ignore_result=True)
def poll(node_name: str) -> None:
    if not serves(node_name):
        logger.warning("Refused poll(%r): not a node this agent serves", node_name)
        return
    poll_node(node_name)


@shared_task(name="jobs.agent.dispatch_polls", ignore_result=True)
def dispatch_polls() -> None:
    """Send each local node's agent its poll (expiring, so a dead agent's queue stays short),
    then check their heartbeats. A site without local nodes (Slurm's alone) has no
    heartbeat to watch: should one join, the check watches a whole timeout before it
    takes the node down (``nodes_check_heartbeats``)."""
    expires = settings.TRAINYARD_AGENT_POLL_EXPIRES
    names = list(Node.objects.filter(executor=Node.Executor.LOCAL).values_list("name", flat=True))
    for name in names:
        current_app.send_task(
            "jobs.agent.poll", args=[name], queue=agent_queues(name)[1], expires=expires
        )
    if names:
        nodes_check_heartbeats()
