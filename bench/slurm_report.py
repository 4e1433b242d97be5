"""What the Slurm side by side prints at the end: every run, each way's medians, and
their ratios: to (a), plain ``sbatch``; and (b)'s to (e), the same jobs sandboxed."""

from __future__ import annotations

import os
import statistics

from bench.slurm_sbatch import Result


def report(args, results: dict[str, list[Result]]) -> None:
    """Every run, then each way's medians and their ratios to (a)'s (and, with pairs, the
    median of each pair's own ratio)."""
    print(
        f"{args.jobs} one-card `sleep {args.sleep:g}` jobs, {args.clients} submitting at once, "
        f"4 nodes × 4 V100; poll {args.poll} s; {os.cpu_count()} CPUs; "
        f"look-ahead {os.environ.get('TRAINYARD_SLURM_LOOKAHEAD') or 'default'}; "
        f"Trainyard and PostgreSQL at nice {args.platform_nice}"
    )
    titles = {
        "a": "(a) sbatch straight",
        "b": "(b) Trainyard API, Slurm executor",
        "c": "(c) Trainyard API, local executor",
        "d": f"(d) sbatch when a card frees, +{args.reaction:g} s",
        "e": "(e) sbatch straight, sandboxed",
    }
    print(f"{'':38}{'wall s':>9}{'starts/s':>10}{'median delay s':>16}{'started':>9}{'card s':>8}")
    for key, runs in results.items():
        for number, result in enumerate(runs, start=1):
            title = f"{titles[key]} #{number}" if len(runs) > 1 else titles[key]
            print(
                f"{title:38}{result.wall_s:9.1f}{result.starts_per_s:10.2f}"
                f"{result.median_delay_s:16.2f}{result.started:9d}{result.card_s:8.2f}"
            )
    a_wall, a_delay = medians(results["a"])
    print(f"(a) medians: wall {a_wall:.1f} s, submit-to-start {a_delay:.2f} s")
    for key in sorted(set(results) - {"a"}):
        print(compared(results, key, "a"))
    if results.get("b") and results.get("e"):  # Trainyard's own part: the same jobs, sandboxed
        print(compared(results, "b", "e"))


def compared(results: dict[str, list[Result]], key: str, base: str) -> str:
    """``key``'s medians against ``base``'s (and each pair's ratio, when they were paired)."""
    runs, base_runs = results[key], results[base]
    (wall, delay), (base_wall, base_delay) = medians(runs), medians(base_runs)
    line = (
        f"({key})/({base}): wall {wall / base_wall:.2f} (medians {wall:.1f} / {base_wall:.1f} s), "
        f"submit-to-start {delay:.2f} s against {base_delay:.2f} s ({delay - base_delay:+.2f} s)"
    )
    if len(runs) == len(base_runs) > 1:
        ratios = [k.wall_s / b.wall_s for b, k in zip(base_runs, runs, strict=True)]
        line += f"; per pair {', '.join(f'{r:.2f}' for r in ratios)}"
    return line


def medians(runs: list[Result]) -> tuple[float, float]:
    """The runs' median wall time and median submit-to-start delay."""
    return (
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.median_delay_s for r in runs),
    )
