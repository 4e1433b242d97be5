"""A job's sampled use, as the job page, ``GET /api/v1/jobs/{id}/metrics`` and
``trainyard top`` show it: per replica attempt, points with CPU % (of one core), memory,
I/O rates and each card's figures. Rates come from consecutive samples' running totals."""

from __future__ import annotations

from datetime import timedelta
from itertools import groupby

from django.utils import timezone

from .models import AttemptSample, Job

MAX_MINUTES = 24 * 60
MIB = 1024 * 1024


def job_usage(job: Job, *, minutes: int = 60) -> list[dict]:
    """Each attempt with samples in the last ``minutes``, by replica and attempt. One query."""
    since = timezone.now() - timedelta(minutes=minutes)
    rows = (
        AttemptSample.objects.filter(attempt__replica__job=job, at__gte=since)
        .order_by("attempt__replica__index", "attempt__number", "at")
        .values(
            "attempt_id",
            "attempt__replica__index",
            "attempt__number",
            "attempt__node__name",
            "at",
            "cpu_seconds",
            "memory_mib",
            "read_bytes",
            "write_bytes",
            "gpus",
        )
    )
    series = []
    for _attempt, samples in groupby(rows, key=lambda row: row["attempt_id"]):
        samples = list(samples)
        first = samples[0]
        series.append(
            {
                "replica": first["attempt__replica__index"],
                "attempt": first["attempt__number"],
                "node": first["attempt__node__name"] or "",
                "points": _points(samples),
            }
        )
    return series


def _points(samples: list[dict]) -> list[dict]:
    points, previous = [], None
    for sample in samples:
        seconds = (sample["at"] - previous["at"]).total_seconds() if previous else 0
        points.append(
            {
                "at": sample["at"],
                "cpu_percent": _rate(sample, previous, "cpu_seconds", seconds, 100),
                "memory_mib": sample["memory_mib"],
                "read_mib_s": _rate(sample, previous, "read_bytes", seconds, 1 / MIB),
                "write_mib_s": _rate(sample, previous, "write_bytes", seconds, 1 / MIB),
                "gpus": sample["gpus"],
            }
        )
        previous = sample
    return points


def _rate(sample: dict, previous: dict | None, key: str, seconds: float, scale: float):
    """The counter's rate since the previous sample; None for the first, and never below 0
    (a process that ended with time its parent outside the attempt never collected)."""
    if previous is None or seconds <= 0:
        return None
    return round(max(0.0, sample[key] - previous[key]) / seconds * scale, 1)


def latest(series: list[dict]) -> list[dict]:
    """Each replica's latest point with a rate (the CLI's ``top``, the page's figures)."""
    rows = []
    for replica in series:
        rated = [p for p in replica["points"] if p["cpu_percent"] is not None]
        if rated:
            rows.append({**replica, "points": None, "now": rated[-1]})
    return rows


def chart(values: list[float | None], *, top: float, width: int = 300, height: int = 60) -> str:
    """An SVG polyline's points for ``values`` (None: skipped) on a 0…``top`` scale."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(known) < 2:
        return ""
    step = width / max(1, len(values) - 1)
    top = max(top, max(v for _i, v in known), 1e-9)
    return " ".join(f"{i * step:.1f},{height - v / top * height:.1f}" for i, v in known)


def usage_panel(job: Job) -> list[dict]:
    """The job page's usage card: per replica attempt of the last hour, its latest figures
    and charts of CPU %, memory and each card's utilisation and memory."""
    panels = []
    for attempt in job_usage(job, minutes=60):
        points = attempt["points"]
        rated = [p for p in points if p["cpu_percent"] is not None]
        if not rated:
            continue
        cards = sorted({card["index"] for point in points for card in point["gpus"]})
        panels.append(
            {
                **attempt,
                "now": rated[-1],
                "cpu_chart": chart([p["cpu_percent"] for p in points], top=100),
                "memory_chart": chart([p["memory_mib"] for p in points], top=1),
                "cards": [_card_charts(points, index) for index in cards],
            }
        )
    return panels


def _card_charts(points: list[dict], index: int) -> dict:
    seen = [next((c for c in p["gpus"] if c["index"] == index), None) for p in points]
    last = next((c for c in reversed(seen) if c), {})
    return {
        "index": index,
        "now": last,
        "util_chart": chart([c["util"] if c else None for c in seen], top=100),
        "memory_chart": chart([c["memory_mib"] if c else None for c in seen], top=1),
    }
