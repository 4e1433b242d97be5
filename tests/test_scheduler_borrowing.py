"""Borrowing idle quota and preemption (jobs/scheduler/preemption.py, passes.py).

A preemptible job beyond its owner's quota starts on cards no job within its quota
waits for, marked borrowed; a job within its quota that waits for cards held by
borrowed jobs preempts the fewest of them that let it start, and starts on what
they free; the preempted jobs go back to the queue.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from billing.accounts import account_for_user
from jobs.execution.settle import job_settle
from jobs.models import Job, Replica, ReplicaAttempt
from jobs.quota_usage import quota_usage
from jobs.scheduler import run_pass
from jobs.services.submit import job_submit
from tests.factories import JobFactory, NodeFactory, ProjectFactory, UserFactory
from tests.scheduling import assert_invariants, fresh, run_job, states
from tests.support.borrowing import borrowing, preempted_off

pytestmark = pytest.mark.django_db


def test_a_preemptible_job_beyond_its_quota_borrows_idle_cards_and_says_so(v100, ada):
    NodeFactory(gpu_model=v100, gpu_count=4)
    within = JobFactory(owner=ada, gpu_model=v100)
    beyond = JobFactory(owner=ada, gpu_model=v100, gpu_count=2, preemptible=True)
    not_preemptible = JobFactory(owner=ada, gpu_model=v100)

    run_pass()

    assert states([within, beyond, not_preemptible]) == ["starting", "starting", "quota_wait"]
    assert (fresh(within).borrowed, fresh(beyond).borrowed) == (False, True)
    assert fresh(beyond).state_reason.endswith("borrowing idle quota (preemptible)")
    # Borrowed cards are not the quota's: 1 of 1 used, by the job within it.
    assert quota_usage(user=ada)["gpu:V100"] == 1
    assert_invariants()


def test_idle_cards_are_not_lent_while_a_job_within_its_quota_waits_for_them(v100, ada, bob):
    NodeFactory(gpu_model=v100, gpu_count=4)
    JobFactory(owner=UserFactory(), gpu_model=v100, gpu_count=2)  # a user without quotas
    run_pass()
    waiting = JobFactory(owner=bob, gpu_model=v100, gpu_count=3)
    beyond = JobFactory(owner=ada, gpu_model=v100, gpu_count=2, preemptible=True)

    run_pass()

    assert fresh(waiting).state == Job.State.RESOURCE_WAIT
    beyond = fresh(beyond)
    assert beyond.state == Job.State.QUOTA_WAIT
    assert beyond.state_reason == (
        f"Waiting for quota: the idle cards it could borrow are kept for job #{waiting.pk}, "
        "which is within its quota"
    )


def test_borrowing_stops_at_the_owners_borrow_limit(v100, ada):
    NodeFactory(gpu_model=v100, gpu_count=8)
    ada.quotas.update(borrow_limit=2)
    JobFactory(owner=ada, gpu_model=v100)
    first = JobFactory(owner=ada, gpu_model=v100, gpu_count=2, preemptible=True)
    second = JobFactory(owner=ada, gpu_model=v100, gpu_count=1, preemptible=True)

    run_pass()

    assert states([first, second]) == ["starting", "quota_wait"]
    assert fresh(second).state_reason == (
        "Waiting for quota: needs 1 V100 card beyond your quota; you may borrow 2 and 2 is borrowed"
    )


def test_a_job_within_its_quota_preempts_the_fewest_borrowing_jobs_then_starts(v100, ada, bob):
    NodeFactory(gpu_model=v100, gpu_count=4)
    JobFactory(owner=ada, gpu_model=v100)  # ada's one card, within quota
    run_pass()
    older = borrowing(ada, v100, cards=1, minutes_ago=30)
    pair = borrowing(ada, v100, cards=2, minutes_ago=20)

    needs_two = JobFactory(owner=bob, gpu_model=v100, gpu_count=2)
    report = run_pass()

    # One job frees enough: the 2-card one, though the 1-card one started earlier.
    assert report.preempted == {pair.pk: needs_two.pk}
    pair, needs_two = fresh(pair), fresh(needs_two)
    assert pair.preempt_requested_at is not None and pair.preempted_for_id == needs_two.pk
    assert fresh(older).preempt_requested_at is None
    assert needs_two.state == Job.State.RESOURCE_WAIT
    assert needs_two.state_reason == (
        f"Waiting for resources: stopping #{pair.pk}, which borrow idle quota; "
        "starts on what they free"
    )
    # While it stops, no further pass preempts anything more for it.
    assert run_pass().preempted == {}

    pair = preempted_off(pair)
    assert pair.state == Job.State.RESOURCE_WAIT
    assert (pair.attempt, pair.borrowed, pair.preempt_requested_at) == (2, False, None)
    assert pair.state_reason == (
        f"Preempted for job #{needs_two.pk}; back in the queue (not counted as a retry)"
    )

    run_pass()

    assert fresh(needs_two).state == Job.State.STARTING
    pair = fresh(pair)
    assert pair.state == Job.State.QUOTA_WAIT  # nothing idle to borrow now
    assert pair.preempted_for_id is None
    assert_invariants()


def test_several_victims_only_when_one_is_not_enough_the_most_recent_first(v100, ada, bob):
    NodeFactory(gpu_model=v100, gpu_count=4)
    JobFactory(owner=ada, gpu_model=v100)
    run_pass()
    recent = borrowing(ada, v100, cards=1, minutes_ago=5)
    borrowing(ada, v100, cards=1, minutes_ago=50)
    later = borrowing(ada, v100, cards=1, minutes_ago=10)

    needs_two = JobFactory(owner=bob, gpu_model=v100, gpu_count=2)
    report = run_pass()

    assert report.preempted == {recent.pk: needs_two.pk, later.pk: needs_two.pk}


def test_nothing_is_preempted_that_would_not_let_the_waiting_job_start(v100, ada, bob):
    NodeFactory(gpu_model=v100, gpu_count=4)
    NodeFactory(gpu_model=v100, gpu_count=4)
    carol = UserFactory()  # no quotas
    JobFactory(owner=carol, gpu_model=v100, gpu_count=4)
    run_pass()
    JobFactory(owner=carol, gpu_model=v100, gpu_count=2)
    run_pass()
    borrowing(ada, v100, cards=2)
    # Freeing the borrowed 2 cards leaves 2 free on a node: not the 3 bob needs.
    needs_three = JobFactory(owner=bob, gpu_model=v100, gpu_count=3)

    report = run_pass()

    assert report.preempted == {}
    assert fresh(needs_three).state == Job.State.RESOURCE_WAIT


def test_jobs_within_quota_are_never_preempted_even_if_preemptible(v100, ada, bob):
    NodeFactory(gpu_model=v100, gpu_count=2)
    mine = JobFactory(owner=ada, gpu_model=v100, preemptible=True)  # within ada's quota
    run_pass()
    assert fresh(mine).borrowed is False
    run_job(fresh(mine))
    theirs = JobFactory(owner=bob, gpu_model=v100, gpu_count=2)

    assert run_pass().preempted == {}
    assert fresh(theirs).state == Job.State.RESOURCE_WAIT
    assert fresh(mine).preempt_requested_at is None


def test_a_job_that_ends_within_the_grace_succeeds(v100, ada, bob):
    ada.quotas.update(limit=0)
    NodeFactory(gpu_model=v100, gpu_count=1)
    victim = borrowing(ada, v100, cards=1)
    JobFactory(owner=bob, gpu_model=v100)
    assert run_pass().preempted == {victim.pk: victim.pk + 1}
    replica = Replica.objects.get(job=victim)
    ReplicaAttempt.objects.create(replica=replica, number=1, node=replica.node, state="succeeded")
    job_settle(job=fresh(victim))
    assert fresh(victim).state == Job.State.SUCCEEDED


def test_a_stopped_borrowing_job_is_not_preempted(v100, ada, bob):
    ada.quotas.update(limit=0)
    NodeFactory(gpu_model=v100, gpu_count=1)
    victim = borrowing(ada, v100, cards=1)
    Job.objects.filter(pk=victim.pk).update(stop_requested_at=victim.submitted_at)
    JobFactory(owner=bob, gpu_model=v100)
    assert run_pass().preempted == {}


def test_a_preemptible_job_beyond_the_whole_quota_is_refused_only_past_the_borrow_limit(v100, ada):
    NodeFactory(gpu_model=v100, gpu_count=8)
    ProjectFactory(name="p", owner=ada)
    account = account_for_user(user=ada)
    account.billing_enabled = True
    account.save(update_fields=["billing_enabled"])

    def submit(cards: int, preemptible: bool) -> Job:
        resources = {"kind": "gpu", "gpu_model": "V100", "gpu_count": cards}
        body = {"project": "p", "name": "big", "command": "true", "resources": resources}
        return job_submit(user=ada, data={**body, "preemptible": preemptible})

    with pytest.raises(ValidationError, match="your whole quota is 1"):
        submit(4, preemptible=False)
    assert submit(4, preemptible=True).preemptible  # no borrow limit: no cap
    ada.quotas.update(borrow_limit=2)
    with pytest.raises(ValidationError, match="the job needs 4 V100 cards in total"):
        submit(4, preemptible=True)
    assert submit(2, preemptible=True).preemptible


def test_what_a_preemption_frees_goes_to_its_job_not_to_one_that_came_later(v100, ada, bob):
    """Kueue #6763's kind of loop: a job preempted for one that then does not start."""
    NodeFactory(gpu_model=v100, gpu_count=2)
    ada.quotas.update(limit=0)
    victim = borrowing(ada, v100, cards=2)
    waiting = JobFactory(owner=bob, gpu_model=v100, gpu_count=2)
    assert run_pass().preempted == {victim.pk: waiting.pk}
    # While it stops, a higher-priority job within its quota arrives for the same cards.
    later = JobFactory(owner=UserFactory(), gpu_model=v100, gpu_count=2, priority=Job.Priority.HIGH)
    assert run_pass().preempted == {}  # nothing else borrows: nothing more to preempt
    preempted_off(victim)

    run_pass()

    assert states([waiting, later, victim]) == ["starting", "resource_wait", "quota_wait"]
    assert_invariants()


