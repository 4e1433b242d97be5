"""Parallel test workers (pytest-xdist) that cannot see each other's work.

Each worker has its own test database already (pytest-django adds the worker id to its
name). Here it also gets its own Redis database, the Celery broker and the cache of every
agent, worker and beat its tests start, so that no worker takes another's tasks, and a
range of host ports of its own for the replicas its tests publish. The tests' Redis
databases come after the one ``REDIS_URL`` names (which ``make run`` may use: tests never
touch it), and a test that starts Celery processes empties its own first
(``empty_broker``): no task an earlier test left behind runs in it.

Tests that share one thing of the host that cannot be split (the Slurm development
cluster, the stand-in hosts' network namespaces) form groups, and ``--dist loadgroup``
runs each group on one worker, one test at a time.
"""

from __future__ import annotations

import os
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from _pytest.nodeid import coerce_node_id
from django.conf import settings

from tests.support import slurm_seconds as slurm_seconds_table

REDIS_DATABASES = 16
# Replica attempt ids name host-wide things (a replica's network namespace, ty-<slot>-a<id>):
# each test process's database numbers them from its own multiple of this.
ATTEMPT_IDS_PER_PROCESS = 10_000_000
# The databases of Redis that parallel workers take, after the one the run was given.
PORTS_PER_WORKER = 2000


def worker_index() -> int | None:
    """0 for ``gw0``, 1 for ``gw1``…; None when the tests run in one process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else None


def empty_broker() -> None:
    """Empty this worker's Redis database: the broker's queues and the cache's marks."""
    if settings.REDIS_URL:
        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            client.flushdb()
        finally:
            client.close()


def redis_url_of_worker(url: str, index: int) -> str:
    """The run's Redis URL with database ``given + 1 + index`` (modulo Redis's 16)."""
    parts = urlsplit(url)
    given = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(given + 1 + index) % REDIS_DATABASES}"))


def isolate_this_worker() -> None:
    """Called when the test session starts, before any test talks to Redis or starts a
    process: children inherit ``REDIS_URL`` from ``os.environ``. One process alone takes
    the first of the tests' databases, as ``gw0`` does."""
    if not settings.REDIS_URL:
        return
    url = redis_url_of_worker(settings.REDIS_URL, worker_index() or 0)
    os.environ["REDIS_URL"] = url
    settings.REDIS_URL = url
    settings.CACHES["default"]["LOCATION"] = url
    settings.CELERY_BROKER_URL = url
    from trainyard.celery import app

    app.conf.broker_url = url


def number_attempts_apart(connection) -> None:
    """Start this process's replica attempt ids in a range no other test process uses.

    One database numbers them uniquely, as in production; test processes each have their
    own, and a cleanup of one's attempt 32 deleted another's live namespace of that name.
    Flushes between tests keep the sequence (pytest-django resets none).
    """
    if connection.vendor != "postgresql":
        return  # SQLite: one process, one database
    first = ((worker_index() or 0) + 1) * ATTEMPT_IDS_PER_PROCESS
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('jobs_replicaattempt', 'id'), %s, false)",
            [first],
        )


def host_port_offset() -> int:
    """Where this worker's share of the test host ports begins, from the pool's start."""
    return PORTS_PER_WORKER * (worker_index() or 0)


# Fixtures that use one thing of the host for the whole test, and the group that runs
# their tests one at a time on one worker.
SHARED_HOST_FIXTURES = {
    "slurm_cluster": "slurm",
    "two_hosts": "stand-in-hosts",
}


# The Slurm tests share the cluster as test sessions at once do (a job-name prefix each;
# tests that stop the controller or change a node hold it alone: tests/slurm_support.py),
# in this many streams: they mostly wait on Slurm, and one stream was the suite's long pole.
SLURM_STREAMS = 2


def slurm_streams(items: list[pytest.Item]) -> dict[str, str]:
    """Each Slurm test's stream, by node id, the streams' seconds balanced (longest first).

    Tests that hold the cluster alone all go to the first stream and count in neither: the
    other stream waits them out wherever they run.
    """
    streams, load = {}, [0.0] * SLURM_STREAMS
    alone = {item.nodeid for item in items if "slurm_cluster_alone" in item.fixturenames}
    shared = [item for item in items if item.nodeid not in alone]
    seconds = {item.nodeid: slurm_seconds(item.nodeid) for item in shared}
    for nodeid in sorted(seconds, key=lambda nodeid: -seconds[nodeid]):
        stream = load.index(min(load))
        streams[nodeid] = f"slurm-{stream}"
        load[stream] += seconds[nodeid]
    return streams | dict.fromkeys(alone, "slurm-0")


def slurm_seconds(nodeid: str) -> float:
    return slurm_seconds_table.SECONDS.get(nodeid, slurm_seconds_table.OTHER_SECONDS)


def shared_host_group(item: pytest.Item) -> str | None:
    if item.nodeid.startswith("tests/browser/"):
        # Chromium, a live server and htmx polls: two at once on 2 cores made a poll's
        # answer land after a search's (seen in the parallel suite). One at a time.
        return "browser"
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("site") == "slurm":
        names.add("slurm_cluster")  # ``site`` asks for its executor's fixture by name
    return next((group for f, group in SHARED_HOST_FIXTURES.items() if f in names), None)


def give_each_test_its_own_id(items: list[pytest.Item]) -> None:
    """Schemathesis names each API operation's test ``test[GET /api/v1/…]``, but under
    pytest 9.2's structured node ids gives them all the function's id; xdist keys its work
    by node id, so with ``--dist loadgroup`` it ran one operation of 16. Each gets the id
    its name says."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1 and item.parent is not None:
            item._id = item.parent.id.child(item.name)
    if len({item.nodeid for item in items}) != len(items):
        raise pytest.UsageError("two tests share a node id: xdist would run only one")


def group_shared_host_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each test of a shared thing of the host in its group, for ``--dist loadgroup``.

    xdist groups tests by a ``@group`` suffix of their node id, which its own hook writes
    into ``item._nodeid``; pytest 9.2's structured node ids no longer read that field, so
    the groups were silently ignored (pytest-dev/pytest-xdist#1386). The suffix is written
    here where pytest reads it, and only when ``--dist loadgroup`` asked for groups.
    """
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers
        return
    groups = {item.nodeid: shared_host_group(item) for item in items}
    streams = slurm_streams([item for item in items if groups[item.nodeid] == "slurm"])
    for item in items:
        if (group := groups[item.nodeid]) and "@" not in item.nodeid:
            group = streams.get(item.nodeid, group)
            item._id = coerce_node_id(f"{item.nodeid}@{group}")
