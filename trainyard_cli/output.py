"""What the commands print for people: aligned tables and short facts (``--json`` skips this)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import click


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def emit(data: Any, *, as_json: bool, render: Callable[[Any], str]) -> None:
    """The API's answer as JSON (``--json``), else as ``render`` puts it for people."""
    if as_json:
        echo_json(data)
    elif text := render(data):
        click.echo(text)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def when(value: str | None, *, seconds: bool = False) -> str:
    """An API time in the local zone, to the minute (or second); ``-`` for none."""
    if not value:
        return "-"
    shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return datetime.fromisoformat(value).astimezone().strftime(shape)


def number(value: float | int | str | None) -> str:
    if value is None:
        return "no limit"
    as_float = float(value)
    return str(int(as_float)) if as_float.is_integer() else f"{as_float:g}"


def resources_text(resources: dict) -> str:
    """``2×V100, 24 cores, 112 GiB`` / ``30% of V100 ×1, 4 cores, …`` / ``CPU, 2 cores, 8 GiB``."""
    kind = resources["kind"]
    if kind == "gpu":
        head = f"{resources['gpu_count']}×{resources['gpu_model']}"
    elif kind == "vgpu":
        head = (
            f"{resources['gpu_count']}×{resources['vgpu_compute_percent']}% "
            f"{resources['gpu_model']} ({number(resources['vgpu_memory_gib'])} GiB)"
        )
    else:
        head = "CPU"
    return f"{head}, {number(resources['cpu_cores'])} cores, {number(resources['memory_gib'])} GiB"


def jobs_page(page: dict) -> str:
    """``GET /jobs``'s page: a table, and how many more there are."""
    jobs = page["items"]
    if not jobs:
        return "No jobs."
    more = page["count"] > len(jobs)
    return jobs_table(jobs) + (f"\n({len(jobs)} of {page['count']}; --limit shows more)" * more)


def jobs_table(jobs: list[dict]) -> str:
    return table(
        ["ID", "NAME", "PROJECT", "OWNER", "STATE", "RESOURCES", "SUBMITTED"],
        (
            [
                job["id"],
                job["name"],
                job["project"],
                job["owner"],
                job["state"] + (" (borrowing)" if job.get("borrowed") else ""),
                _replicas(job) + resources_text(job["resources"]),
                when(job["submitted_at"]),
            ]
            for job in jobs
        ),
    )


def _replicas(job: dict) -> str:
    return f"{job['replicas']} nodes × " if job["task_mode"] == "distributed" else ""


def _checkpoint(job: dict) -> str:
    if job.get("keep_checkpoint"):
        return "kept as an output once the job has ended"
    return "removed once the job has ended"


def job_details(job: dict) -> str:
    facts = [
        ("Job", f"{job['id']} {job['name']}"),
        ("Project", job["project"]),
        ("Owner", job["owner"]),
        ("State", job["state"] + (f" ({job['state_reason']})" if job["state_reason"] else "")),
        ("Queue position", job["queue_position"]),
        ("Expected start", job["estimated_start"] and when(job["estimated_start"])),
        ("Resources", _replicas(job) + resources_text(job["resources"])),
        ("Spec", job["spec"]),
        ("Template", job["template"]),
        ("Image", job["image"]),
        ("Code version", job["code_version"]),
        ("Datasets", ", ".join(job["datasets"]) or "-"),
        ("Pretrained models", ", ".join(job["pretrained_models"]) or "-"),
        ("Ports", ", ".join(map(str, job["ports"])) or "-"),
        ("Max run time", _minutes(job["max_runtime_minutes"])),
        ("Max retries", job["max_retries"]),
        ("Priority", job["priority"]),
        ("Preemptible", "yes" if job.get("preemptible") else "no"),
        ("Checkpoint", _checkpoint(job)),
        ("Borrowing", "idle quota beyond yours: may be preempted" if job.get("borrowed") else None),
        ("Attempt", job.get("attempt") or None),
        ("Submitted", when(job["submitted_at"])),
        ("Started", when(job["started_at"])),
        ("Finished", when(job["finished_at"])),
    ]
    width = max(len(label) for label, _ in facts) + 1
    lines = [f"{label + ':':<{width}} {value}" for label, value in facts if value is not None]
    if job.get("connect"):
        lines += ["Connect:"] + [
            f"  {c['port']} → {c['host']}:{c['host_port']} (replica {c['replica']} on {c['node']})"
            + (f"\n        in a browser: {c['url']}" if c.get("url") else "")
            for c in job["connect"]
        ]
    lines += ["Command:", _indent(job["command"])]
    if job["augmentation_command"]:
        lines += ["Augmentation command:", _indent(job["augmentation_command"])]
    if job.get("events"):
        lines += ["Events:"] + ["  " + event_line(e) for e in job["events"]]
    return "\n".join(lines)


def stop_text(job: dict) -> str:
    return f"Job {job['id']}: {job['state']} (stop requested)"


