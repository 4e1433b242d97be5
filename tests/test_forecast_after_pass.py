"""The forecast of likely starts runs once the pass has committed, outside its lock: the
jobs the pass started are launched before it, and an estimate from a pass that a later
one superseded is never written (jobs/scheduler/run.py)."""

import gc
import time

import pytest
from django.core.cache import cache

from jobs.models import Job
from jobs.scheduler import run_pass
from jobs.scheduler.passes import SchedulingPass
from jobs.scheduler.run import (
    CURRENT_AT_KEY,
    STALE_SECONDS,
    _new_generation,
    cycles_collected_after,
    forecast,
    locked_pass,
)
from tests.factories import GpuModelFactory, JobFactory, UserFactory
from tests.scheduling import fresh
from tests.test_start_forecast import hold_every_card


@pytest.fixture
def waiter():
    """A job waiting behind a card that frees within the hour: it has a likely start."""
    p4 = GpuModelFactory(name="P4", card_memory_gib=8)
    alice = UserFactory(username="alice")
    hold_every_card(alice, p4, [60])
    return JobFactory(owner=alice, gpu_model=p4, max_runtime_minutes=30)


def decided() -> tuple[SchedulingPass, int]:
    """A pass's decisions, committed, and its generation: its forecast not yet run."""
    _report, scheduling, generation = locked_pass()
    return scheduling, generation


@pytest.mark.django_db
def test_the_latest_passes_forecast_writes_the_likely_start(waiter):
    scheduling, generation = decided()
    assert fresh(waiter).state == Job.State.RESOURCE_WAIT
    assert fresh(waiter).estimated_start is None  # the pass itself writes none

    assert forecast(scheduling, generation)

    assert fresh(waiter).estimated_start is not None


@pytest.mark.django_db
def test_a_forecast_a_later_pass_superseded_writes_nothing(waiter):
    scheduling, generation = decided()
    run_pass()  # a later pass, and its own forecast
    assert fresh(waiter).estimated_start is not None
    Job.objects.filter(pk=waiter.pk).update(estimated_start=None)  # a stale write would show

    assert not forecast(scheduling, generation)

    assert fresh(waiter).estimated_start is None


@pytest.mark.django_db
def test_a_superseded_forecast_is_written_when_none_has_been_lately(waiter):
    """Each change superseding the pass before must not leave the estimates unwritten."""
    scheduling, generation = decided()
    _new_generation()  # a later pass, whose forecast has not come
    cache.set(CURRENT_AT_KEY, time.time() - STALE_SECONDS - 1)

    assert forecast(scheduling, generation)

    assert fresh(waiter).estimated_start is not None


@pytest.mark.django_db
def test_a_superseded_forecast_leaves_alone_what_a_later_one_found_current(waiter):
    """A later pass's forecast that finds every estimate already right writes no row;
    it is still the latest word: an older pass's forecast, from facts since changed,
    must not write over it, however long ago the last row was written."""
    scheduling, generation = decided()  # the card frees in 60 minutes
    holder = Job.objects.get(state=Job.State.RUNNING)
    Job.objects.filter(pk=holder.pk).update(max_runtime_minutes=20)  # now in 20
    run_pass()  # writes the new estimate
    current = fresh(waiter).estimated_start
    cache.set(CURRENT_AT_KEY, time.time() - STALE_SECONDS - 1)  # ... long ago
    run_pass()  # finds it right, writes nothing

    assert not forecast(scheduling, generation)

    assert fresh(waiter).estimated_start == current


@pytest.mark.django_db(transaction=True)
def test_the_started_jobs_are_launched_before_the_forecast_runs(waiter):
    """Launched on the pass's commit: no job waits for the replay of everyone else's."""
    starter = JobFactory(owner=waiter.owner, resource_kind="cpu", gpu_model=None, gpu_count=0)
    seen = {}

    def launch(job_ids: list[int]) -> None:
        seen["launched"] = job_ids
        seen["estimate then"] = fresh(waiter).estimated_start

    report = run_pass(launch=launch)

    assert seen["launched"] == [starter.pk] == report.started
    assert seen["estimate then"] is None
    assert fresh(waiter).estimated_start is not None


@pytest.mark.django_db(transaction=True)
def test_the_cycle_collector_waits_until_the_pass_and_its_forecast_end(waiter, monkeypatch):
    """Collecting cycles walks every object the worker holds, many times over a pass of
    thousands of jobs: paused while the pass and its forecast run, and running again
    after each, an error included (jobs/scheduler/run.py: cycles_collected_after)."""
    starter = JobFactory(owner=waiter.owner, resource_kind="cpu", gpu_model=None, gpu_count=0)
    seen = {}
    estimates = SchedulingPass.estimates

    def launch(job_ids: list[int]) -> None:
        seen["launching"] = gc.isenabled()

    def estimating(scheduling):
        seen["forecasting"] = gc.isenabled()
        return estimates(scheduling)

    monkeypatch.setattr(SchedulingPass, "estimates", estimating)
    assert gc.isenabled()

    assert run_pass(launch=launch).started == [starter.pk]

    assert seen == {"launching": False, "forecasting": False}
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cycles_collected_after():
        raise RuntimeError("a pass that fails")
    assert gc.isenabled()
