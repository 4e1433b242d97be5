"""The JSON API answers in JSON, whatever refuses a request, and refuses text it cannot store.

Django and django-ninja answer some refusals themselves, before or around the
API's views: an unknown path (404), a method an operation lacks (405), a body
over the upload limit (400), an unexpected error (500). Each is plain text or
HTML; under ``/api/`` they become ``{"detail": "<reason>"}`` with the same
status and headers.

PostgreSQL text cannot hold the NUL character, nor a lone surrogate (JSON's
``"\ud800"``, which UTF-8 cannot encode). The pages' form fields refuse NUL
one by one (Django's ``ProhibitNullCharactersValidator``; a form post cannot
carry a surrogate); the API's schemas take any string, so both are refused
here once, naming the field, before a view could hand them to the database.
A body nested deeper than ``MAX_JSON_DEPTH`` is refused before anything
parses it (Python's parser would recurse past its limit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _

API_PREFIX = "/api/"
# Response headers a JSON refusal keeps (what a client needs to act on it).
KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After")
# Deeper than any job body needs, far below the parser's recursion limit.
MAX_JSON_DEPTH = 64
# A JSON escape of a UTF-16 surrogate: what a lone one takes to get into a body.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


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
    """Under ``/api/``: text PostgreSQL cannot store is a 422 naming its field; so is deep JSON."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api(request):
            if request.method in ("POST", "PUT", "PATCH") and too_deep(request.body):
                message = _("The body is nested deeper than %(depth)d levels.") % {
                    "depth": MAX_JSON_DEPTH
                }
                return JsonResponse({"errors": {"__all__": [message]}}, status=422)
            errors = dict(_unstorable_fields(request))
            if errors:
                return JsonResponse(
                    {"errors": {field: [errors[field]] for field in sorted(errors)}}, status=422
                )
        return self.get_response(request)


def too_deep(body: bytes) -> bool:
    """Whether JSON ``body`` nests arrays and objects deeper than ``MAX_JSON_DEPTH``."""
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for token in JSON_TOKENS.finditer(body):
        mark = token[0]
        if mark in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif mark in (b"]", b"}"):
            depth -= 1
    return False


def _unstorable_fields(request: HttpRequest) -> Iterator[tuple[str, str]]:
    nul = str(ProhibitNullCharactersValidator.message)
    for key, values in request.GET.lists():
        if any("\x00" in value for value in values):
            yield key, nul
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    # In UTF-8 JSON a NUL can only be the escape \u0000 (a raw one is invalid JSON), a lone
    # surrogate only an escape; UTF-16 and UTF-32 JSON, which json.loads reads too, hold
    # zero bytes. A body with none of them is not parsed twice.
    body = request.body
    if b"\\u0000" in body or b"\0" in body or SURROGATE_ESCAPE.search(body):
        try:
            parsed = json.loads(body)
        except ValueError:
            return  # ninja answers 400 "Cannot parse request body"
        surrogate = _("Text must be valid Unicode: this holds a lone surrogate.")
        for path, text in _strings(parsed):
            if "\x00" in text:
                yield path, nul
            elif _has_surrogate(text):
                yield path, surrogate


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _strings(value: Any) -> Iterator[tuple[str, str]]:
    """(dotted path, text) of every string and key in a parsed body, without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            yield path or "__all__", item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield path or "__all__", key
                stack.append((f"{path}.{key}" if path else str(key), child))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((f"{path}.{index}" if path else str(index), child))
