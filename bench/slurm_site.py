"""A scratch Trainyard beside the development Slurm cluster, for the Slurm benches.

``scratch_site`` sets Django up on a scratch database (``<name>_slurmbench``), starts
``deploy/slurm-dev`` if it is down, and points the Slurm settings and the node and data
roots at a temporary folder; on leaving it cancels the Slurm jobs it named, drops the
database and stops the cluster if it started it. ``submit_job`` posts one job through
the API from the calling thread's own connection.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLURM_DEV = ROOT / "deploy" / "slurm-dev" / "slurm-dev.sh"
CONF = ROOT / "var" / "slurm-dev" / "etc" / "slurm.conf"


@dataclass(frozen=True)
class Scratch:
    roots: Path  # nodes/ and data/, and each way's own folders
    prefix: str  # Trainyard's Slurm job names start with it


@contextlib.contextmanager
def scratch_site(label: str) -> Iterator[Scratch]:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a PostgreSQL database (the bench uses <name>_slurmbench).")
    from jobs.execution.replica.sandbox import isolation_problem

    if problem := isolation_problem():
        # Else every keeper refuses its replica, Trainyard closes the nodes, and no job runs.
        sys.exit(f"This host cannot isolate jobs: {problem} (`make run` or `make test` does it).")
    db = settings.DATABASES["default"]
    db["TEST"]["NAME"] = f"{db['NAME']}_slurmbench"
    started_cluster = subprocess.run([SLURM_DEV, "status"], capture_output=True).returncode != 0
    if started_cluster:
        subprocess.run([SLURM_DEV, "start"], check=True, capture_output=True)
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    roots = Path(tempfile.mkdtemp(prefix=f"trainyard-{label}-"))
    os.chmod(roots, 0o755)
    prefix = f"ty{label}{uuid.uuid4().hex[:6]}"
    settings.TRAINYARD_SLURM_CONF = str(CONF)
    settings.TRAINYARD_SLURM_JOB_PREFIX = prefix
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    settings.TRAINYARD_NODE_ROOT = roots / "nodes"  # as child_env gives the workers
    settings.TRAINYARD_DATA_ROOT = roots / "data"
    try:
        yield Scratch(roots, prefix)
    finally:
        # Trainyard's, and those ``slurm_sbatch`` submits as ``bench-<folder>``.
        cancel_slurm_jobs([prefix, f"bench-{roots.name}"])
        connection.creation.destroy_test_db(old_name, verbosity=0)
        if started_cluster:
            subprocess.run([SLURM_DEV, "stop"], capture_output=True)


def cancel_slurm_jobs(prefixes: list[str]) -> None:
    from jobs.execution.slurm import cli

    try:
        for prefix in prefixes:
            leftover = [sid for sid, job in cli.jobs(name_prefix=prefix).items()]
            if leftover:
                cli.cancel(leftover)
    except cli.SlurmUnavailable:
        pass


_local = threading.local()


def submit_job(port: int, token: str, *, name: str, command: str) -> int:
    """POST one one-card V100 job to ``/api/v1/jobs``; its id."""
    if getattr(_local, "port", None) != port:
        _local.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        _local.port = port
    body = {
        "project": "bench",
        "name": name,
        "command": command,
        "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1},
    }
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    headers["X-Forwarded-Proto"] = "https"  # as the TLS proxy in front of it says
    _local.connection.request("POST", "/api/v1/jobs", json.dumps(body), headers)
    response = _local.connection.getresponse()
    payload = response.read()
    if response.status != 201:
        raise SystemExit(f"submit answered {response.status}: {payload[:500]!r}")
    return json.loads(payload)["id"]
