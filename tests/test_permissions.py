"""Who may do what: every URL of the site and every API operation × the five roles.

Roles: anonymous, outsider (signed in, nothing of theirs here), project member,
owner (of the job and its project), staff (a superuser outside the project, who
may open, follow and stop every job).
The table below is the contract; a URL or API operation without a row fails
``test_every_url_has_a_row`` / ``test_every_api_operation_has_a_row``. Admin
pages come from the admin's registry: staff only, for every model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLResolver, get_resolver
from django.utils import timezone

from accounts.models import ApiToken
from jobs.models import Job, PersonalTemplate
from tests.job_site import job_body
from tests.permission_world import ROLES, World, build_world, make_staff

pytestmark = pytest.mark.django_db

LOGIN = "login"  # 302 to the site's log-in page
ADMIN_LOGIN = "admin-login"  # 302 to the admin's log-in page (signed in, not staff)
# Everyone but staff (anonymous, then signed in without staff): the admin's own pages.
NOT_STAFF = (LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN)
SIGNED_IN_ONLY = (LOGIN, 200, 200, 200, 200)
# A job's page: its owner, project members and staff (who operate every job).
PROJECT_ONLY = (LOGIN, 404, 200, 200, 200)
STAFF_ONLY = (LOGIN, 403, 403, 403, 200)
API_SIGNED_IN = (401, 200, 200, 200, 200)
API_PROJECT_ONLY = (401, 404, 200, 200, 200)
EVERYONE = (200,) * 5


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # formatted with the world's ids: {job} {attempt} {template} {token} {account}
    expected: tuple
    data: dict = field(default_factory=dict)


# Pages, by URL pattern; within a pattern and across patterns in the order they are asked
# (a role's run shares one world: what stops, deletes or signs out comes last).
PAGES: dict[str, list[Case]] = {
    "": [Case("GET", "/", (LOGIN, 302, 302, 302, 302))],
    "accounts/login/": [Case("GET", "/accounts/login/", EVERYONE)],
    "profile/": [
        Case("GET", "/profile/", SIGNED_IN_ONLY),
        Case("POST", "/profile/", SIGNED_IN_ONLY, {"name": "laptop"}),
    ],
    "i18n/setlang/": [Case("POST", "/i18n/setlang/", (302,) * 5, {"language": "en"})],
    "jobs/": [Case("GET", "/jobs/", SIGNED_IN_ONLY)],
    "jobs/new/": [Case("GET", "/jobs/new/", SIGNED_IN_ONLY)],
    "jobs/new/estimate/": [Case("POST", "/jobs/new/estimate/", SIGNED_IN_ONLY)],
    "jobs/<int:pk>/": [Case("GET", "/jobs/{job}/", PROJECT_ONLY)],
    "jobs/<int:pk>/runtime/": [Case("GET", "/jobs/{job}/runtime/", PROJECT_ONLY)],
    "jobs/<int:pk>/usage/": [Case("GET", "/jobs/{job}/usage/", PROJECT_ONLY)],
    "jobs/<int:pk>/logs/<int:attempt_id>/download/": [
        Case("GET", "/jobs/{job}/logs/{attempt}/download/", PROJECT_ONLY)
    ],
    "jobs/<int:pk>/outputs/<int:replica>/<str:storage>/<outputpath:path>": [
        Case("GET", "/jobs/{job}/outputs/0/v100-a/metrics.json", PROJECT_ONLY)
    ],
    # Who may see the job's outputs may download the checkpoint it keeps beside them.
    "jobs/<int:pk>/checkpoint/<int:replica>/<str:storage>/<outputpath:path>": [
        Case("GET", "/jobs/{job}/checkpoint/0/v100-a/state.pt", PROJECT_ONLY)
    ],
    "jobs/<int:pk>/ports/": [
        Case("POST", "/jobs/{job}/ports/", (LOGIN, 404, 302, 302, 302), {"ports": "8888"})
    ],
    # The "Open" link of a port (the ports row above opened 8888): to the port's own site.
    "jobs/<int:pk>/ports/<int:port>/open/": [
        Case("GET", "/jobs/{job}/ports/8888/open/", (LOGIN, 404, 302, 302, 302))
    ],
    # The proxy's own paths answer on a port's site only (tests/test_port_proxy_views.py).
    "_trainyard/login": [Case("GET", "/_trainyard/login", (404,) * 5)],
    "_trainyard/auth": [Case("GET", "/_trainyard/auth", (404,) * 5)],
    "_trainyard/start": [Case("GET", "/_trainyard/start", (404,) * 5)],
    "_trainyard/refused": [Case("GET", "/_trainyard/refused", (404,) * 5)],
    "jobs/<int:pk>/save-template/": [
        Case(
            "POST",
            "/jobs/{job}/save-template/",
            (LOGIN, 404, 302, 302, 302),
            {"template_name": "copy"},
        )
    ],
    "jobs/templates/": [Case("GET", "/jobs/templates/", SIGNED_IN_ONLY)],
    # A template is its owner's alone: even project members get a 404.
    "jobs/templates/<int:pk>/delete/": [
        Case("POST", "/jobs/templates/{template}/delete/", (LOGIN, 404, 404, 302, 404))
    ],
    "jobs/<int:pk>/stop/": [Case("POST", "/jobs/{job}/stop/", (LOGIN, 404, 302, 302, 302))],
    "jobs/queue/": [Case("GET", "/jobs/queue/", SIGNED_IN_ONLY)],
    # Only the owner moves their job, only staff set a priority (the world's job runs: the
    # page says why nothing moved).
    "jobs/<int:pk>/move/": [
        Case("POST", "/jobs/{job}/move/", (LOGIN, 404, 403, 302, 403), {"direction": "up"})
    ],
    "jobs/<int:pk>/priority/": [
        Case("POST", "/jobs/{job}/priority/", (LOGIN, 404, 403, 403, 302), {"priority": "10"})
    ],
    "resources/": [Case("GET", "/resources/", SIGNED_IN_ONLY)],
    "resources/free/refresh/": [
        Case("POST", "/resources/free/refresh/", (LOGIN, 302, 302, 302, 302))
    ],
    "resources/utilisation/": [Case("GET", "/resources/utilisation/", STAFF_ONLY)],
    "billing/": [Case("GET", "/billing/", SIGNED_IN_ONLY)],
    "billing/statement.csv": [Case("GET", "/billing/statement.csv", SIGNED_IN_ONLY)],
    "billing/overview/": [Case("GET", "/billing/overview/", STAFF_ONLY)],
    "billing/overview.csv": [Case("GET", "/billing/overview.csv", STAFF_ONLY)],
    "billing/accounts/<int:account_id>/": [Case("GET", "/billing/accounts/{account}/", STAFF_ONLY)],
    "billing/accounts/<int:account_id>/statement.csv": [
        Case("GET", "/billing/accounts/{account}/statement.csv", STAFF_ONLY)
    ],
    "billing/accounts/<int:account_id>/enable/": [
        Case("GET", "/billing/accounts/{account}/enable/", STAFF_ONLY),
        Case("POST", "/billing/accounts/{account}/enable/", (LOGIN, 403, 403, 403, 302)),
    ],
    "billing/accounts/<int:account_id>/disable/": [
        Case("GET", "/billing/accounts/{account}/disable/", STAFF_ONLY),
        Case("POST", "/billing/accounts/{account}/disable/", (LOGIN, 403, 403, 403, 302)),
    ],
    "notifications/": [Case("GET", "/notifications/", SIGNED_IN_ONLY)],
    "notifications/read/": [Case("POST", "/notifications/read/", (LOGIN, 302, 302, 302, 302))],
    "notifications/settings/": [Case("GET", "/notifications/settings/", SIGNED_IN_ONLY)],
    # Public: the API's schema and docs, the health check.
    "api/v1/openapi.json": [Case("GET", "/api/v1/openapi.json", EVERYONE)],
    "api/v1/docs": [Case("GET", "/api/v1/docs", EVERYONE)],
    "api/v1/": [Case("GET", "/api/v1/", (404,) * 5)],
    "healthz": [Case("GET", "/healthz", EVERYONE)],
    "favicon.ico": [Case("GET", "/favicon.ico", (LOGIN, 302, 302, 302, 302))],
    # The admin's own pages (the per-model ones follow from the registry).
    "admin/": [Case("GET", "/admin/", (*NOT_STAFF, 200))],
    # Signed in but not staff: the admin's log-in page says so (and is throttled like ours).
    "admin/login/": [Case("GET", "/admin/login/", (LOGIN, 200, 200, 200, 302))],
    "admin/password_change/": [Case("GET", "/admin/password_change/", (*NOT_STAFF, 200))],
    "admin/password_change/done/": [Case("GET", "/admin/password_change/done/", (*NOT_STAFF, 200))],
    "admin/autocomplete/": [Case("GET", "/admin/autocomplete/", (*NOT_STAFF, 403))],
    "admin/jsi18n/": [Case("GET", "/admin/jsi18n/", (*NOT_STAFF, 200))],
    "admin/r/<path:content_type_id>/<path:object_id>/": [
        Case("GET", "/admin/r/0/0/", (*NOT_STAFF, 404))
    ],
    "admin/^(?P<app_label>auth|accounts|resources|jobs|billing|notifications|axes)/$": [
        Case("GET", "/admin/jobs/", (*NOT_STAFF, 200)),
        Case("GET", "/admin/accounts/", (*NOT_STAFF, 200)),
    ],
    "admin/(?P<url>.*)$": [Case("GET", "/admin/no-such-page/", (*NOT_STAFF, 404))],
    # Last: what revokes and signs out. Nobody revokes another's token ("no such token").
    "profile/tokens/<int:token_id>/revoke/": [
        Case("POST", "/profile/tokens/{token}/revoke/", (LOGIN, 302, 302, 302, 302))
    ],
    "admin/logout/": [Case("POST", "/admin/logout/", (LOGIN, 302, 302, 302, 302))],
    "accounts/logout/": [Case("POST", "/accounts/logout/", (LOGIN, 302, 302, 302, 302))],
}

# API operations (bearer tokens; anonymous sends none), in the order they are asked.
API: dict[tuple[str, str], list[Case]] = {
    ("GET", "/api/v1/gpu-models"): [Case("GET", "/api/v1/gpu-models", API_SIGNED_IN)],
    ("GET", "/api/v1/specs"): [Case("GET", "/api/v1/specs", API_SIGNED_IN)],
    ("GET", "/api/v1/projects"): [Case("GET", "/api/v1/projects", API_SIGNED_IN)],
    ("GET", "/api/v1/templates"): [Case("GET", "/api/v1/templates", API_SIGNED_IN)],
    ("GET", "/api/v1/estimates"): [
        Case("GET", "/api/v1/estimates?gpu_model=V100&command=python+train.py", API_SIGNED_IN)
    ],
    ("GET", "/api/v1/resources/free"): [Case("GET", "/api/v1/resources/free", API_SIGNED_IN)],
    ("POST", "/api/v1/resources/free/refresh"): [
        Case("POST", "/api/v1/resources/free/refresh", API_SIGNED_IN)
    ],
    ("POST", "/api/v1/resources/feasibility"): [
        Case(
            "POST",
            "/api/v1/resources/feasibility",
            API_SIGNED_IN,
            {"resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1}},
        )
    ],
    ("GET", "/api/v1/billing/statement"): [Case("GET", "/api/v1/billing/statement", API_SIGNED_IN)],
    ("GET", "/api/v1/jobs"): [Case("GET", "/api/v1/jobs", API_SIGNED_IN)],
    # Only the project's owner and members submit to it; anyone else is told it is not theirs.
    ("POST", "/api/v1/jobs"): [Case("POST", "/api/v1/jobs", (401, 422, 201, 201, 422), job_body())],
    ("GET", "/api/v1/jobs/{job_id}"): [Case("GET", "/api/v1/jobs/{job}", API_PROJECT_ONLY)],
    ("GET", "/api/v1/jobs/{job_id}/metrics"): [
        Case("GET", "/api/v1/jobs/{job}/metrics", API_PROJECT_ONLY)
    ],
    ("GET", "/api/v1/jobs/{job_id}/logs"): [
        Case("GET", "/api/v1/jobs/{job}/logs", API_PROJECT_ONLY)
    ],
    ("GET", "/api/v1/jobs/{job_id}/export"): [
        Case("GET", "/api/v1/jobs/{job}/export", API_PROJECT_ONLY)
    ],
    ("PATCH", "/api/v1/jobs/{job_id}"): [
        Case("PATCH", "/api/v1/jobs/{job}", API_PROJECT_ONLY, {"ports": [8888]})
    ],
    ("GET", "/api/v1/queue"): [Case("GET", "/api/v1/queue", API_SIGNED_IN)],
    ("POST", "/api/v1/jobs/{job_id}/move"): [
        Case("POST", "/api/v1/jobs/{job}/move", (401, 404, 403, 422, 403), {"direction": "up"})
    ],
    ("POST", "/api/v1/jobs/{job_id}/priority"): [
        Case("POST", "/api/v1/jobs/{job}/priority", (401, 404, 403, 403, 422), {"priority": "high"})
    ],
    ("POST", "/api/v1/jobs/{job_id}/stop"): [
        Case("POST", "/api/v1/jobs/{job}/stop", API_PROJECT_ONLY)
    ],
}

# Admin models whose ModelAdmin refuses an action to everyone (staff get 403).
ADMIN_NO_ADD = {
    "resources.sitesettings",
    "axes.accessattempt",
    "axes.accesslog",
    "axes.accessfailurelog",
}
ADMIN_NO_DELETE = {"resources.sitesettings", "billing.usagerecord"}


def admin_cases() -> dict[str, list[Case]]:
    """Every page of every registered model: staff only."""
    cases = {}
    for model in admin.site._registry:
        label = f"{model._meta.app_label}.{model._meta.model_name}"
        base = f"admin/{model._meta.app_label}/{model._meta.model_name}/"
        obj = f"/{base}{{admin:{label}}}/"
        add = 403 if label in ADMIN_NO_ADD else 200
        delete = 403 if label in ADMIN_NO_DELETE else 200
        cases[base] = [Case("GET", f"/{base}", (*NOT_STAFF, 200))]
        cases[f"{base}add/"] = [Case("GET", f"/{base}add/", (*NOT_STAFF, add))]
        cases[f"{base}<path:object_id>/change/"] = [Case("GET", f"{obj}change/", (*NOT_STAFF, 200))]
        cases[f"{base}<path:object_id>/history/"] = [
            Case("GET", f"{obj}history/", (*NOT_STAFF, 200))
        ]
        cases[f"{base}<path:object_id>/delete/"] = [
            Case("GET", f"{obj}delete/", (*NOT_STAFF, delete))
        ]
        cases[f"{base}<path:object_id>/"] = [Case("GET", obj, (*NOT_STAFF, 302))]
    user = "/admin/auth/user/{admin:auth.user}/password/"
    cases["admin/auth/user/<id>/password/"] = [Case("GET", user, (*NOT_STAFF, 200))]
    return cases


def url_patterns(patterns=None, prefix: str = "") -> list[str]:
    patterns = get_resolver().url_patterns if patterns is None else patterns
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found += url_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            found.append(prefix + str(pattern.pattern))
    return found


def openapi_operations(client: Client) -> set[tuple[str, str]]:
    document = client.get("/api/v1/openapi.json").json()
    return {(m.upper(), path) for path, ops in document["paths"].items() for m in ops}


def test_every_url_has_a_row():
    covered = set(PAGES) | set(admin_cases())
    api_paths = {re.sub(r"\{(\w+)\}", r"<\1>", path) for _m, path in API}
    missing = [p for p in url_patterns() if p not in covered and f"/{p}" not in api_paths]
    assert not missing, f"URLs without a row in the permission table: {missing}"


def test_every_api_operation_has_a_row(client):
    assert openapi_operations(client) == set(API)


def ids_of(world: World) -> dict[str, object]:
    ids = {
        "job": world.job.pk,
        "attempt": world.attempt.pk,
        "template": world.template.pk,
        "token": world.old_token.pk,
        "account": world.account.pk,
    }
    for model in admin.site._registry:
        label = f"{model._meta.app_label}.{model._meta.model_name}"
        row = model._default_manager.order_by("pk").first()
        assert row is not None, f"the world has no {label} for its admin pages"
        ids[f"admin:{label}"] = row.pk
    return ids


def ask(client: Client, case: Case, ids: dict, token: str | None):
    path = re.sub(r"\{([^}]+)\}", lambda m: str(ids[m.group(1)]), case.path)
    if path.startswith("/api/"):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        body = json.dumps(case.data) if case.data else None
        return path, client.generic(case.method, path, body or "", "application/json", **headers)
    return path, getattr(client, case.method.lower())(path, case.data)


def matches(response, expected) -> bool:
    location = response.get("Location", "")
    if expected == LOGIN:
        return response.status_code == 302 and location.startswith("/accounts/login/?next=")
    if expected == ADMIN_LOGIN:
        return response.status_code == 302 and location.startswith("/admin/login/?next=")
    return response.status_code == expected


@pytest.fixture
def world(owner, member, outsider, project, settings, tmp_path) -> World:
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    return build_world(
        owner=owner, member=member, outsider=outsider, staff=make_staff(), project=project
    )


@pytest.mark.parametrize("role", ROLES)
def test_each_role_gets_what_the_table_says(client, world, role):
    user, token = world.user(role), world.tokens.get(role)
    ids = ids_of(world)
    cases = [*admin_cases().values(), *API.values(), *PAGES.values()]
    wrong = []
    for case in (case for group in cases for case in group):
        if user is not None:
            client.force_login(user)  # again after each sign-out
        path, response = ask(client, case, ids, token)
        expected = case.expected[ROLES.index(role)]
        if not matches(response, expected):
            got = f"{response.status_code} {response.get('Location', '')}".strip()
            wrong.append(f"{case.method} {path}: {got}, expected {expected}")
    assert not wrong, f"as {role}:\n" + "\n".join(wrong)
    if role in ("anonymous", "outsider"):
        assert_untouched(world)


def assert_untouched(world: World) -> None:
    """What the refused roles asked for did not happen."""
    job = Job.objects.get(pk=world.job.pk)
    assert job.stop_requested_at is None and list(job.ports.values_list("port", flat=True)) == []
    assert PersonalTemplate.objects.filter(pk=world.template.pk).exists()
    assert ApiToken.objects.filter(pk=world.old_token.pk).exists()
    assert not Job.objects.exclude(pk=world.job.pk).exists()


def test_a_user_revokes_only_their_own_tokens(client, world):
    client.force_login(world.user("outsider"))
    response = client.post(f"/profile/tokens/{world.old_token.pk}/revoke/")
    assert response.status_code == 302
    assert ApiToken.objects.filter(pk=world.old_token.pk).exists()
    client.force_login(world.user("owner"))
    client.post(f"/profile/tokens/{world.old_token.pk}/revoke/")
    assert not ApiToken.objects.filter(pk=world.old_token.pk).exists()


@pytest.mark.parametrize("role", ["outsider", "member", "staff"])
def test_users_see_only_their_own_billing(client, world, role):
    """The owner's job is billed to the owner; nobody else's statement shows it."""
    month = timezone.now().strftime("%Y-%m")
    name = world.job.name
    client.force_login(world.user("owner"))
    assert name in client.get(f"/billing/?month={month}").content.decode()
    assert name in client.get(f"/billing/statement.csv?month={month}").content.decode()
    client.force_login(world.user(role))
    assert name not in client.get(f"/billing/?month={month}").content.decode()
    assert name not in client.get(f"/billing/statement.csv?month={month}").content.decode()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {world.tokens[role]}"}
    statement = client.get(f"/api/v1/billing/statement?month={month}", **bearer).json()
    assert statement["account"] == world.user(role).username
    assert statement["lines"] == []
    owners = client.get(
        f"/api/v1/billing/statement?month={month}",
        HTTP_AUTHORIZATION=f"Bearer {world.tokens['owner']}",
    ).json()
    assert {line["job_name"] for line in owners["lines"]} == {name}
