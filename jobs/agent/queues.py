"""The Celery queues of a node's agent (its own module: tasks and the poll both name them)."""

from __future__ import annotations


def agent_queues(node_name: str) -> list[str]:
    """What the agent of a node consumes: its work, and its polls on their own queue.

    Polls (and so heartbeats) must not wait behind a backlog of starts: the
    worker takes from both queues in turn.
    """
    return [f"node.{node_name}", f"node.{node_name}.poll"]
