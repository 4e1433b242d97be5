"""The API over HTTP (standard library only): JSON in and out, errors as ``CliError``."""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .config import API_PREFIX, Credentials
from .errors import ApiError, NetworkError, NotFound

TIMEOUT_SECONDS = 30
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")


def accept_language(environ=os.environ) -> str | None:
    """The user's language for the server's messages: ``zh_CN.UTF-8`` → ``zh-hans``."""
    value = next((environ[name] for name in LOCALE_VARIABLES if environ.get(name)), "")
    tag = value.split(".")[0].split("@")[0]
    if tag in ("", "C", "POSIX"):
        return None
    language, _, region = tag.replace("-", "_").partition("_")
    language = language.lower()
    if language == "zh":
        return "zh-hant" if region.upper() in ("TW", "HK", "MO", "HANT") else "zh-hans"
    return f"{language}-{region.lower()}" if region else language


class ApiClient:
    def __init__(self, credentials: Credentials) -> None:
        self.url = credentials.url
        self.headers = {
            "Authorization": f"Bearer {credentials.token}",
            "Accept": "application/json",
            "User-Agent": "trainyard-cli",
        }
        if language := accept_language():
            self.headers["Accept-Language"] = language

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, body=body)

    def request(
        self, method: str, path: str, *, params: dict | None = None, body: Any = None
    ) -> Any:
        query = {key: value for key, value in (params or {}).items() if value is not None}
        url = f"{self.url}{API_PREFIX}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return _json(response.read())
        except urllib.error.HTTPError as exc:
            raise _api_error(exc, method, path) from None
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
            reason = getattr(exc, "reason", exc)
            raise NetworkError(f"cannot reach {self.url}: {reason}") from None


def _json(raw: bytes) -> Any:
    return json.loads(raw) if raw else None


def _api_error(exc: urllib.error.HTTPError, method: str, path: str) -> ApiError:
    raw = exc.read()
    try:
        body = _json(raw) or {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    status = exc.code
    if status == 401:
        return ApiError(
            status,
            "the server refused the token (401): run `trainyard login URL` "
            "or set TRAINYARD_TOKEN to a token from your profile page",
        )
    if status == 404:
        return NotFound(status, f"not found: {path} (404)")
    if status == 422 and isinstance(body.get("errors"), dict):
        errors = {
            field: [str(m) for m in (msgs if isinstance(msgs, list) else [msgs])]
            for field, msgs in body["errors"].items()
        }
        return ApiError(status, f"the server refused {method} {path} (422):", errors)
    detail = body.get("detail") or exc.reason or raw[:200].decode("utf-8", "replace")
    return ApiError(status, f"{method} {path} failed ({status}): {detail}")
