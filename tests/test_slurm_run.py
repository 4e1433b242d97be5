"""Jobs on a real Slurm: one card, two nodes with torch.distributed, and their environment."""

import json

import pytest
from django.conf import settings

from jobs.environment import environment_input_for_job, job_environment
from jobs.execution.files import replica_output_dir, storage_name
from jobs.execution.replica.folder import AttemptFolder
from jobs.execution.replica.network import reachable_address
from jobs.models import Job, ReplicaAttempt
from resources.models import Node
from tests.agent_support import attempt_log, attempts_of, place, wait_for_state
from tests.conftest import database_url_for_subprocess
from tests.factories import JobFactory, UserFactory
from tests.support.waiting import wait_until
from tests.test_agent_distributed import all_reduce_job, sums

pytestmark = pytest.mark.integration
SHOW_ENV = 'env -0 > "$TRAINYARD_DATA_OUT/env.bin"'
WAIT = 90
BASH_OWN = {"PWD", "OLDPWD", "SHLVL", "_"}


def gpu_job(command: str, **fields) -> Job:
    fields.setdefault("owner", UserFactory(username="slurm-user"))
    fields.setdefault("gpu_count", 1)
    return JobFactory(command=command, cpu_milli=2000, memory_mib=2048, **fields)


def replica_env(job: Job, node, index: int = 0) -> dict[str, str]:
    raw = (replica_output_dir(storage_name(node), job.pk, index) / "env.bin").read_bytes().decode()
    return dict(item.split("=", 1) for item in raw.split("\0") if item)


def test_one_card_job_runs_as_a_pinned_slurm_job_with_the_local_environment(slurm):
    node = slurm.nodes[2]
    job = place(gpu_job(SHOW_ENV, max_runtime_minutes=30), [node], cards=[[0]])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason

    [attempt] = attempts_of(job)
    assert attempt.state == ReplicaAttempt.State.SUCCEEDED and attempt.exit_code == 0
    assert attempt.started_at <= attempt.ended_at
    assert f"Slurm job {attempt.external_id} ended COMPLETED" in attempt.reason
    assert f"on Slurm node {node.name} (Slurm job {attempt.external_id})" in attempt_log(attempt)

    slurm_job = slurm.jobs()[attempt.external_id]
    assert slurm_job.name == f"{slurm.prefix}-j{job.pk}-r0-a1"
    assert slurm_job.nodes == node.name
    detail = slurm.cluster.scontrol("show", "job", attempt.external_id)
    for expected in ["NumCPUs=2", "mem=2G", "TresPerNode=gres:gpu:v100:1", "TimeLimit=00:30:00"]:
        assert expected in detail, detail
    assert "Partition=trainyard" in detail

    env = replica_env(job, node)
    expected = job_environment(environment_input_for_job(job))
    # The same names as the local executor gives, plus the four basics it sets too
    # (and what bash itself sets while running the command script).
    assert set(env) - BASH_OWN == set(expected) | {"PATH", "HOME", "TMPDIR", "LANG"}
    assert env["TRAINYARD_JOB_ID"] == str(job.pk)
    assert env["TRAINYARD_REPLICA"] == "0" and env["TRAINYARD_ATTEMPT"] == "1"
    assert len(env["CUDA_VISIBLE_DEVICES"].split(",")) == 1  # Slurm's choice of card
    assert int(env["TRAINYARD_DEADLINE"]) > attempt.started_at.timestamp()
    # In the sandbox, as on the local agent: the output is mounted, the host path unseen.
    assert env["TRAINYARD_DATA_OUT"] == "/trainyard/output"
    assert env["HOME"] == env["TMPDIR"] == "/tmp"


