"""Slurm's compressed node lists (``gpu[01-03,07],cpu1``), expanded as ``scontrol show
hostnames`` does, without running it."""

from __future__ import annotations

import re

BRACKET = re.compile(r"\[([^\[\]]*)\]")


def expand(hostlist: str) -> list[str]:
    """Every node name of ``hostlist``, in its order; a malformed range is kept as written."""
    return [name for item in _items(hostlist) for name in _expand_item(item)]


def _items(hostlist: str) -> list[str]:
    """The comma-separated names, commas inside brackets kept."""
    items, depth, current = [], 0, []
    for char in hostlist.strip():
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item for item in items if item]


def _expand_item(item: str) -> list[str]:
    match = BRACKET.search(item)
    if match is None:
        return [item]
    head, tail = item[: match.start()], item[match.end() :]
    names = []
    for part in match.group(1).split(","):
        low, _dash, high = part.partition("-")
        if not (low.isdigit() and (not high or high.isdigit())):
            return [item]
        width = len(low)
        for number in range(int(low), int(high or low) + 1):
            names += [f"{head}{number:0{width}d}{rest}" for rest in _expand_item(tail)]
    return names
