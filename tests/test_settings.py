"""Settings come from the environment; both the embedded and production modes parse."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'broker': s.CELERY_BROKER_URL, "
    "'cache': s.CACHES['default']['BACKEND'], 'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS, "
    "'acks_late': s.CELERY_TASK_ACKS_LATE, 'prefetch': s.CELERY_WORKER_PREFETCH_MULTIPLIER, "
    "'accept': s.CELERY_ACCEPT_CONTENT, 'reject_lost': s.CELERY_TASK_REJECT_ON_WORKER_LOST}))"
)
BASE_ENV = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "trainyard.settings"}


def run_python(code: str, env: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    full_env = {**BASE_ENV, "TRAINYARD_VAR_DIR": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=full_env, capture_output=True, text=True
    )


def settings_with(env: dict, tmp_path: Path) -> dict:
    result = run_python(PROBE, env, tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_embedded_mode_uses_sqlite_and_file_broker(tmp_path):
    parsed = settings_with({}, tmp_path)
    assert parsed["engine"] == "django.db.backends.sqlite3"
    assert parsed["broker"] == "filesystem://localhost//"
    assert parsed["cache"].endswith("LocMemCache")
    assert parsed["debug"] is False  # debug pages only with TRAINYARD_DEBUG=1


def test_the_development_secret_key_is_readable_by_its_owner_only(tmp_path):
    settings_with({}, tmp_path)
    key = tmp_path / "dev-secret-key"
    assert key.stat().st_mode & 0o777 == 0o600
    key.chmod(0o644)  # as an older version left it
    settings_with({}, tmp_path)
    assert key.stat().st_mode & 0o777 == 0o600


def test_production_mode_uses_postgres_and_redis(tmp_path):
    parsed = settings_with(
        {
            "DATABASE_URL": "postgres://u:p@db.example:5432/trainyard",
            "REDIS_URL": "redis://cache.example:6379/1",
            "DEBUG": "0",
            "SECRET_KEY": "x" * 60,
            "ALLOWED_HOSTS": "trainyard.example,api.example",
            "TRAINYARD_PROXY_ORIGIN": "https://jobs.example-ports.net",
        },
        tmp_path,
    )
    assert parsed["engine"] == "django.db.backends.postgresql"
    assert parsed["broker"] == "redis://cache.example:6379/1"
    assert parsed["cache"].endswith("RedisCache")
    assert parsed["debug"] is False
    # The jobs' ports' sites too (docs/port-proxy.md): j<job>-<port>.jobs.example-ports.net.
    assert parsed["hosts"] == ["trainyard.example", "api.example", ".jobs.example-ports.net"]


def test_celery_is_configured_for_reliability(tmp_path):
    parsed = settings_with({}, tmp_path)
    assert parsed["acks_late"] is True
    assert parsed["reject_lost"] is True
    assert parsed["prefetch"] == 1
    assert parsed["accept"] == ["json"]


def test_secret_key_required_when_debug_off(tmp_path):
    result = run_python(PROBE, {"DEBUG": "0"}, tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize("debug", ["0", "false"])
def test_check_deploy_is_clean_with_production_variables(tmp_path, debug):
    env = {
        **BASE_ENV,
        "TRAINYARD_VAR_DIR": str(tmp_path),
        "DEBUG": debug,
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnop",
        "ALLOWED_HOSTS": "trainyard.example",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/trainyard",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
