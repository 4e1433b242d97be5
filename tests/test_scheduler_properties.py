"""The scheduler's invariants under random histories (hypothesis, stateful).

A small cluster where jobs contend: random submissions through ``job_submit``
(whole cards, vGPU shares, distributed gangs, CPU jobs, with and without max
run times and ports), stops, runs and ends, nodes drained, downed and readied
again, preemptible jobs that borrow and are preempted, and scheduling passes in any
order. After every step nothing is over-committed (per node, per card, per quota for
work that does not borrow), a distributed job holds all its replicas on distinct nodes
or none, a pass starts jobs on ready nodes only, only preemptible jobs borrow, and a
job is preempted only for one that does not borrow (no cycles).
"""

from __future__ import annotations

import contextlib

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from billing.accounts import account_for_user
from jobs.models import Job
from jobs.scheduler import run_pass
from jobs.services.stop import job_stop
from jobs.services.submit import job_submit
from resources.models import Allocation, Node, Quota
from resources.services import node_set_state
from tests.factories import GpuModelFactory, NodeFactory, ProjectFactory, UserFactory
from tests.scheduling import (
    assert_borrowing_invariants,
    assert_invariants,
    end_job,
    replicas_end,
    run_job,
)

GIB = 1024
GPU_JOB = st.fixed_dictionaries(
    {"kind": st.just("gpu"), "gpu_model": st.just("V100"), "gpu_count": st.integers(1, 2)}
)
VGPU_JOB = st.fixed_dictionaries(
    {
        "kind": st.just("vgpu"),
        "gpu_model": st.just("V100"),
        "gpu_count": st.integers(1, 2),
        "vgpu_compute_percent": st.sampled_from([10, 30, 50, 70, 100]),
    }
)
P4_JOB = st.fixed_dictionaries(
    {"kind": st.just("gpu"), "gpu_model": st.just("P4"), "gpu_count": st.integers(1, 2)}
)
CPU_JOB = st.fixed_dictionaries({"kind": st.just("cpu"), "cpu_cores": st.integers(1, 16)})
# (user, resources, replicas, max run time, with a port, preemptible)
REQUEST = st.tuples(
    st.integers(0, 1),
    st.one_of(GPU_JOB, VGPU_JOB, P4_JOB, CPU_JOB),
    st.sampled_from([1, 1, 2, 3]),
    st.sampled_from([None, 30, 240]),
    st.booleans(),
    st.booleans(),
)


