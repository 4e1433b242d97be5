"""The JSON API under /api/v1/: personal bearer tokens or the browser session.

Each app contributes a router (``<app>/api.py``). Field errors from services
(Django ``ValidationError``) become ``422 {"errors": {"<field>": ["message"]}}``.
"""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import NinjaAPI
from ninja.errors import AuthenticationError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import HttpBearer
from ninja.security.session import SessionAuth

from accounting.api import router as billing_router
from accounts.models import ApiToken, hash_token
from jobs.api import router as jobs_router
from jobs.api_jobs import router as job_api_router
from jobs.api_queue import router as queue_api_router
from jobs.api_resources import router as free_api_router
from jobs.estimates.api import router as estimates_router
from resources.api import router as resources_router

NON_FIELD = "__all__"
# A token's last use is written at most this often: not a write and a commit on every
# request of a script that polls or submits in a burst.
LAST_USE_PRECISION = timedelta(minutes=1)


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        row = ApiToken.objects.select_related("user").filter(token_hash=hash_token(token)).first()
        if row is None or not row.user.is_active:
            return None
        now = timezone.now()
        if row.last_used_at is None or now - row.last_used_at >= LAST_USE_PRECISION:
            ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        request.user = row.user
        return row.user


class BrowserSession(SessionAuth):
    """The browser's session; its CSRF check only matters once there is a session to abuse.

    Without one the request is anonymous and answers 401, as a request with a
    bad token does, not ninja's "403 CSRF check Failed".
    """

    def _get_key(self, request: HttpRequest):
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


api = NinjaAPI(
    title="Trainyard API",
    version="1",
    urls_namespace="api",
    auth=[BearerToken(), BrowserSession()],
    openapi_url="/openapi.json",
    docs_url="/docs",
)


def errors_of(exc: ValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "error_dict"):
        return {
            field: [str(m) for e in errs for m in e.messages]
            for field, errs in exc.error_dict.items()
        }
    return {NON_FIELD: [str(m) for m in exc.messages]}


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return api.create_response(request, {"errors": errors_of(exc)}, status=422)


@api.exception_handler(NinjaValidationError)
def on_schema_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        loc = [
            str(part) for part in error.get("loc", []) if part not in ("body", "payload", "query")
        ]
        message = error.get("msg", "invalid")
        if error.get("type") == "extra_forbidden":
            message = _("Unknown field: check its spelling against the API's fields.")
        errors.setdefault(".".join(loc) or NON_FIELD, []).append(message)
    return api.create_response(request, {"errors": errors}, status=422)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return api.create_response(request, {"detail": "Authentication required"}, status=401)


def register_routers() -> None:
    api.add_router("/", resources_router)
    api.add_router("/", jobs_router)
    api.add_router("/", job_api_router)
    api.add_router("/", queue_api_router)
    api.add_router("/", estimates_router)
    api.add_router("/", free_api_router)
    api.add_router("/billing", billing_router)


register_routers()
