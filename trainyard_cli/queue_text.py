"""``trainyard queue``: each model's waiting jobs as the scheduler will take them."""

from __future__ import annotations

from .output import table, when


def queue_text(answer: dict) -> str:
    if not answer["queues"]:
        return "No job is waiting."
    parts = []
    for queue in answer["queues"]:
        title = queue["model"] or "CPU jobs"
        rows = [
            (
                job["position"],
                job["id"],
                job["name"],
                job["owner"],
                job["priority"],
                f"{job['fair_share_factor']:.2f}",
                when(job["estimated_start"]),
                _moves(job),
                job["state_reason"],
            )
            for job in queue["jobs"]
        ]
        headers = ("POS", "ID", "NAME", "OWNER", "PRIORITY", "FAIR", "START", "MOVE", "WHY")
        listed = table(headers, rows) if rows else "  (none you may see)"
        parts.append(f"{title}: {queue['waiting']} waiting\n{listed}")
    return "\n\n".join(parts)


def _moves(job: dict) -> str:
    return (
        "".join(
            arrow for arrow, may in (("↑", job["can_move_up"]), ("↓", job["can_move_down"])) if may
        )
        or "-"
    )
