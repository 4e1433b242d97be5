import os

import pytest
from django.conf import settings
from django.contrib.auth.hashers import get_hashers, get_hashers_by_algorithm
from django.db import connection
from django.utils import translation

from billing.fair_share import forget_recent_usage
from tests.factories import ProjectFactory, UserFactory
from tests.support import processes as processes_
from tests.support.browser_network import (
    BrowserNetwork,
    browser_network_make,
    browser_network_remove,
)
from tests.support.waiting import wait_until
from tests.support.workers import (
    empty_broker,
    give_each_test_its_own_id,
    group_shared_host_tests,
    isolate_this_worker,
    number_attempts_apart,
    worker_index,
)

BROWSER_NETWORK = pytest.StashKey[BrowserNetwork]()

# Workers, agents and beat started by tests log every task: tests wait on those lines.
os.environ.setdefault("TRAINYARD_VERBOSE", "1")

# The real node agent fixtures (``agent``, ``agent_env``).
pytest_plugins = [
    "tests.agent_support",
    "tests.slurm_support",
    "tests.browser_support",
    "tests.executor_sites",
    "tests.support.tiny_images",
    "tests.support.registry",
    "tests.support.borrowing",
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
    if worker_index() is None:  # the run's first process: before any worker starts
        config.stash[BROWSER_NETWORK] = browser_network_make()
    # The tests' users log in with a cheap hash: PBKDF2's million rounds cost 0.2 s of CPU a
    # user, and the suite makes thousands. Production keeps Django's default hashers.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    get_hashers.cache_clear()
    get_hashers_by_algorithm.cache_clear()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, its replica attempts numbered apart (tests/support)."""
    with django_db_blocker.unblock():
        number_attempts_apart(connection)


def pytest_unconfigure(config: pytest.Config) -> None:
    if (network := config.stash.get(BROWSER_NETWORK, None)) is not None:
        browser_network_remove(network)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    give_each_test_its_own_id(items)
    group_shared_host_tests(config, items)


@pytest.fixture(autouse=True)
def site_language():
    """Each test starts and ends in the site's language. A request leaves the language
    LocaleMiddleware chose active in the thread, and on parallel workers any test may come
    next: lazy texts read afterwards would be in the last request's language."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def fresh_fair_share():
    """A test's factors read its own ledger: not the decayed usage an earlier test on this
    worker left in the cache (``billing.fair_share.recent_usage``)."""
    forget_recent_usage()


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

    ``start_celery_worker(queues="celery,node.gpu01", env={...})`` returns the Popen,
    once the worker is ready; its log is ``tmp_path / "worker-<n>.log"``.
    """
    processes = []
    empty_broker()

    def start(queues: str = "celery", env: dict | None = None, concurrency: int = 2):
        child_env = {
            **os.environ,
            "DATABASE_URL": database_url_for_subprocess(),
            "TRAINYARD_VAR_DIR": str(settings.VAR_DIR),
            **(env or {}),
        }
        log = tmp_path / f"worker-{len(processes)}.log"
        name = f"test{len(processes)}-{os.getpid()}@%h"
        argv = processes_.celery("worker", queues=queues, concurrency=concurrency, hostname=name)
        proc = processes_.launch(argv, env=child_env, log=log)
        processes.append(proc)
        wait_until(
            lambda: "ready." in log.read_text() or proc.poll() is not None,
            what="the Celery worker ready",
            timeout=30,
            logs=log.read_text,
        )
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        return proc

    yield start
    processes_.stop(processes, timeout=15)
