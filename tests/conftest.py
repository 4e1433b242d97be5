import os

import pytest
from django.conf import settings

from tests.factories import ProjectFactory, UserFactory
from tests.support.workers import isolate_this_worker, mark_shared_host_tests

# Workers, agents and beat started by tests log every task: tests wait on those lines.
os.environ.setdefault("TRAINYARD_VERBOSE", "1")

# The real node agent fixtures (``agent``, ``agent_env``).
pytest_plugins = [
    "tests.agent_support",
    "tests.slurm_support",
    "tests.browser_support",
    "tests.executor_sites",
]


def pytest_configure(config: pytest.Config) -> None:
    # CI sets this: a missing DATABASE_URL must fail loudly, never fall back to SQLite.
    if os.environ.get("TRAINYARD_REQUIRE_SERVICES"):
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"CI requires PostgreSQL, got {engine}")
        if not os.environ.get("REDIS_URL"):
            raise pytest.UsageError("CI requires REDIS_URL")
    isolate_this_worker()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_shared_host_tests(items)


@pytest.fixture
def owner(db):
    return UserFactory(username="owner")


@pytest.fixture
def member(db):
    return UserFactory(username="member")


@pytest.fixture
def outsider(db):
    return UserFactory(username="outsider")


@pytest.fixture
def admin_user(db):
    return UserFactory(username="boss", is_staff=True, is_superuser=True)


@pytest.fixture
def project(owner, member):
    project = ProjectFactory(name="vision", owner=owner)
    project.members.add(member)
    return project


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def admin_client_(client, admin_user):
    client.force_login(admin_user)
    return client


def database_url_for_subprocess() -> str:
    """A DATABASE_URL for a child process that points at the test database."""
    db = settings.DATABASES["default"]
    if "sqlite" in db["ENGINE"]:
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


@pytest.fixture
def start_celery_worker(transactional_db, tmp_path):
    """Start real Celery worker processes on the test database; stopped after the test.

    ``start_celery_worker(queues="celery,node.gpu01", env={...})`` returns the Popen.
    """
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    processes: list[subprocess.Popen] = []

    def start(queues: str = "celery", env: dict | None = None, concurrency: int = 2):
        child_env = {
            **os.environ,
            "DATABASE_URL": database_url_for_subprocess(),
            "TRAINYARD_VAR_DIR": str(settings.VAR_DIR),
            **(env or {}),
        }
        log = open(tmp_path / f"worker-{len(processes)}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "trainyard",
                "worker",
                "-Q",
                queues,
                "--concurrency",
                str(concurrency),
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"test{len(processes)}-{os.getpid()}@%h",
            ],
            cwd=root,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        processes.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "ready." in (tmp_path / f"worker-{len(processes) - 1}.log").read_text():
                return proc
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError((tmp_path / f"worker-{len(processes) - 1}.log").read_text())

    yield start
    for proc in processes:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
