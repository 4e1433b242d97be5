"""A scratch PostgreSQL database for a benchmark: created (migrated) on entry, dropped on exit.

with scratch_database("bench"):
    ...  # the default connection now points at <DATABASE_URL's name>_bench
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_setup() -> None:
    """Make the project importable and set Django up (benches run as plain scripts)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")
    import django

    django.setup()


@contextmanager
def scratch_database(suffix: str) -> Iterator[dict]:
    """Yield the settings of ``<name>_<suffix>``, a fresh database of its own."""
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit(f"Set DATABASE_URL to a PostgreSQL database (the bench uses <name>_{suffix}).")
    db = settings.DATABASES["default"]
    db["TEST"]["NAME"] = f"{db['NAME']}_{suffix}"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield db
    finally:
        connection.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)
