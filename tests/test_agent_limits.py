"""Memory is limited to the request; CPUs are pinned where the node's cores exist here."""

import os

import pytest
from django.conf import settings

from jobs.execution.replica.limits import choose_cpus
from jobs.models import Job
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, place, wait_for_state

pytestmark = pytest.mark.integration

ALLOCATE = 'python -c "bytearray({mib} * 2**20)"'


def output(job: Job, node, name: str) -> str:
    root = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk) / "replica-0/output"
    return (root / name).read_text()


def test_replica_cannot_use_more_memory_than_it_asked_for(agent):
    command = "\n".join([ALLOCATE.format(mib=64), "echo small fits", ALLOCATE.format(mib=1024)])
    job = place(cpu_job(command, memory_mib=512), agent.nodes)
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.FAILED
    assert "Out of memory: the replica went over its memory limit of 0.5 GiB." in job.state_reason
    log = attempt_log(attempts_of(job)[0])
    assert "small fits" in log and "exit code 137" in log
    # A memory cgroup (v2, or v1 where the host mounts that): the whole replica, not each process.
    assert "memory limit 512 MiB (cgroup v" in log


def test_replica_is_pinned_to_its_cores_where_the_node_has_them(agent_env):
    small = make_node(cpu_milli=len(os.sched_getaffinity(0)) * 1000)  # this host's cores
    demo = make_node(cpu_milli=1000 * 1000)  # more cores than any test machine has
    agent = agent_env([small, demo])
    report = "grep Cpus_allowed_list /proc/self/status | cut -f2 > $TRAINYARD_DATA_OUT/cpus"
    pinned = place(cpu_job(report, cpu_milli=1000), [small])
    loose = place(cpu_job(report, cpu_milli=1000), [demo])
    for job in (pinned, loose):
        assert wait_for_state(job, Job.FINAL_STATES, agent).state == Job.State.SUCCEEDED
    assert output(pinned, small, "cpus").strip() == str(min(os.sched_getaffinity(0)))
    host = sorted(os.sched_getaffinity(0))
    expected = f"{host[0]}-{host[-1]}" if len(host) > 1 else str(host[0])
    assert output(loose, demo, "cpus").strip() == expected


def test_cores_already_given_to_a_running_replica_are_not_given_again():
    cores = sorted(os.sched_getaffinity(0))
    node_milli = len(cores) * 1000
    assert choose_cpus(node_cpu_milli=node_milli, request_milli=1000, taken=set()) == cores[:1]
    if len(cores) > 1:
        taken = {cores[0]}
        assert choose_cpus(node_cpu_milli=node_milli, request_milli=1000, taken=taken) == [cores[1]]
    everything = set(cores)
    assert choose_cpus(node_cpu_milli=node_milli, request_milli=1000, taken=everything) is None
