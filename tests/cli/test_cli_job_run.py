"""A job's life through the command line: the live server, the scheduler and a real node agent."""

import json
import subprocess

import pytest

from jobs.models import Job
from tests.agent_support import make_node, wait_for_state
from tests.cli.conftest import write
from tests.factories import ImageFactory
from tests.support.waiting import wait_until
from tests.test_job_export import same_job

pytestmark = pytest.mark.integration

JOB = """\
project: vision
name: from-yaml
resources:
  kind: cpu
  cpu_cores: 1
command: |
  echo hello-from-the-cli
  sleep 1
  echo done-with-the-cli
"""


@pytest.fixture
def cpu_agent(agent_env, project):
    """One CPU node served by a real agent (worker, beat and scheduler passes)."""
    ImageFactory(project=project, name="pytorch", is_default=True)
    return agent_env([make_node("cpu-cli")])


def job_lines(text: str) -> list[str]:
    """The job's own lines; the agent adds its own, marked ``[trainyard]``."""
    return [line for line in text.splitlines() if not line.startswith("[trainyard] ")]


def submit(cli, *args) -> subprocess.CompletedProcess:
    return cli("submit", write(cli, "job.yaml", JOB), *args)


def test_submit_follow_logs_and_export_round_trip(server_cli, cpu_agent):
    followed = submit(server_cli, "--follow")
    assert followed.returncode == 0, followed.stderr + cpu_agent.logs()[-3000:]
    assert job_lines(followed.stdout) == ["hello-from-the-cli", "done-with-the-cli"]
    job = Job.objects.get(name="from-yaml")
    assert job.state == Job.State.SUCCEEDED
    # State changes on standard error, as they happened.
    assert f"Submitted job {job.pk} (from-yaml)" in followed.stderr
    for change in ("new → quota_wait", "→ running", "running → succeeded"):
        assert change in followed.stderr, followed.stderr

    logs = server_cli("logs", str(job.pk))
    assert logs.returncode == 0
    assert logs.stdout.splitlines() == followed.stdout.splitlines()
    assert "succeeded" in server_cli("show", str(job.pk)).stdout

    exported = server_cli("export", str(job.pk))
    assert exported.returncode == 0
    assert exported.stdout.startswith("project: vision\nname: from-yaml\n")
    assert "command: |-\n  echo hello-from-the-cli\n" in exported.stdout
    again = server_cli("submit", "-", "--json", input=exported.stdout)  # `-`: standard input
    assert again.returncode == 0, again.stderr
    copy = Job.objects.get(pk=json.loads(again.stdout)["id"])
    assert copy.pk != job.pk
    assert same_job(job, copy) == {}


def test_a_failing_job_exits_non_zero(server_cli, cpu_agent):
    result = submit(server_cli, "--follow", "--set", "command=echo about-to-fail; exit 3")
    assert result.returncode == 4, result.stderr
    assert job_lines(result.stdout) == ["about-to-fail"]
    assert "running → failed" in result.stderr


def test_stop_a_running_job_while_following_its_log(server_cli, cpu_agent):
    submitted = submit(server_cli, "--set", "command=echo started; sleep 300", "--json")
    job = Job.objects.get(pk=json.loads(submitted.stdout)["id"])
    follower = server_cli.popen("logs", str(job.pk), "-f")
    try:
        wait_for_state(job, Job.State.RUNNING, cpu_agent)
        wait_until(lambda: "started" in server_cli("logs", str(job.pk)).stdout, what="log")
        stopped = server_cli("stop", str(job.pk))
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith(f"Job {job.pk}: ") and "(stop requested)" in stopped.stdout
        out, err = follower.communicate(timeout=60)
    finally:
        follower.kill()
    assert follower.returncode == 5, err
    assert job_lines(out)[0] == "started"
    assert Job.objects.get(pk=job.pk).state == Job.State.STOPPED
