"""A real container registry for the tests: Debian's docker-registry (the CNCF distribution).

Plain HTTP on a free loopback port, storage in the test's folder; stopped after the test.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

CONFIG = """\
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {root}
http:
  addr: 127.0.0.1:{port}
"""


@pytest.fixture
def registry(tmp_path: Path):
    """``host:port`` of a registry that answers ``/v2/``."""
    if shutil.which("docker-registry") is None:
        pytest.fail("docker-registry is not installed (Debian: apt-get install docker-registry)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "registry.yml"
    config.write_text(CONFIG.format(root=tmp_path / "registry", port=port))
    process = subprocess.Popen(["docker-registry", "serve", str(config)])
    try:
        wait_until(lambda: _answers(port), what="the registry", timeout=30)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False
