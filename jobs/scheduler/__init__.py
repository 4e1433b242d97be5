"""The scheduler: admission against quota, placement on nodes, queue order."""


def run_pass() -> None:
    """Admit and place what can start now. Implemented by the scheduler work."""
