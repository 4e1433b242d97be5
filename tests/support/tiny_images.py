"""Tiny real OCI images for the tests, built in about a second from this machine's own files.

Each is one layer holding bash, setpriv (the sandbox's last step runs them from
the image), a few coreutils and their libraries, copied from the host; image
A adds Debian's Python 3.11 with its standard library (tests and rarely used
modules left out), image B has no Python. Each has a marker file and an
``Env`` of its own. ``umoci`` makes the layout, and ``store_copy`` (``skopeo``)
brings an image into the site's store as an admin's image would come.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

TOOLS = ["bash", "setpriv", "cat", "env", "ls", "touch", "id", "test", "pwd", "echo", "sleep"]
PYTHON = "/usr/bin/python3.11"
PYTHON_LIB = Path("/usr/lib/python3.11")
PYTHON_LEFT_OUT = {
    "test",
    "idlelib",
    "tkinter",
    "ensurepip",
    "lib2to3",
    "turtledemo",
    "dist-packages",
    "site-packages",
    "pydoc_data",
    "config-3.11-x86_64-linux-gnu",
}


def build_tiny_image(layout: Path, tag: str, *, marker: str, env: list[str], python: bool) -> str:
    """The image's manifest digest in ``layout`` (made if absent)."""
    root = layout.parent / f"rootfs-{tag}"
    binaries = [shutil.which(tool) for tool in TOOLS] + ([PYTHON] if python else [])
    for binary in binaries:
        _copy_with_libraries(Path(binary), root)
    (root / "bin").mkdir(exist_ok=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "marker").write_text(marker + "\n")
    if python:
        shutil.copytree(
            PYTHON_LIB,
            root / PYTHON_LIB.relative_to("/"),
            symlinks=True,
            ignore=lambda folder, names: [
                n for n in names if n in PYTHON_LEFT_OUT or n == "__pycache__"
            ],
        )
        (root / "usr/bin/python3").symlink_to("python3.11")
    layer = layout.parent / f"layer-{tag}.tar"
    with tarfile.open(layer, "w") as archive:
        archive.add(root, arcname=".")
    if not layout.exists():
        _umoci("init", "--layout", str(layout))
    _umoci("new", "--image", f"{layout}:{tag}")
    _umoci("raw", "add-layer", "--image", f"{layout}:{tag}", str(layer))
    config = ["--config.workingdir", "/"]
    for item in env:
        config += ["--config.env", item]
    _umoci("config", "--image", f"{layout}:{tag}", *config)
    shutil.rmtree(root)
    layer.unlink()
    return tagged(layout, tag)


def tagged(layout: Path, tag: str) -> str:
    index = json.loads((layout / "index.json").read_text())
    [digest] = [
        m["digest"]
        for m in index["manifests"]
        if m["annotations"]["org.opencontainers.image.ref.name"] == tag
    ]
    return digest


def _copy_with_libraries(binary: Path, root: Path) -> None:
    for path in [binary, *_libraries(binary)]:
        target = root / path.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copy2(path.resolve(), target)


def _libraries(binary: Path) -> list[Path]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        for part in parts:
            if part.startswith("/"):
                found.append(Path(part))
                break
    return found


def _umoci(*args: str) -> None:
    subprocess.run(["umoci", *args], check=True, capture_output=True)


@pytest.fixture
def tiny_images(transactional_db, tmp_path, settings, monkeypatch) -> dict:
    """Images ``a`` (Python 3.11) and ``b`` (none) in a fresh site store, as ready Image rows.

    The store and the node cache reach the agents and keepers this test starts
    through their environment (``TRAINYARD_IMAGE_STORE``, ``TRAINYARD_IMAGE_CACHE``).
    """
    from jobs.images.store import store_copy, store_tag
    from jobs.models import Image
    from tests.factories import ProjectFactory

    settings.TRAINYARD_IMAGE_STORE = tmp_path / "store"
    settings.TRAINYARD_IMAGE_CACHE = tmp_path / "cache"
    monkeypatch.setenv("TRAINYARD_IMAGE_STORE", str(settings.TRAINYARD_IMAGE_STORE))
    monkeypatch.setenv("TRAINYARD_IMAGE_CACHE", str(settings.TRAINYARD_IMAGE_CACHE))
    build = tmp_path / "build" / "layout"
    build.parent.mkdir()
    build_tiny_image(build, "a", marker="image A", env=["GREETING=from-a"], python=True)
    build_tiny_image(build, "b", marker="image B", env=["GREETING=from-b"], python=False)
    rows, project = {}, ProjectFactory()
    for key in ("a", "b"):
        image = Image.objects.create(
            project=project, name=f"tiny-{key}", source=Image.Source.ARCHIVE, state="adding"
        )
        image.digest = store_copy(f"oci:{build}:{key}", tag=store_tag(image.pk))
        image.state = Image.State.READY
        image.save()
        rows[key] = image
    return rows