def event_line(event: dict) -> str:
    if event["from_state"] == event["to_state"]:
        change = event["to_state"]
    else:
        change = f"{event['from_state'] or 'new'} → {event['to_state']}"
    parts = [when(event["created_at"], seconds=True), change, event["reason"]]
    return "  ".join(part for part in parts if part)


def _minutes(value: int | None) -> str:
    return "no limit" if value is None else f"{value} min"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in (text or "").splitlines()) or "  -"


def feasibility_text(answer: dict) -> str:
    if answer["feasible"]:
        return "Feasible: a node is big enough and it is within your quota."
    return "\n".join(["Not feasible:"] + [f"  {reason}" for reason in answer["reasons"]])


def free_text(free: dict) -> str:
    gpus = table(
        ["MODEL", "FREE CARDS", "LARGEST ON ONE NODE", "NODES", "FREE VGPU %", "FOR YOU"],
        (
            [
                m["name"],
                f"{m['free_cards']}/{m['total_cards']}",
                m["largest_free_on_one_node"],
                m["nodes"],
                m["free_vgpu_compute_percent"] if m["supports_vgpu"] else "-",
                "yes" if m.get("available_to_you", True) else "no",
            ]
            for m in free["gpu_models"]
        ),
    )
    # Why the account may not use a model: the API's reason, in the language of LANG.
    refused = [
        f"{m['name']}: {m['not_available_reason']}"
        for m in free["gpu_models"]
        if m.get("not_available_reason")
    ]
    cpu = free["cpu"]
    quota = free["quota"]
    quota_rows = [
        ["CPU cores", *_quota(quota["cpu_cores"])],
        ["Memory GiB", *_quota(quota["memory_gib"])],
        *(["GPU " + q["model"], *_quota(q)] for q in quota["gpu"]),
        *(["vGPU % " + q["model"], *_quota(q)] for q in quota["vgpu_compute_percent"]),
    ]
    return "\n".join(
        [
            f"Free resources as of {when(free['as_of'])} (a snapshot, not live):",
            gpus,
            *refused,
            "",
            f"CPU: {number(cpu['free_cores'])} of {number(cpu['total_cores'])} cores free "
            f"(at most {number(cpu['largest_free_cores_on_one_node'])} on one node), "
            f"{number(cpu['free_memory_gib'])} of {number(cpu['total_memory_gib'])} GiB memory",
            "",
            "Your quota:",
            table(["RESOURCE", "LIMIT", "USED", "FREE"], quota_rows),
        ]
    )


def _quota(entry: dict) -> list[str]:
    return [number(entry["limit"]), number(entry["used"]), number(entry["free"])]


def statement_text(statement: dict, month: str | None) -> str:
    lines = table(
        ["JOB", "NAME", "MODEL", "UNIT", "PRICE", "HOURS", "FREE", "BILLABLE", "AMOUNT"],
        (
            [
                line["job_id"],
                line["job_name"],
                line["gpu_model"] or "-",
                line["unit"],
                line["unit_price"],
                line["hours"],
                line["free_hours"],
                line["billable_hours"],
                line["amount"],
            ]
            for line in statement["lines"]
        ),
    )
    currency = statement["currency"]
    return "\n".join(
        [
            f"Statement of {statement['account']} for {month or 'this month'}"
            + ("" if statement["billing_enabled"] else " (billing not enabled)"),
            lines if statement["lines"] else "No usage.",
            "",
            f"Free card hours: {statement['free_used_card_hours']} used of "
            f"{statement['free_grant_card_hours']}, "
            f"{statement['free_remaining_card_hours']} left",
            f"Billable card hours: {statement['total_billable_card_hours']}",
            f"Total: {statement['total_amount']} {currency}",
        ]
    )


def usage_text(series: list[dict]) -> str:
    """``trainyard top``: each replica attempt's latest sampled use."""
    rows, cards = [], []
    for attempt in series:
        rated = [p for p in attempt["points"] if p["cpu_percent"] is not None]
        if not rated:
            continue
        now = rated[-1]
        io = f"{number(now['read_mib_s'])} / {number(now['write_mib_s'])}"
        rows.append(
            [
                attempt["replica"],
                attempt["attempt"],
                attempt["node"],
                when(now["at"], seconds=True),
                f"{number(now['cpu_percent'])} %",
                f"{now['memory_mib']} MiB",
                io,
            ]
        )
        for card in now["gpus"]:
            cards.append(
                [
                    attempt["replica"],
                    card["index"],
                    f"{card['util']} %",
                    f"{card['memory_mib']} MiB",
                    f"{number(card['power_w'])} W",
                    f"{card['temp_c']} °C",
                ]
            )
    if not rows:
        return "No usage sampled yet (the node's agent samples running replicas every few seconds)."
    text = table(
        ["Replica", "Attempt", "Node", "At", "CPU (of a core)", "Memory", "Read / write MiB/s"],
        rows,
    )
    if cards:
        text += "\n\n" + table(["Replica", "Card", "GPU", "Memory", "Power", "Temp"], cards)
    return text