def test_a_victim_still_running_long_after_it_was_asked_is_asked_again(v100, ada, bob):
    """The stop message may be lost with a worker that died after the pass committed."""
    NodeFactory(gpu_model=v100, gpu_count=1)
    ada.quotas.update(limit=0)
    victim = borrowing(ada, v100, cards=1)
    waiting = JobFactory(owner=bob, gpu_model=v100)
    assert run_pass().preempted == {victim.pk: waiting.pk}
    assert run_pass().preempted == {}  # asked a moment ago: its grace runs

    asked = fresh(victim).preempt_requested_at - timedelta(seconds=31)
    Job.objects.filter(pk=victim.pk).update(preempt_requested_at=asked)

    assert run_pass().preempted == {victim.pk: waiting.pk}
    assert fresh(victim).preempt_requested_at == asked  # the first request's time stands
    assert fresh(victim).events.filter(reason_code="preempting").count() == 1


def test_two_jobs_of_one_owner_preempt_only_what_their_quota_lets_start(v100, ada, bob):
    """Found by bench/fair_queues.py: each of bob's jobs was admitted against the same
    headroom, so both preempted, and one victim was stopped for a job that then waited
    for quota."""
    NodeFactory(gpu_model=v100, gpu_count=3)
    bob.quotas.update(limit=2)
    JobFactory(owner=bob, gpu_model=v100)
    run_pass()
    ada.quotas.update(limit=0)
    recent = borrowing(ada, v100, cards=1, minutes_ago=5)
    older = borrowing(ada, v100, cards=1, minutes_ago=10)
    wanted = [JobFactory(owner=bob, gpu_model=v100) for _ in range(2)]

    report = run_pass()

    assert report.preempted == {recent.pk: wanted[0].pk}
    assert fresh(older).preempt_requested_at is None
    assert fresh(wanted[1]).state == Job.State.QUOTA_WAIT


