"""Listings and checks against a live server: tables for people, the API's JSON with --json."""

import json

import pytest

from jobs.services.submit import job_submit
from tests.cli.conftest import write
from tests.factories import JobFactory, UserFactory
from tests.job_site import build_site, job_body


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


JOB = """\
project: vision
name: feasible
resources:
  kind: gpu
  gpu_model: V100
  gpu_count: 1
command: python train.py
"""


def test_check_says_feasible_or_why_not(server_cli, site):
    path = write(server_cli, "job.yaml", JOB)
    fits = server_cli("check", path)
    assert fits.returncode == 0, fits.stderr
    assert fits.stdout.startswith("Feasible")
    too_big = server_cli("check", path, "--set", "resources.gpu_count=9", "--json")
    assert too_big.returncode == 1
    answer = json.loads(too_big.stdout)
    assert answer["feasible"] is False and answer["reasons"]
    text = server_cli("check", path, "--set", "resources.gpu_count=9")
    assert text.stdout.splitlines()[0] == "Not feasible:"
    assert f"  {answer['reasons'][0]}" in text.stdout.splitlines()


def test_jobs_and_show(server_cli, site, owner):
    job = job_submit(user=owner, data=job_body(name="listed"))
    table = server_cli("jobs")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "PROJECT", "OWNER", "STATE", "RESOURCES", "SUBMITTED"]
    assert row.split()[:5] == [str(job.pk), "listed", "vision", "owner", job.state]
    assert "1×V100" in row
    page = json.loads(server_cli("jobs", "--json", "--state", job.state).stdout)
    assert (page["count"], page["items"][0]["id"]) == (1, job.pk)
    assert json.loads(server_cli("jobs", "--json", "--state", "running").stdout)["count"] == 0

    shown = server_cli("show", str(job.pk))
    assert f"Job:               {job.pk} listed" in shown.stdout
    assert "Command:\n  python train.py" in shown.stdout
    assert "new → quota_wait" in shown.stdout  # its events
    assert json.loads(server_cli("show", str(job.pk), "--json").stdout)["name"] == "listed"
    waiting = server_cli("logs", str(job.pk))
    assert waiting.returncode == 1
    assert f"job {job.pk} has no log for replica 0 yet" in waiting.stderr


def test_free_shows_models_cpu_and_quota(server_cli, site):
    text = server_cli("free")
    assert text.returncode == 0, text.stderr
    assert any(line.split()[:2] == ["V100", "16/16"] for line in text.stdout.splitlines())
    assert "Your quota:" in text.stdout
    refreshed = json.loads(server_cli("free", "--refresh", "--json").stdout)
    assert {m["name"] for m in refreshed["gpu_models"]} >= {"V100", "P4", "*V100"}


def test_bill_for_a_month(server_cli, site):
    text = server_cli("bill", "--month", "2025-01")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Statement of owner for 2025-01")
    assert "No usage." in text.stdout
    answer = json.loads(server_cli("bill", "--month", "2025-01", "--json").stdout)
    assert answer["lines"] == [] and answer["account"] == "owner"
    wrong = server_cli("bill", "--month", "January")
    assert wrong.returncode == 1
    assert "  month: Give the month as YYYY-MM" in wrong.stderr


def test_staff_list_every_job_with_all(server_cli, site, owner):
    """Issue 18, point 5: what GET /api/v1/jobs?all=1 gives staff, on the command line."""
    someone = UserFactory(username="alice")
    theirs = JobFactory(owner=someone, name="alices")
    assert "alices" not in server_cli("jobs").stdout
    refused = server_cli("jobs", "--all")
    assert refused.returncode != 0 and "only staff may list every job" in refused.stderr
    owner.is_staff = True
    owner.save(update_fields=["is_staff"])
    every = json.loads(server_cli("jobs", "--all", "--json").stdout)
    assert theirs.pk in [job["id"] for job in every["items"]]


def test_show_says_where_to_connect(server_cli, settings, tmp_path, project, owner):
    from tests.running_job import running_job

    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    job = running_job(owner=owner, project=project).job
    shown = server_cli("show", str(job.pk))
    assert shown.returncode == 0, shown.stderr
    assert "Connect:" in shown.stdout
    assert "  8080 → 10.0.0.5:40123 (replica 0 on gpu-a)" in shown.stdout
    assert f"in a browser: http://j{job.pk}-8080.jobs.localhost:8080/" in shown.stdout
