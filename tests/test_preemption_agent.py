"""Preemption end to end on the local executor: a real agent, real passes, real processes.

A preemptible job borrows a node beyond its owner's quota; a job within its quota arrives;
the pass preempts the borrower (TERM, the preemption grace, KILL), the borrower goes back
to its queue and the newcomer starts on what it freed; the borrower then runs again as
attempt 2, its retries untouched.
"""

import pytest

from jobs.models import Job, ReplicaAttempt
from jobs.quota_usage import quota_usage
from resources.models import Quota, SiteSettings
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, wait_for_state
from tests.factories import UserFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

# Attempt 1 runs until TERM, saving on the way out; attempt 2 finishes at once.
BORROWER = """echo "attempt $TRAINYARD_ATTEMPT"
trap 'echo "saving at TERM"; exit 0' TERM
if [ "$TRAINYARD_ATTEMPT" = 1 ]; then sleep 300 & wait; fi
echo finished"""


def test_a_borrowing_job_is_preempted_requeued_and_runs_again(agent_env):
    SiteSettings.objects.update_or_create(pk=1, defaults={"preempt_grace_seconds": 20})
    agent = agent_env([make_node(cpu_milli=2000)])
    ada = UserFactory(username="ada")
    Quota.objects.create(user=ada, resource=Quota.Resource.CPU, limit=1000)
    borrower = cpu_job(BORROWER, owner=ada, cpu_milli=2000, preemptible=True)
    borrower = wait_for_state(borrower, Job.State.RUNNING, agent)
    assert borrower.borrowed and quota_usage(user=ada).get("cpu_milli", 0) == 0
    wait_until(lambda: "attempt 1" in attempt_log(attempts_of(borrower)[0]), what="attempt 1")

    bob = UserFactory(username="bob")  # no quota: every job of his is within it
    newcomer = cpu_job("echo newcomer ran", owner=bob, cpu_milli=1000)

    newcomer = wait_for_state(newcomer, Job.State.SUCCEEDED, agent)
    first = attempts_of(borrower)[0]
    assert first.state == ReplicaAttempt.State.STOPPED
    assert first.exit_code == 0  # it saved within the grace: TERM, not KILL
    assert "saving at TERM" in attempt_log(first)
    events = list(Job.objects.get(pk=borrower.pk).events.values_list("reason", flat=True))
    assert f"Preempting for job #{newcomer.pk}: TERM now, KILL after the grace period" in events
    assert f"Preempted for job #{newcomer.pk}; back in the queue (not counted as a retry)" in events

    borrower = wait_for_state(borrower, Job.FINAL_STATES, agent)
    assert borrower.state == Job.State.SUCCEEDED, borrower.state_reason
    assert borrower.attempt == 2 and borrower.max_retries == 0
    second = attempts_of(borrower)[-1]
    assert "attempt 2" in attempt_log(second) and "finished" in attempt_log(second)
