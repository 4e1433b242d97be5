"""Input that once answered 500 (found by tests/test_api_fuzz.py) is refused by name.

PostgreSQL cannot store NUL in text or an offset past bigint; decimal
formatting could not write 10^30 cores. Each is now a 4xx JSON answer.
"""

import json

import pytest

from accounts.models import ApiToken
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db

JSON = "application/json"
HUGE = 10**23
NUL_MESSAGE = ["Null characters are not allowed."]


@pytest.fixture
def api(client, owner, project):
    build_site(project=project, billing_for=[owner])
    _row, token = ApiToken.issue(user=owner)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("/api/v1/jobs?state=%00&project=x%00", ["project", "state"]),
        ("/api/v1/estimates?template=%00&gpu_model=V100", ["template"]),
        ("/api/v1/billing/statement?month=2026-01%00", ["month"]),
    ],
)
def test_nul_in_a_query_is_a_422_naming_the_field(api, query, fields):
    response = api.get(query)
    assert response.status_code == 422
    assert response.json() == {"errors": {field: NUL_MESSAGE for field in fields}}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (job_body(project="vision\x00"), ["project"]),
        (job_body(name="a\x00b", command="\x00"), ["command", "name"]),
        (job_body(datasets=["cats", "\x00"]), ["datasets.1"]),
        (job_body(resources={"kind": "gpu", "gpu_model": "V100\x00"}), ["resources.gpu_model"]),
    ],
)
def test_nul_in_a_json_body_is_a_422_naming_the_field(api, body, fields):
    response = api.post("/api/v1/jobs", body, content_type=JSON)
    assert response.status_code == 422
    assert response.json() == {"errors": {field: NUL_MESSAGE for field in fields}}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_nul_in_a_json_body_of_another_encoding_is_a_422_too(api, encoding):
    body = json.dumps(job_body(name="a\x00b")).encode(encoding)
    response = api.post("/api/v1/jobs", body, content_type=JSON)
    assert response.status_code == 422
    assert response.json() == {"errors": {"name": NUL_MESSAGE}}


@pytest.mark.parametrize(("name", "limit"), [("offset", 2**31 - 1), ("limit", 1000)])
def test_paging_past_the_bound_is_a_422_naming_the_limit(api, name, limit):
    response = api.get(f"/api/v1/jobs?{name}={HUGE}")
    assert response.status_code == 422
    assert response.json() == {"errors": {name: [f"Input should be less than or equal to {limit}"]}}
    assert api.get(f"/api/v1/jobs?{name}={limit}").status_code == 200


@pytest.mark.parametrize(
    ("resources", "reason"),
    [
        ({"kind": "cpu", "cpu_cores": 1e30}, "no node has 1" + "0" * 30 + " CPU cores"),
        ({"kind": "cpu", "cpu_cores": 1, "memory_gib": 1e30}, "no node has 1" + "0" * 30 + " GiB"),
    ],
)
def test_an_absurd_amount_is_infeasible_not_a_crash(api, resources, reason):
    response = api.post(
        "/api/v1/resources/feasibility", {"resources": resources}, content_type=JSON
    )
    assert response.status_code == 200
    answer = response.json()
    assert answer["feasible"] is False
    assert any(r.startswith(reason) for r in answer["reasons"]), answer["reasons"]
    submitted = api.post("/api/v1/jobs", job_body(resources=resources), content_type=JSON)
    assert submitted.status_code == 422


@pytest.mark.parametrize(
    ("method", "path", "status", "detail"),
    [
        ("get", "/api/v1/no-such-thing", 404, "Not Found"),
        ("delete", "/api/v1/gpu-models", 405, "Method Not Allowed"),
        ("put", "/api/v1/jobs", 405, "Method Not Allowed"),
    ],
)
def test_refusals_outside_the_views_are_json(api, method, path, status, detail):
    response = getattr(api, method)(path)
    assert response.status_code == status
    assert response["Content-Type"].startswith(JSON)
    assert response.json() == {"detail": detail}
    if status == 405:
        assert "GET" in response["Allow"]


def test_pages_keep_their_html_refusals(owner_client):
    response = owner_client.get("/jobs/999999/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    "field",
    ["project", "name", "command", "template", "augmentation_command", "code_version", "image"],
)
def test_a_lone_surrogate_in_a_text_field_is_a_422_naming_it(api, field):
    """Finding 8: PostgreSQL (UTF-8) cannot store "\\ud800"; it answered 500."""
    body = json.dumps(job_body(**{field: "x\ud800"}))
    response = api.post("/api/v1/jobs", body, content_type=JSON)
    assert response.status_code == 422, response.content
    assert list(response.json()["errors"]) == [field]


def test_a_body_nested_50000_deep_is_a_4xx_not_a_recursion_error(api):
    body = "[" * 50_000 + '"\\u0000"' + "]" * 50_000
    response = api.post("/api/v1/jobs", body, content_type=JSON)
    assert 400 <= response.status_code < 500
    assert response.json()


def test_an_anonymous_post_is_a_401_not_a_csrf_403(client, db):
    """Finding 10: the README promises 401 without a token; it answered 403 CSRF."""
    client.handler.enforce_csrf_checks = True
    response = client.post("/api/v1/jobs", job_body(), content_type=JSON)
    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication required"}
