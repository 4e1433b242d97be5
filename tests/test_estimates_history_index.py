"""The owner's earlier runs of a command, asked on every submission and every estimate,
are found through an index on (owner, command): the rows read do not grow with the
owner's other jobs (before, a new command read every job the owner ever ran: 22.8 ms a
submission for an owner of 100,000 jobs, 1.1 ms now; ``bench/own_runs_cost.py``)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.estimates.history import commands_runs
from jobs.models import Job
from tests.factories import JobFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def rows_read(sql: str) -> int:
    """Rows of ``jobs_job`` the query reads where it may use any index it finds."""
    with connection.cursor() as cursor:
        # With the statistics a live table has (autovacuum's), not whatever the rows of
        # earlier tests in this database left: without them any index may look cheapest.
        cursor.execute("ANALYZE jobs_job")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
        plan = cursor.fetchone()[0][0]["Plan"]
    read, pending = 0, [plan]
    while pending:
        node = pending.pop()
        pending += node.get("Plans", [])
        if node.get("Relation Name") == "jobs_job":
            read += node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
            read += node.get("Rows Removed by Index Recheck", 0)
    return read


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plan")
def test_a_commands_history_reads_only_its_own_rows():
    owner, other = UserFactory(), UserFactory()
    project = ProjectFactory(owner=owner)
    common = {
        "project": project,
        "template": None,
        "state": Job.State.SUCCEEDED,
        "finished_at": timezone.now(),
    }
    for number in range(20):
        JobFactory.create_batch(2, owner=owner, command=f"python other{number}.py", **common)
    JobFactory.create_batch(40, owner=other, command="python train.py", **common)
    JobFactory.create_batch(2, owner=owner, command="python train.py", **common)
    for command, rows in (("python train.py", 2), ("python new.py", 0)):
        with CaptureQueriesContext(connection) as queries:
            commands_runs(keys={(owner.pk, command)})
        assert rows_read(queries.captured_queries[0]["sql"]) <= rows, command
