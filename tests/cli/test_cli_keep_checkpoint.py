"""A job file's ``keep_checkpoint: true`` reaches the API; show says whether it is kept."""

import json

import pytest

from jobs.models import Job
from tests.cli.conftest import write
from tests.job_site import build_site

JOB = """\
project: vision
name: kept
resources:
  kind: gpu
  gpu_model: V100
  gpu_count: 1
keep_checkpoint: true
command: python train.py
"""


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def submitted(cli, *args) -> dict:
    result = cli("submit", write(cli, "job.yaml", JOB), "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def shown(cli, job_id: int) -> list[str]:
    return [line.split(None, 1) for line in cli("show", str(job_id)).stdout.splitlines()]


def test_the_yaml_field_keeps_the_checkpoint_and_show_and_export_say_so(server_cli, site):
    answer = submitted(server_cli)
    assert answer["keep_checkpoint"] is True
    assert Job.objects.get(pk=answer["id"]).keep_checkpoint is True
    assert ["Checkpoint:", "kept as an output once the job has ended"] in shown(
        server_cli, answer["id"]
    )
    assert "\nkeep_checkpoint: true\n" in server_cli("export", str(answer["id"])).stdout


def test_set_overrides_it_and_show_says_it_is_removed(server_cli, site):
    answer = submitted(server_cli, "--set", "keep_checkpoint=false")
    assert Job.objects.get(pk=answer["id"]).keep_checkpoint is False
    assert ["Checkpoint:", "removed once the job has ended"] in shown(server_cli, answer["id"])


def test_a_value_that_is_not_true_or_false_is_refused_naming_the_field(server_cli, site):
    job_file = write(server_cli, "job.yaml", JOB)
    result = server_cli("submit", job_file, "--set", "keep_checkpoint=maybe")
    assert result.returncode == 1, result
    assert "  keep_checkpoint: Keep the checkpoint must be true or false; you gave maybe" in (
        result.stderr.splitlines()
    )
    chinese = server_cli(
        "submit", job_file, "--set", "keep_checkpoint=maybe", env={"LANG": "zh_CN.UTF-8"}
    )
    assert "  keep_checkpoint: 保留检查点须为 true 或 false；您填写了 maybe" in (
        chinese.stderr.splitlines()
    )
    assert not Job.objects.exists()
