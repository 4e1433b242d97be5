"""The node's image cache (jobs/execution/replica/image_cache.py) on real OCI images.

The images are built here with umoci in milliseconds: a file and an ``Env`` each.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from jobs.execution.replica import image_cache
from jobs.execution.replica.image_cache import (
    image_prepare,
    image_release,
    images_evict,
    unpack_count,
)
from jobs.execution.replica.image_error import ImageError


@pytest.fixture(autouse=True)
def umoci_installed():
    if shutil.which("umoci") is None:
        why = "umoci is not installed (Debian: apt-get install umoci)"
        if os.environ.get("TRAINYARD_REQUIRE_SERVICES"):
            pytest.fail(
                f"{why}; CI must run the image cache's tests (deploy/test-host.sh installs it)"
            )
        pytest.skip(f"SKIPPING THE IMAGE CACHE'S TESTS: {why}")


def umoci(*args: str) -> None:
    subprocess.run(["umoci", *args], check=True, capture_output=True)


def build_image(layout: Path, tag: str, files: dict[str, str], env: str) -> str:
    """An image of ``files`` with ``env`` in its config; its manifest digest."""
    if not layout.exists():
        umoci("init", "--layout", str(layout))
    umoci("new", "--image", f"{layout}:{tag}")
    bundle = layout.parent / f"bundle-{tag}"
    umoci("unpack", "--image", f"{layout}:{tag}", str(bundle))
    for name, text in files.items():
        path = bundle / "rootfs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    umoci("repack", "--image", f"{layout}:{tag}", str(bundle))
    umoci("config", "--image", f"{layout}:{tag}", "--config.env", env)
    shutil.rmtree(bundle)
    index = json.loads((layout / "index.json").read_text())
    [descriptor] = [
        m
        for m in index["manifests"]
        if m["annotations"]["org.opencontainers.image.ref.name"] == tag
    ]
    return descriptor["digest"]


@pytest.fixture
def images(tmp_path):
    layout = tmp_path / "layout"
    a = build_image(layout, "a", {"etc/marker": "image A\n"}, "GREETING=from-a")
    b = build_image(layout, "b", {"etc/marker": "image B\n", "opt/b.txt": "x" * 4096}, "B=1")
    return layout, a, b


def test_each_image_unpacks_its_own_files_and_env(tmp_path, images):
    layout, a, b = images
    cache = tmp_path / "cache"
    first = image_prepare(cache_root=cache, layout=layout, digest=a, lease="attempt-1")
    second = image_prepare(cache_root=cache, layout=layout, digest=b, lease="attempt-2")
    assert (first.rootfs / "etc/marker").read_text() == "image A\n"
    assert (second.rootfs / "etc/marker").read_text() == "image B\n"
    assert "GREETING=from-a" in first.env and "B=1" in second.env
    assert not (first.rootfs / "opt/b.txt").exists()


def test_starts_together_unpack_once_and_share_it(tmp_path, images):
    layout, a, _b = images
    cache = tmp_path / "cache"
    results, errors = [], []

    def start(lease: str) -> None:
        try:
            results.append(image_prepare(cache_root=cache, layout=layout, digest=a, lease=lease))
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=start, args=(f"attempt-{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert unpack_count(cache, a) == 1
    assert {image.rootfs for image in results} == {results[0].rootfs}
    assert len(list((results[0].rootfs.parent / "leases").iterdir())) == 8


def test_eviction_removes_the_least_recently_used_never_one_in_use(tmp_path, images):
    layout, a, b = images
    cache = tmp_path / "cache"
    in_use = image_prepare(cache_root=cache, layout=layout, digest=a, lease="running")
    idle = image_prepare(cache_root=cache, layout=layout, digest=b, lease="ended")
    image_release(cache_root=cache, digest=b, lease="ended")

    assert images_evict(cache_root=cache, limit_bytes=0) == [b]  # a is in use, though older
    assert in_use.rootfs.exists() and not idle.rootfs.exists()
    image_release(cache_root=cache, digest=a, lease="running")
    assert images_evict(cache_root=cache, limit_bytes=10**9) == []  # it fits: kept
    assert images_evict(cache_root=cache, limit_bytes=0) == [a]
    # Asked again, it is unpacked again.
    image_prepare(cache_root=cache, layout=layout, digest=a, lease="again")
    assert unpack_count(cache, a) == 2


def test_a_missing_image_says_so(tmp_path, images):
    layout, _a, _b = images
    missing = "sha256:" + "0" * 64
    with pytest.raises(ImageError, match=f"image {missing} has no manifest in") as raised:
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=missing, lease="x")
    # The reason reaches the job's owner: it names no folder of the platform's.
    assert str(tmp_path) not in str(raised.value)
    with pytest.raises(ImageError, match="is not an image digest"):
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest="latest", lease="x")


def test_a_corrupt_layer_says_so_and_leaves_nothing_in_the_cache(tmp_path, images):
    layout, a, _b = images
    manifest = json.loads((layout / "blobs/sha256" / a.split(":")[1]).read_text())
    layer = layout / "blobs/sha256" / manifest["layers"][0]["digest"].split(":")[1]
    layer.chmod(0o644)
    layer.write_bytes(b"not the layer that was hashed")
    cache = tmp_path / "cache"
    with pytest.raises(ImageError, match="the image cannot be unpacked"):
        image_prepare(cache_root=cache, layout=layout, digest=a, lease="x")
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == []


def test_a_corrupt_manifest_says_so(tmp_path, images):
    layout, a, _b = images
    blob = layout / "blobs/sha256" / a.split(":")[1]
    blob.chmod(0o644)
    blob.write_text(blob.read_text().replace("layers", "layerz"))
    with pytest.raises(ImageError, match="does not match its digest: the image is corrupt"):
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=a, lease="x")


def test_no_one_but_root_can_write_into_the_cache(tmp_path, images):
    layout, a, _b = images
    image = image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=a, lease="x")
    for path in [
        image.rootfs.parent,
        image.rootfs,
        image.rootfs / "etc",
        image.rootfs / "etc/marker",
    ]:
        mode = path.stat().st_mode
        assert not mode & (stat.S_IWGRP | stat.S_IWOTH), f"{path} is writable by others"


def test_a_lease_name_cannot_walk_out_of_the_cache(tmp_path, images):
    layout, a, _b = images
    with pytest.raises(ValueError, match="bad lease name"):
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=a, lease="../../x")


def put_blob(layout: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs/sha256" / digest).write_bytes(data)
    return f"sha256:{digest}"


@pytest.mark.parametrize(
    ("manifest", "config", "reason"),
    [
        ({"config": "sha256:0"}, None, "the image's manifest names no config"),
        ({"config": {"digest": "CONFIG"}}, {"config": ["Env"]}, "the image's config is not"),
        ({"config": {"digest": "CONFIG"}}, {"config": {"Env": [1]}}, "the image's config is not"),
    ],
)
def test_a_manifest_or_config_of_the_wrong_shape_says_so(
    tmp_path, images, manifest, config, reason
):
    layout, _a, _b = images
    if config is not None:
        manifest["config"]["digest"] = put_blob(layout, json.dumps(config).encode())
    digest = put_blob(layout, json.dumps(manifest).encode())
    with pytest.raises(ImageError, match=reason):
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=digest, lease="x")


def test_a_manifest_too_large_to_be_one_is_refused_unread(tmp_path, images):
    layout, _a, _b = images
    digest = put_blob(layout, b" " * (5 * 1024 * 1024) + b"{}")
    with pytest.raises(ImageError, match="larger than a manifest may be"):
        image_prepare(cache_root=tmp_path / "cache", layout=layout, digest=digest, lease="x")


def test_an_unpack_reports_how_much_of_the_layers_it_has_read(tmp_path, images, monkeypatch):
    layout, a, _b = images
    monkeypatch.setattr(image_cache, "PROGRESS_SECONDS", 0.001)
    manifest = json.loads((layout / "blobs/sha256" / a.split(":")[1]).read_text())
    total = sum(layer["size"] for layer in manifest["layers"])
    heard = []
    image_prepare(
        cache_root=tmp_path / "cache",
        layout=layout,
        digest=a,
        lease="x",
        progress=lambda done, of: heard.append((done, of)),
    )
    assert heard and {of for _done, of in heard} == {total}
    assert all(0 <= done <= total for done, _of in heard)
    heard.clear()
    image_prepare(
        cache_root=tmp_path / "cache", layout=layout, digest=a, lease="y", progress=heard.append
    )
    assert heard == []  # cached: nothing to unpack, nothing to report
