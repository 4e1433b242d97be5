"""What a preemption frees goes to the job it was for (jobs/scheduler/passes.py).

While its victims stop (the grace), a job within its quota has a reservation on what it
will start on: their cards and whatever else it needs beside them, so a later job does
not take the idle part and leave it short when they are gone (it would then preempt
again: a cycle, found by ``bench/fair_queues.py``). Once they are gone it is considered
before jobs whose victims still stop.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.factories import JobFactory, NodeFactory, QuotaFactory, UserFactory
from tests.scheduling import assert_invariants, states
from tests.support.borrowing import borrowing, preempted_off

pytestmark = pytest.mark.django_db


def within_quota(v100, cards: int, **fields) -> Job:
    """A job of a new user whose quota is ``cards`` V100 cards."""
    owner = UserFactory()
    QuotaFactory(user=owner, gpu_model=v100, limit=cards)
    return JobFactory(owner=owner, gpu_model=v100, gpu_count=cards, **fields)


def test_the_idle_cards_a_reclaiming_job_needs_are_kept_while_its_victims_stop(v100, ada):
    NodeFactory(gpu_model=v100, gpu_count=4)
    ada.quotas.update(limit=0)
    victim = borrowing(ada, v100, cards=2)
    needs_three = within_quota(v100, 3)  # the victim's 2 cards and one idle card
    assert run_pass().preempted == {victim.pk: needs_three.pk}

    # While the victim stops, a 2-card job within its quota would take both idle cards;
    # a 1-card job takes only the card the first does not need.
    pair, single = within_quota(v100, 2), within_quota(v100, 1)
    assert run_pass().preempted == {}
    assert states([pair, single]) == ["resource_wait", "starting"]

    preempted_off(victim)
    report = run_pass()

    assert report.preempted == {}
    assert states([needs_three, pair, victim]) == ["starting", "resource_wait", "quota_wait"]
    assert_invariants()


def test_a_job_whose_victims_are_gone_starts_before_one_whose_victims_still_stop(v100, ada):
    """The higher-priority job's victims still stop; the other's are gone. Taking their
    cards, the higher one would leave the other to preempt a third borrowing job."""
    NodeFactory(gpu_model=v100, gpu_count=6)
    ada.quotas.update(limit=0)
    oldest = borrowing(ada, v100, cards=2, minutes_ago=30)
    middle = borrowing(ada, v100, cards=2, minutes_ago=20)
    newest = borrowing(ada, v100, cards=2, minutes_ago=10)
    first = within_quota(v100, 2)
    assert run_pass().preempted == {newest.pk: first.pk}
    urgent = within_quota(v100, 2, priority=Job.Priority.HIGH)
    assert run_pass().preempted == {middle.pk: urgent.pk}

    preempted_off(newest)
    report = run_pass()

    assert report.preempted == {}
    assert states([first, urgent, oldest]) == ["starting", "resource_wait", "running"]
    preempted_off(middle)
    run_pass()
    assert states([urgent]) == ["starting"]
    assert_invariants()


def reclaiming_pass_queries(v100, ada, count: int) -> int:
    """The queries of a pass while ``count`` jobs wait on their victims (one each)."""
    node = NodeFactory(gpu_model=v100, gpu_count=count)
    victims = [borrowing(ada, v100, cards=1) for _ in range(count)]
    for _ in victims:
        within_quota(v100, 1)
    assert len(run_pass().preempted) == count
    preempted_off(victims[0])  # one is ready to start, the others' victims still stop
    with CaptureQueriesContext(connection) as queries:
        run_pass()
    Job.objects.all().delete()
    node.delete()
    return len(queries)


def test_a_pass_with_reclaiming_jobs_costs_the_same_queries_for_two_or_eight(v100, ada):
    ada.quotas.update(limit=0)
    assert reclaiming_pass_queries(v100, ada, 2) == reclaiming_pass_queries(v100, ada, 8)
