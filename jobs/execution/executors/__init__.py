"""Executors behind one interface, chosen per node (``Node.executor``)."""

from __future__ import annotations

from .base import Executor
from .local import LocalExecutor
from .slurm import SlurmExecutor


def executor_for(executor_name: str) -> Executor:
    """The executor for a node's ``executor`` field (``local`` or ``slurm``)."""
    if executor_name == "slurm":
        return SlurmExecutor()
    return LocalExecutor()
