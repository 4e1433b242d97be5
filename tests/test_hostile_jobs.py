"""Startup commands are hostile code: every attack fails, and the platform keeps running.

Each test runs a real job whose command attempts the attack inside the
sandbox and records what happened in its output folder; the test then checks
the attack failed and that the agent, its heartbeat and the next job are fine.

Tests that take ``site`` run on both executors (``executor_sites.py``): the
local agent and Slurm run the same sandbox, so every attack fails on both.
What a job can reach on the network is in ``test_job_network.py``.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from jobs.execution.files import attempt_dir, replica_output_dir, storage_name
from jobs.execution.replica.limits import process_limit
from jobs.execution.replica.sandbox import python_environment_paths
from jobs.models import Job, ReplicaAttempt
from resources.models import Node
from tests.agent_support import Agent, attempt_log, attempts_of, cpu_job, place, wait_for_state
from tests.executor_sites import Site
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

# One line per attempt: "denied: <command>" when it failed, "allowed: <command>" when it worked.
PROBE = (
    'probe() { if "$@" > /dev/null 2>&1; then echo "allowed: $*"; else echo "denied: $*"; fi; }\n'
)


def output(job: Job, name: str) -> str:
    return (
        replica_output_dir(storage_name(job.replica_set.get().node), job.pk, 0) / name
    ).read_text()


def probes(commands: list[str]) -> str:
    return "".join(f"probe {c} >> $TRAINYARD_DATA_OUT/probes\n" for c in commands)


def outcomes(word: str, commands: list[str]) -> list[str]:
    """The lines ``probe`` writes for ``commands`` (it sees their words, quotes removed)."""
    return [f"{word}: {' '.join(shlex.split(c))}" for c in commands]


def run(agent: Agent, command: str, **fields) -> Job:
    job = place(cpu_job(command, **fields), agent.nodes[:1])
    return wait_for_state(job, Job.FINAL_STATES, agent)


def running(agent: Agent, command: str) -> Job:
    """A neighbour: another job running on the same node while the attack happens."""
    job = place(cpu_job(command), agent.nodes[:1])
    wait_for_state(job, Job.State.RUNNING, agent)
    wait_until(lambda: "up" in attempt_log(attempts_of(job)[0]), what="the neighbour's output")
    return job


def assert_platform_fine(site: Site | Agent) -> None:
    """The agent (or Slurm's worker) lives, and the next job on the node succeeds.

    A local node also heartbeats on after the attack.
    """
    if isinstance(site, Agent):
        site = Site(executor="local", worker=site, node=site.nodes[0])
    node = Node.objects.get(pk=site.node.pk)
    assert site.worker.process.poll() is None, site.worker.logs()[-2000:]
    job = site.run("echo still fine > $TRAINYARD_DATA_OUT/ok")
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "ok") == "still fine\n"
    if site.executor != "local":
        return
    wait_until(
        lambda: Node.objects.get(pk=node.pk).last_heartbeat > node.last_heartbeat,
        what="a heartbeat after the attack",
    )
    assert Node.objects.get(pk=node.pk).state == Node.State.READY


def host_postgres_socket() -> Path | None:
    port = connection.settings_dict.get("PORT") or 5432
    for folder in ("/var/run/postgresql", "/run/postgresql", "/tmp"):
        if (Path(folder) / f".s.PGSQL.{port}").exists():
            return Path(folder) / f".s.PGSQL.{port}"
    return None


@pytest.fixture
def root_secret():
    """A file only root may read in root's home, like a key or a token kept there."""
    path = Path("/root") / f".trainyard-test-secret-{os.getpid()}"
    path.write_text("root only\n")
    path.chmod(0o600)
    yield path
    path.unlink()


def lent_entries(folder: Path) -> set[str]:
    """What of ``folder`` the sandbox shows: only the way to the Python environment it lends."""
    return {
        Path(p).relative_to(folder).parts[0]
        for p in python_environment_paths()
        if Path(p).is_relative_to(folder)
    }


def test_job_cannot_read_the_platforms_settings_secrets_database_or_root(site, root_secret):
    secrets = [
        settings.BASE_DIR / "trainyard" / "settings.py",
        settings.BASE_DIR / "manage.py",
        settings.VAR_DIR / "dev-secret-key",
        root_secret,
    ]
    assert all(path.exists() for path in secrets)  # on the host: the attack has a target
    denied = [f"cat {path}" for path in secrets]
    denied += [
        f"ls {settings.BASE_DIR / 'trainyard'}",
        "ls /var/lib/postgresql",
        "python -c 'import trainyard.settings'",
        "cat /proc/1/environ",
    ]
    socket = host_postgres_socket()
    if socket:  # the database's own socket: trust authentication would let anyone in
        connect = f"psycopg.connect(host='{socket.parent}', user='postgres')"
        denied += [f"test -S {socket}", f'python -c "import psycopg; {connect}"']
    command = PROBE + probes(denied) + "env > $TRAINYARD_DATA_OUT/env\n"
    command += "ls -A /root > $TRAINYARD_DATA_OUT/root\n"
    command += f"ls -A {settings.BASE_DIR} > $TRAINYARD_DATA_OUT/base"
    job = site.run(command)
    assert job.state == Job.State.SUCCEEDED, job.state_reason

    assert output(job, "probes").splitlines() == outcomes("denied", denied)
    variables = dict(line.split("=", 1) for line in output(job, "env").splitlines() if "=" in line)
    assert not {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"} & set(
        variables
    )
    platform_values = {os.environ["DATABASE_URL"], os.environ["REDIS_URL"], settings.SECRET_KEY}
    assert not platform_values & set(variables.values())
    assert {n for n in variables if not n.startswith(("TRAINYARD_", "CUDA_"))} <= JOB_BASICS
    # Root's home and the checkout show only the way to the interpreter the sandbox lends.
    assert set(output(job, "root").split()) == lent_entries(Path("/root"))
    assert set(output(job, "base").split()) == lent_entries(settings.BASE_DIR)
    assert_platform_fine(site)


# A replica's variables besides TRAINYARD_* and CUDA_*: the agent's 4, then bash's own.
JOB_BASICS = {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "OLDPWD", "SHLVL", "_"}


def test_job_cannot_read_or_see_another_jobs_output_or_processes(site):
    neighbour = site.running("echo private > $TRAINYARD_DATA_OUT/mine\necho up\nsleep 60")
    neighbour_output = replica_output_dir(storage_name(site.node), neighbour.pk, 0)
    wait_until((neighbour_output / "mine").exists, what="the neighbour's file")
    denied = [
        f"cat {neighbour_output / 'mine'}",
        f"ls {neighbour_output.parent.parent}",
        f"ls {settings.TRAINYARD_NODE_ROOT}",
        f"cat {attempt_dir(storage_name(site.node), attempts_of(neighbour)[0].pk) / 'output.log'}",
        "cat /trainyard/output/../../jobs",
        "pgrep -f sleep",
        "pgrep -f celery",
        "pgrep -f slurm",
    ]
    job = site.run(PROBE + probes(denied))
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "probes").splitlines() == outcomes("denied", denied)
    assert Job.objects.get(pk=neighbour.pk).state == Job.State.RUNNING
    assert_platform_fine(site)


