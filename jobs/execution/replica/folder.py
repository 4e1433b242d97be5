"""The agent's state folder: what survives an agent restart.

``<TRAINYARD_NODE_ROOT>/<node>/attempts/<attempt id>/`` holds the spec the
runner follows, the files the runner writes (see ``runner.py``), the log and
``stop.json`` (a stop or a deadline, with when to KILL). ``active/<id>`` lists
the attempts the agent still has to watch; a restarted agent reads them and
carries on. Every write is atomic (write then rename).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from jobs.execution.files import LOG_NAME, attempt_dir, node_root


def write_json(path: Path, data: dict) -> None:
    """Write atomically: readers see the old file or the whole new one."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)


class AttemptFolder:
    def __init__(self, node_name: str, attempt_id: int) -> None:
        self.node_name = node_name
        self.attempt_id = attempt_id
        self.path = attempt_dir(node_name, attempt_id)

    @property
    def log(self) -> Path:
        return self.path / LOG_NAME

    @property
    def active_marker(self) -> Path:
        return node_root(self.node_name) / "active" / str(self.attempt_id)

    def read(self, name: str) -> dict | None:
        try:
            return json.loads((self.path / f"{name}.json").read_text())
        except FileNotFoundError:
            return None

    def write(self, name: str, data: dict) -> None:
        write_json(self.path / f"{name}.json", data)

    def exists(self, name: str) -> bool:
        return (self.path / f"{name}.json").exists()

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Serialises start and stop of one attempt across the agent's worker processes."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / "agent.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def runner_alive(self) -> bool:
        """Whether a runner holds ``run.lock`` (the kernel drops it when the runner dies)."""
        try:
            fd = os.open(self.path / "run.lock", os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def mark_active(self) -> None:
        self.active_marker.parent.mkdir(parents=True, exist_ok=True)
        self.active_marker.touch()

    def mark_done(self) -> None:
        self.active_marker.unlink(missing_ok=True)

    def signal(self, signum: int) -> None:
        """Signal the running phase; TERM spares bwrap itself, which would kill the sandbox."""
        current = self.read("current")
        if current is None or not self.runner_alive():
            return
        pgid = current["pgid"]
        if signum == signal.SIGKILL:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return
        for pid in group_members(pgid):
            if pid != pgid or not self.read("spec").get("sandboxed"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)


def active_attempt_ids(node_name: str) -> list[int]:
    folder = node_root(node_name) / "active"
    if not folder.is_dir():
        return []
    return sorted(int(name) for name in os.listdir(folder) if name.isdigit())


def group_members(pgid: int) -> list[int]:
    """Processes of a process group, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # Fields after the command name (which may contain spaces): state, ppid, pgrp, ...
        if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
            members.append(int(entry))
    return members


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)
