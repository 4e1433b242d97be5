"""The site's own error pages: a 404 in the site's look and the reader's language, a 500 page
that needs neither the database nor the request, and Django's debug pages only when asked."""

import pytest
from django.conf import settings
from django.test import RequestFactory
from django.utils import translation
from django.views.defaults import server_error

from tests.test_settings import run_python, settings_with


@pytest.mark.parametrize(
    ("language", "title", "back"),
    [("en", "Page not found", "Jobs"), ("zh-hans", "找不到页面", "任务")],
)
def test_a_missing_page_is_the_sites_own_404(owner_client, language, title, back):
    owner_client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    response = owner_client.get("/jobs/no-such-page/")
    assert response.status_code == 404
    assert "404.html" in [template.name for template in response.templates]
    page = response.content.decode()
    assert f"<h1>{title}</h1>" in page
    assert 'class="topbar"' in page  # the site's header and navigation
    assert f">{back}</a>" in page


@pytest.mark.parametrize(
    ("language", "title"), [("en", "Something went wrong"), ("zh-hans", "出错了")]
)
def test_the_500_page_needs_neither_the_database_nor_the_request(language, title):
    # No database fixture: any query would raise.
    request = RequestFactory().get("/jobs/")  # no session, no user: middleware may have failed
    with translation.override(language):
        response = server_error(request)
    page = response.content.decode()
    assert response.status_code == 500
    assert title in page
    assert "/static/css/trainyard.css" in page
    assert f'lang="{language}"' in page


def test_api_refusals_stay_json(owner_client):
    response = owner_client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_make_runs_default_shows_no_debug_page_unless_asked(tmp_path):
    assert settings_with({}, tmp_path)["debug"] is False
    assert settings_with({"TRAINYARD_DEBUG": "1"}, tmp_path)["debug"] is True


PATHS = ("/healthz", "/static/css/trainyard.css", "/static/django_htmx/htmx-2.min.js")
SERVE = (
    "import django; django.setup(); from django.test import Client\n"
    "for host in ('127.0.0.1', 'localhost', 'evil.example'):\n"
    f"    for path in {PATHS!r}:\n"
    "        print(host, path, Client(HTTP_HOST=host).get(path).status_code)\n"
)


def test_without_debug_make_run_still_serves_static_files_on_its_hosts(tmp_path):
    result = run_python(SERVE, {}, tmp_path)
    assert result.returncode == 0, result.stderr
    statuses = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    for host in ("127.0.0.1", "localhost"):
        assert [statuses[f"{host} {path}"] for path in PATHS] == ["200"] * len(PATHS), host
    assert statuses["evil.example /healthz"] == "400"
