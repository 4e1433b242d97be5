"""The sandbox: an unprivileged uid that cannot see the platform's secrets or other jobs."""

import pytest
from django.conf import settings
from django.urls import reverse

from jobs.models import Job, JobDataset
from resources.models import Node
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, place, wait_for_state
from tests.factories import DatasetFactory

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
    assert uid == settings.TRAINYARD_SANDBOX_UID_BASE + job.pk
    assert int(output_of(job, node, "tmp_size")) == 3 * 1024**3
    assert int(output_of(job, node, "shm_size")) == 3 * 1024**3
    (attempt,) = attempts_of(job)
    assert "bubblewrap sandbox" in attempt_log(attempt)
    assert Node.objects.get(pk=node.pk).sandboxed is True


def test_without_bwrap_replicas_run_plainly_as_an_unprivileged_user(agent_env, admin_client_):
    node = make_node()
    agent = agent_env([node], env={"TRAINYARD_SANDBOX": "off"})
    command = "id -u > $TRAINYARD_DATA_OUT/uid\nls $TRAINYARD_DATA_OUT > /dev/null\npwd"
    job = wait_for_state(place(cpu_job(command), [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert int(output_of(job, node, "uid")) == settings.TRAINYARD_SANDBOX_UID_BASE + job.pk
    (attempt,) = attempts_of(job)
    assert "plain process (no bwrap)" in attempt_log(attempt)
    assert Node.objects.get(pk=node.pk).sandboxed is False

    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    assert "ubblewrap (bwrap) is not installed on this node" in page.content.decode()


def test_node_admin_page_has_no_warning_where_the_sandbox_runs(admin_client_):
    node = make_node(sandboxed=True)
    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    assert page.status_code == 200
    assert "bwrap) is not installed" not in page.content.decode()