@seed(20_260_101)  # one varied, repeatable set of histories (CI time is bounded)
class Cluster(RuleBasedStateMachine):
    """Three 2×V100 nodes, one 2×P4, one 32-core CPU node; two users, quotas on some."""

    def __init__(self) -> None:
        super().__init__()
        # Each history runs in a savepoint rolled back at its end: the next starts clean.
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        v100 = GpuModelFactory(name="V100")
        p4 = GpuModelFactory(name="P4", card_memory_gib=8, memory_gib_per_card=40, free_tier=True)
        self.nodes = [
            NodeFactory(
                name=f"v100-{i}",
                gpu_model=v100,
                gpu_count=2,
                cpu_milli=24_000,
                memory_mib=112 * GIB,
            )
            for i in range(3)
        ]
        self.nodes.append(
            NodeFactory(
                name="p4-0", gpu_model=p4, gpu_count=2, cpu_milli=24_000, memory_mib=80 * GIB
            )
        )
        self.nodes.append(
            NodeFactory(
                name="cpu-0", gpu_model=None, gpu_count=0, cpu_milli=32_000, memory_mib=128 * GIB
            )
        )
        self.users = [UserFactory(username="ada"), UserFactory(username="bob")]
        for user in self.users:
            account = account_for_user(user=user)
            account.billing_enabled = True
            account.save(update_fields=["billing_enabled"])
            ProjectFactory(name=f"p-{user.username}", owner=user)
        ada, bob = self.users
        Quota.objects.create(user=ada, resource=Quota.Resource.GPU, gpu_model=v100, limit=2)
        Quota.objects.create(
            user=ada, resource=Quota.Resource.VGPU_COMPUTE, gpu_model=v100, limit=250
        )
        Quota.objects.create(user=bob, resource=Quota.Resource.CPU, limit=24_000)
        Quota.objects.create(user=bob, resource=Quota.Resource.MEMORY, limit=96 * GIB)
        self.jobs: list[int] = []

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.atomic.__exit__(None, None, None)

    @initialize(requests=st.lists(REQUEST, min_size=3, max_size=8))
    def fill_the_queues(self, requests):
        for request in requests:
            self.submit(*request)

    @rule(request=REQUEST)
    def submit_one(self, request):
        self.submit(*request)

    def submit(self, user, resources, replicas, max_runtime, port, preemptible):
        owner = self.users[user]
        body = {
            "project": f"p-{owner.username}",
            "name": "prop",
            "command": "true",
            "resources": resources,
            "max_runtime_minutes": max_runtime,
            "ports": [8888] if port else [],
            "preemptible": preemptible,
        }
        if replicas > 1:
            body.update(task_mode="distributed", replicas=replicas)
        # A refused job (infeasible, over the whole quota) holds nothing: no more to check.
        with contextlib.suppress(ValidationError):
            self.jobs.append(job_submit(user=owner, data=body).pk)

    @rule()
    def schedule(self):
        before = set(self._active_ids())
        ready = set(Node.objects.filter(state=Node.State.READY).values_list("pk", flat=True))
        run_pass()
        started = set(self._active_ids()) - before
        nodes = set(
            Allocation.objects.filter(replica__job__in=started).values_list("node_id", flat=True)
        )
        assert nodes <= ready, f"jobs {started} started on nodes that are not ready"

    @precondition(lambda self: self.jobs)
    @rule(index=st.integers(0, 1000))
    def stop(self, index):
        job = self._job(index)
        if job.is_waiting:
            job_stop(job=job)
        elif job.is_active and job.preempt_requested_at is not None:
            # Stopped by its owner while preempted: settle decides, and the stop wins.
            replicas_end(job_stop(job=job), "stopped")
        elif job.is_active:
            end_job(job, Job.State.STOPPED)  # as the executor does once the stop is done

    @precondition(lambda self: self.jobs)
    @rule(index=st.integers(0, 1000), outcome=st.sampled_from(["run", "succeed", "fail"]))
    def progress(self, index, outcome):
        job = self._job(index)
        if outcome == "run" and job.state == Job.State.STARTING:
            run_job(job)
        elif outcome != "run" and job.is_active and job.preempt_requested_at is not None:
            # A victim that ends before its stop: in the grace it succeeds, else it is requeued.
            replicas_end(job, "succeeded" if outcome == "succeed" else "failed")
        elif outcome != "run" and job.is_active:
            end_job(job, Job.State.SUCCEEDED if outcome == "succeed" else Job.State.FAILED)

    @rule()
    def preempted_jobs_stop(self):
        """What the agent and settle do once a preempted job's replicas have stopped."""
        for job in Job.objects.filter(
            state__in=Job.ACTIVE_STATES, preempt_requested_at__isnull=False
        ):
            replicas_end(job, "stopped")
            job.refresh_from_db()
            assert job.state == Job.State.RESOURCE_WAIT and not job.borrowed, job

    @rule(index=st.integers(0, 4), state=st.sampled_from(list(Node.State.values)))
    def node_changes(self, index, state):
        node_set_state(node=self.nodes[index], state=state, reason="property test")

    @invariant()
    def nothing_over_committed_and_no_gang_split(self):
        assert_invariants()
        split = (
            Job.objects.filter(state__in=Job.ACTIVE_STATES, replicas__gt=1)
            .annotate(nodes=Count("replica_set__allocation__node", distinct=True))
            .exclude(nodes=F("replicas"))
        )
        assert not split.exists(), list(split.values("pk", "replicas", "nodes"))

    @invariant()
    def only_preemptible_jobs_borrow_and_preemption_has_no_cycles(self):
        assert_borrowing_invariants()

    def _job(self, index: int) -> Job:
        return Job.objects.get(pk=self.jobs[index % len(self.jobs)])

    def _active_ids(self) -> list[int]:
        return list(Job.objects.filter(state__in=Job.ACTIVE_STATES).values_list("pk", flat=True))


@pytest.mark.django_db
def test_scheduler_invariants_hold_for_random_histories():
    run_state_machine_as_test(
        Cluster,
        settings=settings(
            max_examples=20,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
