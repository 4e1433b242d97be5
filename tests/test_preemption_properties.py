"""Borrowing and preemption under random histories (hypothesis, stateful).

Two 4×V100 nodes; ada's quota is one card, so her preemptible jobs borrow; bob and
carol have no quota, so each of their jobs is within it and may preempt. Jobs are
submitted, run, end and are stopped in any order; preempted jobs stop when the test
says so, as their agents would. After every step: nothing over-committed, nothing
over quota that does not borrow, only preemptible jobs borrow, only borrowing jobs
are preempted, for jobs that do not borrow; and a job is preempted only for a job
that then starts: once its victims have stopped, the next pass starts it.
"""

from __future__ import annotations

import contextlib

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
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
from resources.models import Quota
from tests.factories import GpuModelFactory, NodeFactory, ProjectFactory, UserFactory
from tests.scheduling import (
    assert_borrowing_invariants,
    assert_invariants,
    end_job,
    replicas_end,
    run_job,
)

# (user, cards, preemptible)
REQUEST = st.tuples(st.integers(0, 2), st.sampled_from([1, 1, 2, 3, 4]), st.booleans())


@seed(20_261_203)
class Borrowing(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        v100 = GpuModelFactory(name="V100")
        for i in range(2):
            NodeFactory(name=f"v100-{i}", gpu_model=v100, gpu_count=4, cpu_milli=64_000)
        self.users = [UserFactory(username=name) for name in ("ada", "bob", "carol")]
        for user in self.users:
            ProjectFactory(name=f"p-{user.username}", owner=user)
            account = account_for_user(user=user)
            account.billing_enabled = True
            account.save(update_fields=["billing_enabled"])
        Quota.objects.create(
            user=self.users[0], resource=Quota.Resource.GPU, gpu_model=v100, limit=1
        )
        self.jobs: list[int] = []
        self.preemptions = 0

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.atomic.__exit__(None, None, None)

    @initialize(requests=st.lists(REQUEST, min_size=2, max_size=6))
    def fill_the_queue(self, requests):
        for request in requests:
            self.submit(*request)

    @rule(request=REQUEST)
    def submit_one(self, request):
        self.submit(*request)

    def submit(self, user, cards, preemptible):
        owner = self.users[user]
        body = {
            "project": f"p-{owner.username}",
            "name": "prop",
            "command": "true",
            "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": cards},
            "preemptible": preemptible or user == 0,
        }
        with contextlib.suppress(ValidationError):
            self.jobs.append(job_submit(user=owner, data=body).pk)

    @rule(request=REQUEST)
    def arrive_and_schedule(self, request):
        """A job arrives at a site that schedules at once (what submit triggers)."""
        self.submit(*request)
        self.schedule()

    @rule()
    def schedule(self):
        self.preemptions += len(run_pass().preempted)

    @rule()
    def preempted_jobs_stop_and_the_next_pass_starts_their_beneficiaries(self):
        beneficiaries = set()
        for job in Job.objects.filter(
            state__in=Job.ACTIVE_STATES, preempt_requested_at__isnull=False
        ):
            beneficiaries.add(job.preempted_for_id)
            replicas_end(job, "stopped")
        self.preemptions += len(run_pass().preempted)
        for job in Job.objects.filter(pk__in=beneficiaries):
            assert not job.is_waiting, f"#{job.pk} waits after its victims stopped: {job}"

    @precondition(lambda self: self.jobs)
    @rule(index=st.integers(0, 1000), outcome=st.sampled_from(["run", "end", "stop"]))
    def progress(self, index, outcome):
        job = Job.objects.get(pk=self.jobs[index % len(self.jobs)])
        if outcome == "run" and job.state == Job.State.STARTING:
            run_job(job)
        elif outcome == "stop" and job.is_waiting:
            job_stop(job=job)
        elif outcome != "run" and job.is_active and job.preempt_requested_at is None:
            end_job(job, Job.State.SUCCEEDED if outcome == "end" else Job.State.STOPPED)

    @invariant()
    def nothing_over_committed(self):
        assert_invariants()

    @invariant()
    def only_preemptible_jobs_borrow_and_only_borrowers_are_preempted(self):
        assert_borrowing_invariants()
        # Here a victim ends only by being requeued: none has ended with its mark.
        victims = Job.objects.filter(preempt_requested_at__isnull=False)
        assert not victims.exclude(state__in=Job.ACTIVE_STATES, borrowed=True).exists()


@pytest.mark.django_db
def test_borrowing_and_preemption_invariants_hold_for_random_histories():
    seen = []

    class Counted(Borrowing):
        def teardown(self):
            seen.append(self.preemptions)
            super().teardown()

    run_state_machine_as_test(
        Counted,
        settings=settings(
            max_examples=25,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert sum(seen) > 0, "no history preempted anything: the test would prove nothing"
