"""Tiny real OCI images for the tests, built in about a second from this machine's own files.

Each is one layer holding bash, setpriv (the sandbox's last step runs them from
the image), a few coreutils and their libraries, copied from the host; image
A adds Debian's Python 3.11 with its standard library (tests and rarely used
modules left out), image B has no Python. Each has a marker file and an
``Env`` of its own. ``umoci`` makes the layout, and ``store_copy`` (``skopeo``)
brings an image into the site's store as an admin's image would come.
"""

from __future__ import annotations

import hashlib
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
    (root / "bin" / "sh").symlink_to(shutil.which("bash"))  # RUN steps' /bin/sh
    if python:
        shutil.copytree(
            PYTHON_LIB,
            root / PYTHON_LIB.relative_to("/"),
            symlinks=True,
            ignore=lambda folder, names: [
                n for n in names if n in PYTHON_LEFT_OUT or n == "__pycache__"
            ],
        )
        for module in (PYTHON_LIB / "lib-dynload").glob("*.so"):
            _copy_with_libraries(module, root)
        (root / "usr/bin/python3").symlink_to("python3.11")
        (root / "usr/bin/python").symlink_to("python3.11")
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


# The venv's CPU PyTorch and what ``import torch`` needs: a layer over image A (Python 3.11).
TORCH_PACKAGES = (
    "torch",
    "functorch",
    "torchgen",
    "typing_extensions.py",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "markupsafe",
    "filelock",
    "fsspec",
    "numpy",
    "numpy.libs",
)


def add_torch_layer(layout: Path, tag: str, *, to_tag: str) -> str:
    """Image ``tag`` plus the test environment's PyTorch, as ``to_tag``; its digest.

    The layer is an uncompressed tar (a valid OCI layer media type): gzip over
    PyTorch's 700 MB would cost this one test most of a minute of one core.
    """
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    layer = layout.parent / f"layer-{to_tag}.tar"
    with tarfile.open(layer, "w") as archive:
        for name in TORCH_PACKAGES:
            if (site / name).exists():
                archive.add(
                    site / name,
                    arcname=f"usr/local/lib/python3.11/dist-packages/{name}",
                    filter=lambda info: None if "__pycache__" in info.name else info,
                )
        # The system libraries PyTorch's own link to (libstdc++, libgomp…), from this host.
        for library in sorted(
            {lib for so in (site / "torch/lib").glob("*.so*") for lib in _libraries(so)}
        ):
            if not str(library).startswith(str(site)):
                archive.add(library.resolve(), arcname=str(library).lstrip("/"))
    digest = append_layer(layout, tag, layer, to_tag=to_tag)
    layer.unlink()
    return digest


def append_layer(layout: Path, tag: str, layer: Path, *, to_tag: str) -> str:
    """Append an uncompressed tar layer to image ``tag`` as the new image ``to_tag``."""
    manifest = json.loads(_blob(layout, tagged(layout, tag)).read_bytes())
    config = json.loads(_blob(layout, manifest["config"]["digest"]).read_bytes())
    digest = "sha256:" + _sha256(layer)
    shutil.copyfile(layer, _blob(layout, digest))
    config["rootfs"]["diff_ids"].append(digest)
    manifest["layers"].append(
        {
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": digest,
            "size": layer.stat().st_size,
        }
    )
    manifest["config"] = _write_blob(layout, config, manifest["config"]["mediaType"])
    descriptor = _write_blob(layout, manifest, "application/vnd.oci.image.manifest.v1+json")
    descriptor["annotations"] = {"org.opencontainers.image.ref.name": to_tag}
    index = json.loads((layout / "index.json").read_text())
    index["manifests"].append(descriptor)
    (layout / "index.json").write_text(json.dumps(index))
    return descriptor["digest"]


def _blob(layout: Path, digest: str) -> Path:
    return layout / "blobs" / "sha256" / digest.split(":")[1]


def _write_blob(layout: Path, value: dict, media_type: str) -> dict:
    data = json.dumps(value).encode()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _blob(layout, digest).write_bytes(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def _sha256(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


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
