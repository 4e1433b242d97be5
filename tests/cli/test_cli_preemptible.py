"""A job file's ``preemptible: true`` reaches the API; show and jobs say when a job borrows."""

import json

import pytest

from jobs.models import Job
from resources.models import Quota
from tests.cli.conftest import write
from tests.job_site import build_site

JOB = """\
project: vision
name: spare-cards
resources:
  kind: gpu
  gpu_model: V100
  gpu_count: 1
preemptible: true
command: python train.py
"""


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def submitted(cli, *args) -> dict:
    result = cli("submit", write(cli, "job.yaml", JOB), "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_yaml_field_makes_a_preemptible_job_and_export_keeps_it(server_cli, site):
    answer = submitted(server_cli)
    assert (answer["preemptible"], answer["borrowed"]) == (True, False)
    assert Job.objects.get(pk=answer["id"]).preemptible is True
    shown = server_cli("show", str(answer["id"])).stdout.splitlines()
    assert any(line.split() == ["Preemptible:", "yes"] for line in shown), shown
    assert not any(line.startswith("Borrowing:") for line in shown)
    assert "\npreemptible: true\n" in server_cli("export", str(answer["id"])).stdout


def test_check_counts_what_a_preemptible_job_may_borrow(server_cli, site, owner):
    Quota.objects.create(
        user=owner, resource=Quota.Resource.GPU, gpu_model=site.v100, limit=1, borrow_limit=4
    )
    path = write(server_cli, "job.yaml", JOB)
    assert server_cli("check", path, "--set", "resources.gpu_count=2").returncode == 0
    refused = server_cli(
        "check", path, "--set", "resources.gpu_count=2", "--set", "preemptible=false"
    )
    assert refused.returncode == 1 and refused.stdout.startswith("Not feasible:")


def test_set_overrides_it_like_any_field(server_cli, site):
    answer = submitted(server_cli, "--set", "preemptible=false")
    assert Job.objects.get(pk=answer["id"]).preemptible is False


def test_a_borrowing_job_is_marked_in_show_and_jobs(server_cli, site):
    job_id = submitted(server_cli)["id"]
    Job.objects.filter(pk=job_id).update(state=Job.State.RUNNING, borrowed=True, attempt=1)
    shown = server_cli("show", str(job_id)).stdout
    assert "Borrowing:" in shown and "may be preempted" in shown
    [row] = server_cli("jobs").stdout.splitlines()[1:]
    assert "running (borrowing)" in row


def test_a_value_that_is_not_true_or_false_is_refused_naming_the_field(server_cli, site):
    result = server_cli("submit", write(server_cli, "job.yaml", JOB), "--set", "preemptible=maybe")
    assert result.returncode == 1, result
    assert any(line.startswith("  preemptible: ") for line in result.stderr.splitlines())
    assert not Job.objects.exists()