def test_an_owners_borrowing_job_stops_borrowing_when_their_quota_has_room(v100, ada, bob):
    """Found by bench/fair_queues.py: an owner's job within quota preempted the same
    owner's borrowing job; once their quota holds it, it is simply no longer borrowing."""
    NodeFactory(gpu_model=v100, gpu_count=2)
    JobFactory(owner=bob, gpu_model=v100)
    run_pass()
    ada.quotas.update(limit=0)
    borrower = borrowing(ada, v100, cards=1)
    ada.quotas.update(limit=1)  # an admin raises her quota
    mine = JobFactory(owner=ada, gpu_model=v100)  # within it, but the node is full

    report = run_pass()

    assert report.preempted == {}
    borrower = fresh(borrower)
    assert borrower.borrowed is False and borrower.preempt_requested_at is None
    assert borrower.events.filter(reason_code="borrow.ended").exists()
    assert quota_usage(user=ada)["gpu:V100"] == 1
    run_pass()
    assert fresh(mine).state == Job.State.QUOTA_WAIT  # her quota holds her running job
    assert_invariants()


def test_a_preemptible_job_with_nothing_idle_to_borrow_says_so(v100, ada):
    """Seen on make run: a preemptible job beyond its quota read only the quota wait, and
    its owner could not tell why it did not borrow."""
    NodeFactory(gpu_model=v100, gpu_count=1)
    JobFactory(owner=ada, gpu_model=v100)  # her quota's one card, and the node's
    beyond = JobFactory(owner=ada, gpu_model=v100, preemptible=True)

    run_pass()

    assert fresh(beyond).state_reason == (
        "Waiting for quota: needs 1 V100 card; your quota is 1 and 1 is in use; "
        "no idle card to borrow now"
    )
