"""Execution: turning a placed job into running replica attempts on its nodes."""