def test_two_node_job_starts_both_replicas_in_one_slurm_job_and_all_reduces(slurm):
    nodes = slurm.nodes[:2]
    job = all_reduce_job()
    Job.objects.filter(pk=job.pk).update(
        resource_kind="gpu", gpu_model=slurm.nodes[0].gpu_model, gpu_count=2, memory_mib=4096
    )
    job.refresh_from_db()
    job = place(job, nodes, cards=[[0, 1], [2, 3]])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]

    attempts = attempts_of(job)
    assert len({a.external_id for a in attempts}) == 1  # one gang, one Slurm job
    assert [a.node.name for a in attempts] == [n.name for n in nodes]
    slurm_job = slurm.jobs()[attempts[0].external_id]
    assert slurm_job.name == f"{slurm.prefix}-j{job.pk}-r0-1-a1"
    assert slurm.cluster.scontrol("show", "hostnames", slurm_job.nodes).split() == [
        n.name for n in nodes
    ]
    detail = slurm.cluster.scontrol("show", "job", attempts[0].external_id)
    assert "NumNodes=2" in detail and "TresPerNode=gres:gpu:v100:2" in detail, detail


def test_rendezvous_variables_are_set_per_node(slurm):
    nodes = slurm.nodes[1:3]
    placed = place(gpu_job(SHOW_ENV, task_mode="distributed", replicas=2), nodes)
    job = wait_for_state(placed, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    first, second = replica_env(job, nodes[0], 0), replica_env(job, nodes[1], 1)
    for rank, env in enumerate([first, second]):
        assert env["RANK"] == env["NODE_RANK"] == env["TRAINYARD_REPLICA"] == str(rank)
        assert env["WORLD_SIZE"] == env["NNODES"] == "2"
        assert env["LOCAL_WORLD_SIZE"] == "1"
    # Each replica has a network of its own: a loopback node address is the job bridge's.
    assert first["MASTER_ADDR"] == second["MASTER_ADDR"] == reachable_address(nodes[0].address)
    assert first["GLOO_SOCKET_IFNAME"] == second["GLOO_SOCKET_IFNAME"] == "eth0"
    assert first["MASTER_PORT"] == second["MASTER_PORT"] == str(placed.placed_ports[0, None])


def test_no_platform_secret_reaches_the_slurm_job(slurm):
    slurm.worker.stop()
    slurm.worker.extra_env["SECRET_KEY"] = "sk-do-not-leak-1234"
    slurm.worker.start()
    secrets = ["sk-do-not-leak-1234", database_url_for_subprocess()]
    secrets += [settings.REDIS_URL] if settings.REDIS_URL else []
    node = slurm.nodes[0]
    job = place(gpu_job(SHOW_ENV), [node])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason

    env = replica_env(job, node)
    assert not {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"} & set(env)
    [attempt] = attempts_of(job)
    folder = AttemptFolder.of(attempt).path
    plan = json.loads((folder / "slurm-submit.json").read_text())
    assert not {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} & set(plan["env"])
    # Nothing Slurm ran or wrote for the job holds a secret: scripts, plan, log, environment.
    written = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    written += "\0".join(f"{k}={v}" for k, v in env.items()).encode()
    for secret in secrets:
        assert secret.encode() not in written


def test_a_slurm_node_that_cannot_isolate_runs_no_job(slurm):
    """No sandbox, no job, on Slurm as on the local agent: the node refuses and goes down."""
    slurm.worker.stop()
    slurm.worker.extra_env["TRAINYARD_SANDBOX"] = "off"
    slurm.worker.start()
    node = slurm.nodes[0]
    job = place(gpu_job('touch "$TRAINYARD_DATA_OUT/ran"'), [node])
    wait_until(
        lambda: attempts_of(job)[0].state in ReplicaAttempt.FINAL_STATES,
        what="the first attempt's end",
        logs=slurm.worker.logs,
        timeout=WAIT,
    )

    attempt = attempts_of(job)[0]
    assert attempt.state == ReplicaAttempt.State.FAILED
    assert attempt.platform_fault  # the node's fault: not billed, the job is placed again
    assert f"Node {node.name} cannot isolate jobs: the sandbox is turned off" in attempt.reason
    assert not (replica_output_dir(storage_name(node), job.pk, 0) / "ran").exists()
    node = Node.objects.get(pk=node.pk)
    assert node.state == Node.State.DOWN
    assert node.state_reason.startswith("Cannot isolate jobs: the sandbox is turned off")
