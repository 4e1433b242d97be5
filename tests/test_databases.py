"""The database connection: on PostgreSQL, statements run again and again are prepared."""

import pytest
from django.db import connection

from jobs.models import Job

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
)


@pytest.mark.django_db
def test_a_statement_run_again_is_prepared_once_per_connection():
    # Parsed and planned once per connection, not on every execution: planning was most
    # of PostgreSQL's CPU for Trainyard's small statements (bench/prepared_statements.py).
    for _ in range(3):
        assert not Job.objects.filter(pk=-1).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any('FROM "jobs_job"' in statement for statement in prepared), prepared
