"""Security headers on every answer, a Content-Security-Policy the templates keep, and
production settings that send cookies over HTTPS only (development stays on plain HTTP).

``tests/test_settings.py`` runs ``check --deploy`` with production variables; the
browser tests (which fail on any console error, a CSP violation included) prove
that the pages work under the policy.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.urls import reverse

from tests.test_settings import BASE_ENV, ROOT

pytestmark = pytest.mark.django_db

POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    # The log-in may go on to the job port's site it was asked for (docs/port-proxy.md).
    "form-action": "'self' http://*.jobs.localhost:*",
    "frame-ancestors": "'none'",
}
# What the policy refuses in markup: inline scripts, event handlers and style attributes,
# and htmx's hx-on (which needs eval).
INLINE = re.compile(
    r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\son[a-z]+\s*=|\sstyle\s*=|\shx-on\b", re.I
)


def policy_of(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in header.split(";") if part.strip())


@pytest.mark.parametrize(
    "path", ["/jobs/", "/jobs/new/", "/billing/", "/resources/", "/admin/", "/api/v1/projects"]
)
def test_every_answer_carries_the_policy_and_headers(admin_client_, path):
    response = admin_client_.get(path)
    assert response.status_code == 200
    assert policy_of(response) == POLICY
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"


def test_the_log_in_page_carries_the_policy(client):
    assert policy_of(client.get(reverse("login"))) == POLICY


def test_htmx_is_told_not_to_inject_its_indicator_styles(owner_client):
    page = owner_client.get(reverse("jobs:list")).content.decode()
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles": false}'>""" in page
    css = (ROOT / "static" / "css" / "trainyard.css").read_text()
    assert ".htmx-request .htmx-indicator" in css


def our_templates() -> list[Path]:
    """The site's and its apps' templates (Django's admin is checked in the browser)."""
    apps_here = [Path(app.path) / "templates" for app in apps.get_app_configs()]
    dirs = [ROOT / "templates", *(d for d in apps_here if d.parent.parent == ROOT)]
    return sorted(path for folder in dirs for path in folder.rglob("*.html"))


def test_no_template_has_markup_the_policy_refuses():
    offending = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for path in our_templates()
        for match in INLINE.finditer(path.read_text())
    ]
    assert len(our_templates()) > 20
    assert not offending, "\n".join(offending)


def production_settings(tmp_path: Path, debug: str) -> dict:
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: getattr(s, k) for k in ("
        "'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', "
        "'SECURE_HSTS_SECONDS', 'SESSION_COOKIE_HTTPONLY')}))"
    )
    env = {
        **BASE_ENV,
        "TRAINYARD_VAR_DIR": str(tmp_path),
        "DEBUG": debug,
        "SECRET_KEY": "k" * 60,
        "ALLOWED_HOSTS": "trainyard.example",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_production_cookies_and_transport_are_https_only(tmp_path):
    parsed = production_settings(tmp_path, "0")
    assert parsed == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SESSION_COOKIE_HTTPONLY": True,
    }


def test_development_stays_on_plain_http(tmp_path):
    parsed = production_settings(tmp_path, "1")
    assert parsed["SECURE_SSL_REDIRECT"] is False
    # The cookies are __Host- ones even here: Secure, which browsers keep on http://localhost
    # and 127.0.0.1 (docs/port-proxy.md).
    assert parsed["SESSION_COOKIE_SECURE"] is True
    assert parsed["SECURE_HSTS_SECONDS"] == 0
