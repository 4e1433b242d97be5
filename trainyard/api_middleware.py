"""The JSON API answers in JSON, whatever refuses a request, and refuses text it cannot store.

Django and django-ninja answer some refusals themselves, before or around the
API's views: an unknown path (404), a method an operation lacks (405), a body
over the upload limit (400), an unexpected error (500). Each is plain text or
HTML; under ``/api/`` they become ``{"detail": "<reason>"}`` with the same
status and headers.

PostgreSQL text cannot hold the NUL character. The pages' form fields refuse it
one by one (Django's ``ProhibitNullCharactersValidator``); the API's schemas
take any string, so it is refused here once, naming the field, before a view
could hand it to the database.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/"
# Response headers a JSON refusal keeps (what a client needs to act on it).
KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After")


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


class ApiJsonErrorsMiddleware:
    """A refusal under ``/api/`` that is not JSON becomes ``{"detail": reason}``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api(request) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        answer = JsonResponse({"detail": response.reason_phrase}, status=response.status_code)
        for header in KEPT_HEADERS:
            if header in response:
                answer[header] = response[header]
        return answer


class ApiTextInputMiddleware:
    """A query value or JSON string under ``/api/`` holding NUL is a 422 naming its field."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api(request):
            fields = sorted(set(_fields_with_nul(request)))
            if fields:
                message = str(ProhibitNullCharactersValidator.message)
                return JsonResponse({"errors": {f: [message] for f in fields}}, status=422)
        return self.get_response(request)


def _fields_with_nul(request: HttpRequest) -> Iterator[str]:
    for key, values in request.GET.lists():
        if any("\x00" in value for value in values):
            yield key
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    # In UTF-8 JSON a NUL can only be the escape \u0000 (a raw one is invalid JSON);
    # UTF-16 and UTF-32 JSON, which json.loads reads too, hold zero bytes. A body with
    # neither is not parsed twice.
    body = request.body
    if b"\\u0000" in body or b"\0" in body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return  # ninja answers 400 "Cannot parse request body"
        yield from _paths_with_nul(parsed, "")


def _paths_with_nul(value: Any, path: str) -> Iterator[str]:
    """Dotted paths (``resources.gpu_model``, ``datasets.0``) of strings holding NUL."""
    if isinstance(value, str):
        if "\x00" in value:
            yield path or "__all__"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _paths_with_nul(item, f"{path}.{key}" if path else str(key))
            if "\x00" in key:
                yield path or "__all__"
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths_with_nul(item, f"{path}.{index}" if path else str(index))
