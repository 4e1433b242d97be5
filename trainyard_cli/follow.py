"""Follow a job: its state changes as they happen and its log until it ends.

Logs go to standard output, state changes to standard error, so
``trainyard logs -f 12 > run.log`` keeps only the job's own lines.
"""

from __future__ import annotations

import os
import time

import click

from .api_client import ApiClient
from .errors import JOB_EXIT_CODES, NotFound
from .output import event_line

FINAL_STATES = frozenset(JOB_EXIT_CODES)
# Seconds between polls; tests make it shorter.
POLL_SECONDS = float(os.environ.get("TRAINYARD_POLL_SECONDS", "1"))


class LogCursor:
    """Where the client is in one replica's log; moves to a newer attempt when one starts."""

    def __init__(self, client: ApiClient, job_id: int, replica: int) -> None:
        self.client = client
        self.job_id = job_id
        self.replica = replica
        self.attempt: int | None = None
        self.offset = 0

    def read_new(self) -> list[str]:
        """The lines written since the last call (every line of an attempt, once)."""
        if self.attempt is None:
            return self._start_latest()
        lines, answer = self._drain()
        if answer["state"] in ("pending", "running"):
            return lines
        # This attempt has ended: a retry writes to a new one.
        return lines + self._start_latest()

    def _start_latest(self) -> list[str]:
        answer = self._read(attempt=None, offset=0)
        if answer is None or answer["attempt"] == self.attempt:
            return []
        if self.attempt is not None:
            click.echo(f"--- attempt {answer['attempt']} on {answer['node']} ---", err=True)
        self.attempt, self.offset = answer["attempt"], answer["next_offset"]
        lines, _ = self._drain()
        return answer["lines"] + lines

    def _drain(self) -> tuple[list[str], dict]:
        lines: list[str] = []
        while True:
            answer = self._read(attempt=self.attempt, offset=self.offset)
            lines += answer["lines"]
            moved = answer["next_offset"] != self.offset
            self.offset = answer["next_offset"]
            if not moved or self.offset >= answer["size_bytes"]:
                return lines, answer

    def _read(self, *, attempt: int | None, offset: int) -> dict | None:
        try:
            return self.client.get(
                f"/jobs/{self.job_id}/logs", replica=self.replica, attempt=attempt, offset=offset
            )
        except NotFound:
            return None  # no attempt yet: the job is waiting


def follow_job(client: ApiClient, job_id: int, *, replica: int = 0, states: bool = True) -> int:
    """Print state changes (``states``) and log lines until the job ends; its exit code."""
    cursor = LogCursor(client, job_id, replica)
    events_seen = 0
    while True:
        # The job is read before its log: once it has ended, this read gets the whole log.
        job = client.get(f"/jobs/{job_id}")
        if states:
            for event in job["events"][events_seen:]:
                click.echo(f"[job {job_id}] {event_line(event)}", err=True)
            events_seen = len(job["events"])
        for line in cursor.read_new():
            click.echo(line)
        if job["state"] in FINAL_STATES:
            return JOB_EXIT_CODES[job["state"]]
        time.sleep(POLL_SECONDS)