def test_job_cannot_write_outside_its_output_folder(site):
    targets = [
        settings.BASE_DIR / "planted",
        settings.TRAINYARD_NODE_ROOT / "planted",
        Path("/planted"),
        Path("/usr/planted"),
        Path("/etc/planted"),
        Path(settings.TRAINYARD_DATA_ROOT) / "planted",
        Path(python_environment_paths()[0]) / "planted",
    ]
    denied = [f"touch {path}" for path in targets]
    denied += [
        "touch /trainyard/planted",
        "touch /trainyard/code/planted",
        "touch /run/trainyard/planted",
        "cp /bin/true /run/trainyard/command.sh",
        "touch /sys/fs/cgroup/planted",
        "hostname evil",
        "mount -t tmpfs none /trainyard/output",
        "chmod 0777 /trainyard",
    ]
    # /tmp and /dev/shm are the job's own tmpfs mounts, gone with it.
    allowed = ["touch /trainyard/output/written", "touch /tmp/scratch", "touch /dev/shm/seg"]
    job = site.run(PROBE + probes(denied + allowed))
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    seen = output(job, "probes").splitlines()
    assert seen == outcomes("denied", denied) + outcomes("allowed", allowed)
    for path in targets:
        assert not path.exists(), path
    assert_platform_fine(site)


def test_job_cannot_signal_the_agent_its_supervisor_or_another_job(agent):
    neighbour = running(agent, "echo up\nsleep 60")
    (neighbour_attempt,) = attempts_of(neighbour)
    folder = attempt_dir(storage_name(agent.nodes[0]), neighbour_attempt.pk)
    started = json.loads((folder / "started.json").read_text())
    runner, group = started["runner_pid"], started["pgid"]
    # Suppose the job learned every pid that matters (its PID namespace hides them all).
    denied = [f"kill -TERM {pid}" for pid in (agent.process.pid, runner, group, 1)]
    denied += [f"kill -KILL -{group}", "pkill -TERM -f celery", "pkill -KILL -f runner.py"]
    denied += ["pkill -f sleep", "kill -TERM -1"]
    command = PROBE + probes(denied)
    # Everything its uid may signal: the job's own processes, never the caller itself.
    command += "sleep 30 & victim=$!\nkill -KILL -1\n"
    command += 'wait $victim; echo "victim $?" > $TRAINYARD_DATA_OUT/own'
    job = run(agent, command)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "probes").splitlines() == outcomes("denied", denied)
    assert output(job, "own") == "victim 137\n"  # kill -1 reached its own sleep

    for pid in (runner, group):
        os.kill(pid, 0)  # still there
    assert ReplicaAttempt.objects.get(pk=neighbour_attempt.pk).state == ReplicaAttempt.State.RUNNING
    assert_platform_fine(agent)


