"""Every API operation, fed generated input by schemathesis: no 500s, every error JSON.

The schema is the one the API serves (``/api/v1/openapi.json``); the calls go
through the real WSGI application with a bearer token, inside the test's
transaction, against a site with nodes, a project and a few jobs.
"""

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from accounts.models import ApiToken
from tests.job_site import build_site

application = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def bearer(owner, project) -> Iterator[dict[str, str]]:
    """The owner's token header; Django's per-request connection handling paused.

    Django closes a connection at the end of a request when it is inside a
    transaction it did not open (the test's); its test client pauses that the
    same way.
    """
    build_site(project=project, billing_for=[owner])
    _row, token = ApiToken.issue(user=owner)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield {"Authorization": f"Bearer {token}"}
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def errors_are_json(ctx, response, case) -> None:
    """A refusal says why in JSON, as the rest of the API does."""
    if response.status_code >= 400:
        content_type = response.headers.get("content-type", [""])[0]
        assert content_type.startswith("application/json"), (
            f"{response.status_code} answered as {content_type!r}: {response.text[:200]}"
        )
        response.json()


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_operation_survives_generated_input(case, bearer):
    case.call_and_validate(
        headers=bearer, checks=[not_a_server_error], additional_checks=[errors_are_json]
    )
