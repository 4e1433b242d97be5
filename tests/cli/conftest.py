"""The ``trainyard`` command run as a real process against a live server.

``cli(*args)`` runs the installed console script with a clean environment:
its own config folder, the C locale, no TRAINYARD_* from the outside.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from accounts.models import ApiToken

# The console script `pip install -e .` puts next to the interpreter.
TRAINYARD = Path(sys.executable).parent / "trainyard"
CLI_TIMEOUT_SECONDS = 120


@dataclass
class Cli:
    home: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def config_file(self) -> Path:
        return self.home / "config" / "trainyard" / "config"

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(TRAINYARD), *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.environment(env),
            cwd=self.home,
            timeout=CLI_TIMEOUT_SECONDS,
        )

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [str(TRAINYARD), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.environment(None),
            cwd=self.home,
        )

    def environment(self, extra: dict[str, str] | None) -> dict[str, str]:
        base = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("TRAINYARD_", "LC_", "LANG"))
        }
        return {
            **base,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "LANG": "C.UTF-8",
            "TRAINYARD_POLL_SECONDS": "0.3",
            **self.env,
            **(extra or {}),
        }


@pytest.fixture
def cli(tmp_path) -> Cli:
    """The command with no server configured."""
    if not TRAINYARD.exists():
        pytest.fail(f"no {TRAINYARD}: `make install` (pip install -e .) installs the command")
    home = tmp_path / "home"
    home.mkdir()
    return Cli(home)


@pytest.fixture
def token(owner) -> str:
    return ApiToken.issue(user=owner, name="cli")[1]


@pytest.fixture
def server_cli(cli, live_server, token, project) -> Cli:
    """The command pointed at the live server with the owner's token (environment)."""
    cli.env = {"TRAINYARD_URL": live_server.url, "TRAINYARD_TOKEN": token}
    return cli


def write(cli: Cli, name: str, text: str) -> str:
    path = cli.home / name
    path.write_text(text)
    return str(path)