# After the bomb only bash builtins: the job's own forks fail too once it is at its limit.
# Counts the job's own processes (``[ -O ]``: owned by its uid; the sandbox's init is root's)
# with builtins only, as the bomb leaves no room to fork: at least 4 s, then until the count
# is near the limit (a loaded machine forks slowly) or 30 s have passed.
FORK_BOMB = """limit=$(ulimit -u); mkfifo /tmp/tick; exec 9<>/tmp/tick
count() { n=0; for p in /proc/[0-9]*; do [ -O "$p" ] && n=$((n+1)); done; }
bomb() { bomb | bomb & }; bomb
for ((i = 0; i < 150; i++)); do
  read -t 0.2 -u 9; count
  if ((i >= 20 && n >= limit - 16)); then break; fi
done
echo "$n" > $TRAINYARD_DATA_OUT/processes"""
# Forks (sleep) all through the bomb, and ends when the test says so.
NEIGHBOUR = """echo up
while [ ! -e $TRAINYARD_DATA_OUT/go ]; do sleep 0.2; echo tick >> $TRAINYARD_DATA_OUT/ticks; done"""


def test_fork_bomb_stops_at_the_process_limit_and_neighbours_run_on(site):
    neighbour = site.running(NEIGHBOUR)
    neighbour_output = replica_output_dir(storage_name(site.node), neighbour.pk, 0)
    job = site.run(FORK_BOMB, cpu_milli=1000)
    limit = process_limit(1000)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    # The job's uid is at its limit, and never past it.
    assert limit - 16 <= int(output(job, "processes")) <= limit
    log = attempt_log(attempts_of(job)[0])
    assert f"processes {limit}," in log
    assert "fork: retry: Resource temporarily unavailable" in log
    uid = (
        replica_output_dir(storage_name(site.node), job.pk, 0).stat().st_uid
    )  # the slot's, the job's
    assert uid != 0
    wait_until(lambda: not processes_of(uid), what="the bomb's processes to be gone", timeout=10)

    ticks = len(output(neighbour, "ticks").split())
    assert ticks >= 10  # it kept forking through the bomb (four seconds at least)
    (neighbour_output / "go").touch()
    neighbour = site.wait(neighbour, Job.FINAL_STATES)
    assert neighbour.state == Job.State.SUCCEEDED, neighbour.state_reason
    assert_platform_fine(site)


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except FileNotFoundError:
                continue
    return found


MEMORY_HOG = """python - <<'EOF'
import multiprocessing, sys, time
def hold(mib):
    block = bytearray(mib * 2**20)
    time.sleep(5)
# Five processes of 100 MiB: each under the limit alone, five times over it together.
children = [multiprocessing.Process(target=hold, args=(100,)) for _ in range(5)]
for child in children:
    child.start()
for child in children:
    child.join()
print("exit codes", [child.exitcode for child in children], flush=True)
sys.exit(1 if any(child.exitcode for child in children) else 0)
EOF"""


def test_memory_exhaustion_is_stopped_by_the_limit_and_the_job_fails_out_of_memory(agent):
    job = run(agent, MEMORY_HOG, memory_mib=256, max_retries=0)
    assert job.state == Job.State.FAILED
    assert job.state_reason.startswith("Exited with ")
    assert (
        "on replica 0, attempt 1; no retries left. Out of memory: the replica went over its "
        "memory limit of 0.25 GiB. Last lines of the log:"
    ) in job.state_reason
    log = attempt_log(attempts_of(job)[0])
    assert "memory limit 256 MiB (cgroup v" in log
    assert "exit codes" in log and "-9" in log  # the kernel killed at least one of them
    assert_platform_fine(agent)


def test_job_learns_no_host_path_from_its_sandbox(site):
    """Finding 2 began with /proc/1/cmdline: bwrap's argv named the host's output folder."""
    command = "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' > $TRAINYARD_DATA_OUT/cmdlines\n"
    # Nor from a file descriptor left open: only its standard streams (and bash's script).
    command += "ls /proc/$$/fd > $TRAINYARD_DATA_OUT/fds"
    job = site.run(command)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert str(settings.TRAINYARD_NODE_ROOT) not in output(job, "cmdlines")
    assert set(output(job, "fds").split()) <= {"0", "1", "2", "255"}
