"""The tracking pass's marks of news sent: each Slurm job's news is sent once, new news at
once, and marking them costs the same few cache round trips however many jobs have news.

No cluster needed: the replicas' notes are written as their Slurm side writes them, and
``squeue`` is not due (the pass reads only files).
"""

import pytest
from django.core.cache import cache

from jobs.execution.slurm import track
from tests.test_slurm_report_cost import cluster, ran, slurm_placed_attempt  # noqa: F401


class CountingCache:
    """The cache, counting the calls (each a round trip to Redis) made through it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name):
        method = getattr(cache, name)

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def tracked(cluster, monkeypatch):  # noqa: F811
    """(the cluster's model and node, the report tasks a pass sends, its cache calls)."""
    sent: list[list] = []

    def send_task(name, args=(), **_):
        if name == track.REPORT_TASK:
            sent.append(args[0])

    monkeypatch.setattr(track, "send_task", send_task)
    counting = CountingCache()
    monkeypatch.setattr(track, "cache", counting)
    cache.clear()  # no marks left by another test's Slurm jobs of the same ids
    monkeypatch.setattr(track, "_query_due", lambda now: False)
    return cluster, sent, counting


def reported(sent: list[list]) -> list[str]:
    return sorted(slurm_id for batch in sent for slurm_id, _ in batch)


def test_news_is_sent_once_and_new_news_at_once(tracked):
    (model, node), sent, _calls = tracked
    first, second = (slurm_placed_attempt(model, number) for number in (1, 2))
    ran(first, node, 0, ended=False)

    track._track(track.timezone.now())
    assert reported(sent) == ["1"]

    sent.clear()
    ran(second, node, 1, ended=True)  # the first's news is unchanged; the second's is new
    track._track(track.timezone.now())
    assert reported(sent) == ["2"]


def test_marking_news_costs_the_same_round_trips_for_one_job_as_for_eight(tracked):
    (model, node), sent, counting = tracked
    one = slurm_placed_attempt(model, 100)
    ran(one, node, 7, ended=False)
    track._track(track.timezone.now())
    for_one = list(counting.calls)

    counting.calls.clear()
    sent.clear()
    eight = [slurm_placed_attempt(model, number) for number in range(8)]
    for card, attempt in enumerate(eight[:7]):
        ran(attempt, node, card, ended=False)
    ran(eight[7], node, 0, ended=True)
    track._track(track.timezone.now())

    assert len(reported(sent)) == 8
    assert sorted(counting.calls) == sorted(for_one), (for_one, counting.calls)
