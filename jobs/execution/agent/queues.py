"""The Celery queues of a node's agent (its own module: tasks and the poll both name them)."""

from __future__ import annotations

from resources.models import node_queue


def agent_queues(node_name: str) -> list[str]:
    """What the agent of a node consumes: its work, and its polls on their own queue.

    Polls (and so heartbeats) must not wait behind a backlog of starts: the
    worker takes from both queues in turn.
    """
    return [node_queue(node_name), f"{node_queue(node_name)}.poll"]
