"""Executors behind one interface, chosen per node (``Node.executor``)."""

from __future__ import annotations

from .base import Executor


def executor_for(executor_name: str) -> Executor:
    """The executor for a node's ``executor`` field (``local`` or ``slurm``)."""
    if executor_name == "slurm":
        from .slurm import SlurmExecutor

        return SlurmExecutor()
    from .local import LocalExecutor

    return LocalExecutor()
