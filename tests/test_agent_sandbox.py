"""The sandbox: an unprivileged uid that cannot see the platform's secrets or other jobs."""

import json

import pytest
from django.conf import settings
from django.urls import reverse

from jobs.execution.files import attempt_dir
from jobs.models import Job, JobDataset
from resources.models import Node
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, place, wait_for_state
from tests.factories import DatasetFactory
from tests.support.waiting import wait_until
from tests.test_hostile_jobs import processes_of

pytestmark = pytest.mark.integration

PROBE = (
    'probe() { if "$@" > /dev/null 2>&1; then echo "allowed: $*"; else echo "denied: $*"; fi; }\n'
)


def output_of(job: Job, node: Node, name: str) -> str:
    folder = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk) / "replica-0/output"
    return (folder / name).read_text()


def test_sandbox_hides_the_platform_and_other_jobs(agent):
    node = agent.nodes[0]
    neighbour = place(cpu_job("echo private > $TRAINYARD_DATA_OUT/mine"), [node])
    wait_for_state(neighbour, Job.State.SUCCEEDED, agent)
    neighbour_output = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(neighbour.pk)
    dataset = DatasetFactory()
    (settings.TRAINYARD_DATA_ROOT / dataset.path).mkdir(parents=True)
    denied = [
        f"cat {settings.VAR_DIR / 'dev-secret-key'}",
        f"cat {settings.DATABASES['default']['NAME']}",
        f"ls {settings.BASE_DIR / 'var'}",
        f"ls {settings.BASE_DIR / 'trainyard'}",
        "ls /var/lib/postgresql",
        f"ls {settings.TRAINYARD_NODE_ROOT}",
        f"cat {neighbour_output}/replica-0/output/mine",
        "touch /usr/bin/planted",
        "touch /trainyard/data-1/planted",
        "pgrep -f celery",
    ]
    allowed = ["touch /trainyard/output/written", "touch /tmp/scratch", "touch /dev/shm/seg"]
    probes = "".join(f"probe {p} >> $TRAINYARD_DATA_OUT/probes\n" for p in denied + allowed)
    command = PROBE + probes + "id -u > $TRAINYARD_DATA_OUT/uid\n"
    command += "df -B1 --output=size /tmp | tail -1 > $TRAINYARD_DATA_OUT/tmp_size\n"
    command += "df -B1 --output=size /dev/shm | tail -1 > $TRAINYARD_DATA_OUT/shm_size"
    job = cpu_job(command, storage_gib=3)
    JobDataset.objects.create(job=job, dataset=dataset, position=1)
    job = wait_for_state(place(job, [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason

    probes_seen = output_of(job, node, "probes").splitlines()
    assert probes_seen == [f"denied: {p}" for p in denied] + [f"allowed: {p}" for p in allowed]
    uid = int(output_of(job, node, "uid"))
    base = settings.TRAINYARD_SANDBOX_UID_BASE
    assert base <= uid < base + settings.TRAINYARD_SANDBOX_UID_COUNT
    assert int(output_of(job, node, "tmp_size")) == 3 * 1024**3
    assert int(output_of(job, node, "shm_size")) == 3 * 1024**3
    (attempt,) = attempts_of(job)
    assert "bubblewrap sandbox" in attempt_log(attempt)
    assert Node.objects.get(pk=node.pk).sandboxed is True


def test_without_the_sandbox_no_replica_starts_and_the_node_says_why(agent_env, admin_client_):
    """No sandbox, no job: the command never runs, and nothing is placed there again."""
    node = make_node()
    agent = agent_env([node], env={"TRAINYARD_SANDBOX": "off"})
    wait_until(
        lambda: Node.objects.get(pk=node.pk).state == Node.State.DOWN, what="the node to go down"
    )
    node = Node.objects.get(pk=node.pk)
    assert node.sandboxed is False
    assert node.state_reason.startswith("Cannot isolate jobs: the sandbox is turned off")
    job = place(cpu_job("touch $TRAINYARD_DATA_OUT/ran"), [node])
    job = wait_for_state(job, [Job.State.RESOURCE_WAIT, *Job.FINAL_STATES], agent)
    (attempt,) = attempts_of(job)
    assert "cannot isolate jobs" in attempt.reason
    assert "manage.py job_network install" in attempt.reason
    assert not (settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk)).exists()

    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    assert "cannot isolate jobs on this node" in page.content.decode()


def test_unsafe_plain_processes_run_when_asked_and_say_so(agent_env, client):
    node = make_node()
    env = {"TRAINYARD_SANDBOX": "off", "TRAINYARD_UNSAFE_PLAIN_PROCESSES": "1"}
    agent = agent_env([node], env=env)
    command = "id -u > $TRAINYARD_DATA_OUT/uid\nls $TRAINYARD_DATA_OUT > /dev/null\npwd"
    command += "\ncd $TRAINYARD_CHECKPOINT && echo kept > state && cp state $TRAINYARD_DATA_OUT"
    job = wait_for_state(place(cpu_job(command), [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output_of(job, node, "state") == "kept\n"  # the checkpoint, as the job's own uid
    base = settings.TRAINYARD_SANDBOX_UID_BASE
    assert base <= int(output_of(job, node, "uid")) < base + settings.TRAINYARD_SANDBOX_UID_COUNT
    (attempt,) = attempts_of(job)
    assert "UNSAFE: plain process" in attempt_log(attempt)
    assert Node.objects.get(pk=node.pk).sandboxed is False


def test_no_two_live_replicas_on_a_host_share_a_uid(agent, transactional_db):
    """Job ids a multiple of the uid range apart (two installs, or a wrapped id)."""
    first = cpu_job("id -u > $TRAINYARD_DATA_OUT/uid\nsleep 20")
    second = cpu_job(
        "id -u > $TRAINYARD_DATA_OUT/uid\nsleep 20",
        id=first.pk + settings.TRAINYARD_SANDBOX_UID_COUNT,
    )
    node = agent.nodes[0]
    for job in (first, second):
        place(job, [node])
    for job in (first, second):
        wait_for_state(job, Job.State.RUNNING, agent)
        wait_until(lambda job=job: _has_output(job, node, "uid"), what="the job's uid")
    assert output_of(first, node, "uid") != output_of(second, node, "uid")


def _has_output(job: Job, node: Node, name: str) -> bool:
    try:
        return bool(output_of(job, node, name))
    except FileNotFoundError:
        return False


def test_node_admin_page_has_no_warning_where_the_sandbox_runs(admin_client_):
    node = make_node(sandboxed=True)
    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    assert page.status_code == 200
    assert "bwrap) is not installed" not in page.content.decode()


def test_a_job_on_an_unisolated_node_says_unsafe_on_its_page(owner_client, owner, project):
    node = make_node(sandboxed=False)
    job = cpu_job("true", owner=owner, project=project)
    from jobs.models import Replica

    Replica.objects.create(job=job, index=0, node=node)
    page = owner_client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "UNSAFE: this job runs on a node without the sandbox" in page


def test_a_plain_process_that_leaves_its_group_dies_with_its_job(agent_env):
    """Without bwrap's PID namespace, a setsid child ignoring TERM outlived its job."""
    node = make_node()
    env = {"TRAINYARD_SANDBOX": "off", "TRAINYARD_UNSAFE_PLAIN_PROCESSES": "1"}
    agent = agent_env([node], env=env)
    command = "setsid bash -c \"trap '' TERM; exec sleep 300\" &\n"
    command += "echo $! > $TRAINYARD_DATA_OUT/escapee\nsleep 300"
    job = place(cpu_job(command), [node])
    wait_for_state(job, Job.State.RUNNING, agent)
    wait_until(lambda: _has_output(job, node, "escapee"), what="the escapee's pid")
    from jobs.services.stop import job_stop

    job_stop(job=Job.objects.get(pk=job.pk), actor=job.owner)
    wait_for_state(job, Job.State.STOPPED, agent)
    uid = json.loads((attempt_dir(node.name, attempts_of(job)[0].pk) / "spec.json").read_text())[
        "uid"
    ]
    wait_until(lambda: not processes_of(uid), what="every process of the job gone", timeout=15)
