"""A real Slurm for tests: the development cluster of ``deploy/slurm-dev``, started if down.

``slurm_cluster`` (session): starts munge, slurmctld and the slurmd processes
when they are not up, and stops them at the end only if it started them.
Where Slurm is not installed the Slurm tests are skipped, loudly; under
``TRAINYARD_REQUIRE_SERVICES`` (CI) they fail instead.

``slurm`` (per test): Trainyard configured for that cluster (partition
``trainyard``, a job-name prefix of its own), its nodes synced, and a real
Celery worker with beat running the tracking pass every half second.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from celery import current_app

from jobs.execution.slurm import cli
from jobs.execution.slurm.inventory import inventory_sync
from resources.models import Node
from tests.agent_support import Agent
from tests.factories import GpuModelFactory

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "deploy" / "slurm-dev" / "slurm-dev.sh"
DEV_DIR = Path(os.environ.get("TRAINYARD_SLURM_DEV_DIR", ROOT / "var" / "slurm-dev"))
TOOLS = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "munged")
TRACK_SECONDS = 0.5
STARTED_BY_TESTS = "started-by-tests"


@dataclass
class Cluster:
    conf: Path

    def run(self, *args: str) -> str:
        result = subprocess.run(
            [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
        )
        if result.returncode != 0 and args[0] != "status":
            raise RuntimeError(f"slurm-dev.sh {' '.join(args)}: {result.stderr}")
        return result.stdout

    def up(self) -> bool:
        return subprocess.run([str(SCRIPT), "status"], capture_output=True).returncode == 0

    def scontrol(self, *args: str) -> str:
        env = {"PATH": os.defpath, "SLURM_CONF": str(self.conf)}
        return subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, env=env, check=True
        ).stdout


@pytest.fixture(scope="session")
def slurm_cluster():
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing or os.geteuid() != 0:
        why = (
            f"Slurm tests need slurm-wlm and munge (missing: {', '.join(missing)})"
            if missing
            else "Slurm tests start slurmctld/slurmd and need root"
        )
        if os.environ.get("TRAINYARD_REQUIRE_SERVICES"):
            pytest.fail(f"{why}; CI must run them (deploy/test-host.sh installs Slurm)")
        pytest.skip(f"SKIPPING EVERY SLURM TEST: {why}. Install: apt-get install slurm-wlm munge")
    cluster = Cluster(conf=DEV_DIR / "etc" / "slurm.conf")
    with _use(fcntl.LOCK_SH), _leases() as leases:
        (leases / str(os.getpid())).touch()
        if not cluster.up():
            cluster.run("start")
            (leases / STARTED_BY_TESTS).touch()
    yield cluster
    with _leases() as leases:
        (leases / str(os.getpid())).unlink(missing_ok=True)
        others = [p for p in leases.iterdir() if p.name.isdigit() and _alive(int(p.name))]
        if not others and (leases / STARTED_BY_TESTS).exists():
            cluster.run("stop")
            (leases / STARTED_BY_TESTS).unlink()


@contextlib.contextmanager
def _leases():
    """Test sessions at once share the one cluster: the last one out stops what tests started.

    A cluster started by hand is never stopped here.
    """
    leases = DEV_DIR / "test-leases"
    leases.mkdir(parents=True, exist_ok=True)
    with (leases / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield leases


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.contextmanager
def _use(mode: int):
    """Tests share the cluster (LOCK_SH); one that stops the controller or changes a node
    holds it alone (LOCK_EX), so that no other test session's tests run meanwhile."""
    DEV_DIR.mkdir(parents=True, exist_ok=True)
    with (DEV_DIR / "use.lock").open("a") as lock:
        fcntl.flock(lock, mode)
        yield


@pytest.fixture
def slurm_use(slurm_cluster, request):
    """Held for the whole test; exclusive for tests that also ask for ``slurm_cluster_alone``."""
    alone = "slurm_cluster_alone" in request.fixturenames
    with _use(fcntl.LOCK_EX if alone else fcntl.LOCK_SH):
        yield slurm_cluster


