"""Where the server's URL and the user's token come from: the environment, else the config file.

``trainyard login`` writes ``$XDG_CONFIG_HOME/trainyard/config`` (``~/.config``
when unset; the platform's folder on macOS and Windows) as JSON, created with
mode 0600 in one step so the token is never readable by others, not even briefly.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from .errors import InputError

URL_ENV = "TRAINYARD_URL"
TOKEN_ENV = "TRAINYARD_TOKEN"
API_PREFIX = "/api/v1"


def config_path() -> Path:
    if sys.platform in ("darwin", "win32"):
        return Path(click.get_app_dir("trainyard")) / "config"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "trainyard" / "config"


def server_url(url: str) -> str:
    """``https://host/`` or ``https://host/api/v1`` → ``https://host``."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise InputError(f"the server URL must start with http:// or https://, got {url!r}")
    return url.removesuffix(API_PREFIX)


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str


def read_config(path: Path | None = None) -> dict:
    path = path or config_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        click.echo(f"trainyard: warning: {path} is readable by others; run chmod 600", err=True)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON ({exc}); run `trainyard login URL`") from exc
    return data if isinstance(data, dict) else {}


def write_config(data: dict, path: Path | None = None) -> Path:
    """Replace the config file atomically; the new file is 0600 from its creation."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkstemp opens with O_CREAT | O_EXCL and mode 0600.
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".config-")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def credentials() -> Credentials:
    """The URL and token to use: ``TRAINYARD_URL`` / ``TRAINYARD_TOKEN`` over the config file."""
    stored = read_config()
    url = os.environ.get(URL_ENV) or stored.get("url")
    token = os.environ.get(TOKEN_ENV) or stored.get("token")
    if not url or not token:
        missing = " and ".join(
            name for name, value in ((URL_ENV, url), (TOKEN_ENV, token)) if not value
        )
        raise InputError(
            f"no server configured ({missing} unset and no {config_path()}): "
            "run `trainyard login URL`"
        )
    return Credentials(url=server_url(url), token=token)
