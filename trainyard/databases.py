"""``DATABASES`` from ``DATABASE_URL``: PostgreSQL on a site, an SQLite file without one.

On PostgreSQL each connection prepares the statements it runs again and again
(psycopg's ``prepare_threshold``, with server-side binding, which preparing needs):
PostgreSQL then parses and plans such a statement once per connection instead of on
every execution. Trainyard's statements are few and repeated thousands of times (a
submission, a scheduling pass, a Slurm report), and planning was most of the database's
CPU for them: ``bench/prepared_statements.py`` measures it. A pooler in transaction mode
that cannot keep prepared statements (PgBouncer before 1.21, or without
``max_prepared_statements``) needs ``TRAINYARD_DB_PREPARED_STATEMENTS=0``.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url

# How often a connection runs a statement before it prepares it (psycopg counts, per
# connection; it keeps the last 100 prepared).
PREPARE_THRESHOLD = 2
# The embedded run has a web server, a worker and beat on one file: writers queue for it.
SQLITE_OPTIONS = {"timeout": 30, "transaction_mode": "IMMEDIATE"}


def databases(url: str, *, var_dir: Path, prepared: bool = True) -> dict:
    """``url``: ``DATABASE_URL`` ('' for the embedded SQLite file under ``var_dir``)."""
    if not url:
        return {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": var_dir / "trainyard.sqlite3",
                "OPTIONS": dict(SQLITE_OPTIONS),
                # A file, not memory, so a real worker process can share the test database.
                "TEST": {"NAME": var_dir / "test.sqlite3"},
            }
        }
    # Connections are kept a minute, and checked before reuse (a restarted server).
    default = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    if default["ENGINE"].endswith("sqlite3"):
        default["OPTIONS"] = dict(SQLITE_OPTIONS)
    elif prepared:
        default.setdefault("OPTIONS", {}).update(
            server_side_binding=True, prepare_threshold=PREPARE_THRESHOLD
        )
    return {"default": default}
