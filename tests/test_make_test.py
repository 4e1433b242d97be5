"""`make test`, the README's test command, runs the suite on this machine's real services.

A newcomer runs `make test` with nothing set: the suite must not fall back to SQLite and
no Redis, where tests that need them fail or skip (CI sets nothing either: `.ci/run` is
`make test`).
"""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICES = ("DATABASE_URL", "REDIS_URL", "TRAINYARD_REQUIRE_SERVICES")


def suite_line(**env: str) -> str:
    """The line `make test` would run the suite with (``make -n``: printed, not run)."""
    clean = {k: v for k, v in os.environ.items() if k not in SERVICES and not k.startswith("MAKE")}
    result = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if "/pytest " in line)


def test_make_test_runs_on_local_postgresql_and_redis_by_default():
    line = suite_line()
    assert "DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard " in line
    assert "REDIS_URL=redis://127.0.0.1:6379/0 " in line
    # and a missing service fails the run instead of skipping tests
    assert "TRAINYARD_REQUIRE_SERVICES=1 " in line


def test_make_test_keeps_the_services_the_environment_names():
    line = suite_line(
        DATABASE_URL="postgres://ci@db.example:5432/other", REDIS_URL="redis://cache:6379/3"
    )
    assert "DATABASE_URL=postgres://ci@db.example:5432/other " in line
    assert "REDIS_URL=redis://cache:6379/3 " in line
