"""The agent's state folder: what survives an agent restart.

``<TRAINYARD_NODE_ROOT>/<node>/attempts/<attempt id>/`` holds the spec the
runner follows, the files the runner writes (see ``runner.py``), the log and
``stop.json`` (a stop or a deadline, with when to KILL). ``active/<id>`` lists
the attempts the agent still has to watch; a restarted agent reads them and
carries on. Every write is atomic (write then rename) and no read or write
follows a link. The folder is the agent's (root's, 0711): a job's uid can
reach its command file in it and nothing else.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from jobs.execution.files import LOG_NAME, attempt_dir, node_root, storage_name

from .limits import CGROUP_ROOT, cgroup_name
from .locks import lock_held
from .runner import read_json, write_json


class AttemptFolder:
    def __init__(self, node_name: str, attempt_id: int) -> None:
        self.node_name = node_name
        self.attempt_id = attempt_id
        self.path = attempt_dir(node_name, attempt_id)

    @classmethod
    def of(cls, attempt) -> AttemptFolder:
        """The folder of a ``ReplicaAttempt``, where its node keeps it (``storage_name``)."""
        return cls(storage_name(attempt.node), attempt.pk)

    @property
    def log(self) -> Path:
        return self.path / LOG_NAME

    @property
    def active_marker(self) -> Path:
        return node_root(self.node_name) / "active" / str(self.attempt_id)

    def read(self, name: str) -> dict | None:
        return read_json(self.path / f"{name}.json")

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

    @contextlib.contextmanager
    def try_lock(self) -> Iterator[bool]:
        """The same lock without waiting: yields False while a start or stop holds it."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / "agent.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True

    def runner_alive(self) -> bool:
        """Whether a runner holds ``run.lock`` (the kernel drops it when the runner dies)."""
        return lock_held(self.path / "run.lock")

    def mark_active(self) -> None:
        self.active_marker.parent.mkdir(parents=True, exist_ok=True)
        self.active_marker.touch()

    def mark_done(self) -> None:
        self.active_marker.unlink(missing_ok=True)

    def signal(self, signum: int) -> None:
        """Signal the running phase; TERM spares bwrap itself, which would kill the sandbox.

        Only processes that are the attempt's own get the signal: the members
        of its cgroup (the kernel's record, which the job cannot change), or,
        on a host without one, the process group whose leader the attempt's
        own runner started. A pgid in ``current.json`` alone is never obeyed.
        """
        current = self.read("current")
        if current is None or not self.runner_alive():
            return
        spec = self.read("spec") or {}
        leader = current.get("pgid")
        for pid in self.processes(spec, current):
            if signum != signal.SIGKILL and pid == leader and spec.get("sandboxed"):
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def processes(self, spec: dict, current: dict) -> list[int]:
        """The attempt's processes, verified as described in ``signal``."""
        cgroup = spec.get("cgroup")
        if cgroup:
            if not self._is_own_cgroup(Path(cgroup)):
                return []
            try:
                return [int(pid) for pid in (Path(cgroup) / "cgroup.procs").read_text().split()]
            except OSError:
                return []
        leader, runner_pid = current.get("pgid"), current.get("runner_pid")
        if not isinstance(leader, int) or not isinstance(runner_pid, int):
            return []
        if _parent_of(leader) != runner_pid or not self._is_own_runner(runner_pid):
            return []
        return group_members(leader)

    def own_cgroup(self, spec: dict) -> Path | None:
        """The attempt's cgroup as its spec names it, if it is the attempt's own."""
        cgroup = spec.get("cgroup")
        return Path(cgroup) if cgroup and self._is_own_cgroup(Path(cgroup)) else None

    def _is_own_cgroup(self, path: Path) -> bool:
        expected = cgroup_name(node_name=self.node_name, attempt_id=self.attempt_id)
        return path.name == expected and path.resolve().is_relative_to(CGROUP_ROOT)

    def _is_own_runner(self, pid: int) -> bool:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return str(self.path).encode() in argv and any(a.endswith(b"runner.py") for a in argv)


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


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