@pytest.fixture
def slurm_cluster_alone(slurm_use):
    """For tests that stop the controller or change a node's state or partition."""
    return slurm_use


def wait_for_controller(timeout: float = 90) -> None:
    """Wait out a controller that another test session's outage test has stopped."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cli.nodes()
            return
        except cli.SlurmUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


@dataclass
class SlurmSite:
    cluster: Cluster
    worker: Agent
    nodes: list[Node]
    prefix: str

    def jobs(self) -> dict[str, cli.SlurmJob]:
        return cli.jobs(name_prefix=f"{self.prefix}-j")


@pytest.fixture
def slurm_lookahead() -> int:
    """The ``slurm`` site's TRAINYARD_SLURM_LOOKAHEAD (0: the default); a test sets its own
    with ``@pytest.mark.parametrize("slurm_lookahead", [n])``."""
    return 0


@pytest.fixture
def slurm(slurm_use, agent_env, settings, slurm_lookahead):
    """Trainyard on the dev cluster: nodes gpu01-gpu04 synced, a tracking worker running."""
    slurm_cluster = slurm_use
    prefix = f"ty{uuid.uuid4().hex[:8]}"
    env = {
        "TRAINYARD_SLURM": "1",
        "TRAINYARD_SLURM_PARTITION": "trainyard",
        "TRAINYARD_SLURM_CONF": str(slurm_cluster.conf),
        "TRAINYARD_SLURM_JOB_PREFIX": prefix,
        "TRAINYARD_SLURM_TRACK_SECONDS": str(TRACK_SECONDS),
        "TRAINYARD_SLURM_COMMAND_TIMEOUT": "10",
        "TRAINYARD_SLURM_LOOKAHEAD": str(slurm_lookahead),
    }
    settings.TRAINYARD_SLURM_LOOKAHEAD = slurm_lookahead
    settings.TRAINYARD_SLURM_ENABLED = True
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    settings.TRAINYARD_SLURM_CONF = str(slurm_cluster.conf)
    settings.TRAINYARD_SLURM_JOB_PREFIX = prefix
    GpuModelFactory(name="V100")
    wait_for_controller()
    inventory_sync()
    # gpu01-gpu04 (gpu05 too, while another session's inventory test lends it to the partition).
    nodes = list(Node.objects.filter(from_slurm=True).order_by("name"))[:4]
    worker = agent_env([], env=env)
    yield SlurmSite(cluster=slurm_cluster, worker=worker, nodes=nodes, prefix=prefix)
    with contextlib.suppress(cli.SlurmUnavailable):  # another session's outage test
        leftover = list(cli.jobs(name_prefix=f"{prefix}-j"))
        if leftover:
            cli.cancel(leftover)


@pytest.fixture
def slurm_here(slurm_use, db, settings, tmp_path):
    """Trainyard on the dev cluster with no worker: the tracking pass and the submissions
    run in the test process, their tasks eagerly; yields the job-name prefix."""
    prefix = f"ty{uuid.uuid4().hex[:8]}"
    settings.TRAINYARD_SLURM_ENABLED = True
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    settings.TRAINYARD_SLURM_CONF = str(slurm_use.conf)
    settings.TRAINYARD_SLURM_JOB_PREFIX = prefix
    settings.TRAINYARD_SLURM_QUERY_SECONDS = 0  # every pass asks squeue
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_DATA_ROOT = tmp_path / "data"
    GpuModelFactory(name="V100")
    wait_for_controller()
    inventory_sync()
    # The pass hands reports to tasks; here they run in this process, as it calls them.
    # Sent by name, they run eagerly only once registered: as in a worker, every task module
    # is imported (run alone, a test's tasks went to the broker, and nothing ran them).
    current_app.loader.import_default_modules()
    current_app.conf.task_always_eager = True
    yield prefix
    current_app.conf.task_always_eager = False
    leftover = list(cli.jobs(name_prefix=f"{prefix}-j"))
    if leftover:
        cli.cancel(leftover)
