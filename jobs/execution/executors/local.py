"""The local executor: messages to the node agent's queue (``node.<name>``)."""

from __future__ import annotations

from core.reasons import Reason
from core.task_names import send_task
from jobs.models import ReplicaAttempt
from resources.models import node_queue


class LocalExecutor:
    name = "local"

    def start_attempts(self, attempt_ids: list[int]) -> None:
        for attempt_id, node_name in _nodes_of(attempt_ids):
            send_task("jobs.agent.start_attempt", args=[attempt_id], queue=node_queue(node_name))

    def stop_attempts(self, attempt_ids: list[int], *, reason: Reason) -> None:
        for attempt_id, node_name in _nodes_of(attempt_ids):
            send_task(
                "jobs.agent.stop_attempt",
                args=[attempt_id, Reason.of(reason).as_json()],
                queue=node_queue(node_name),
            )


def _nodes_of(attempt_ids: list[int]) -> list[tuple[int, str]]:
    """Each attempt's node, in the order given (the queue's)."""
    nodes = dict(ReplicaAttempt.objects.filter(pk__in=attempt_ids).values_list("pk", "node__name"))
    return [(pk, nodes[pk]) for pk in attempt_ids if pk in nodes]
