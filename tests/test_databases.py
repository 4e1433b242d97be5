"""The database connection: on PostgreSQL, statements run again and again are prepared."""

from pathlib import Path

import pytest
from django.db import connection

from jobs.models import Job
from trainyard.databases import PREPARE_THRESHOLD, databases

URL = "postgres://trainyard@db.example:5432/trainyard"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL prepares")
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


def test_postgres_binds_on_the_server_and_prepares_unless_told_not_to():
    options = databases(URL, var_dir=Path("/var"))["default"]["OPTIONS"]
    assert options == {"server_side_binding": True, "prepare_threshold": PREPARE_THRESHOLD}
    # Behind a pooler that cannot keep prepared statements (TRAINYARD_DB_PREPARED_STATEMENTS=0).
    assert databases(URL, var_dir=Path("/var"), prepared=False)["default"].get("OPTIONS", {}) == {}


def test_sqlite_queues_its_writers_with_or_without_a_url(tmp_path):
    embedded = databases("", var_dir=tmp_path)["default"]
    assert embedded["NAME"] == tmp_path / "trainyard.sqlite3"
    named = databases(f"sqlite:///{tmp_path}/other.sqlite3", var_dir=tmp_path)["default"]
    for default in (embedded, named):
        assert default["OPTIONS"] == {"timeout": 30, "transaction_mode": "IMMEDIATE"}
