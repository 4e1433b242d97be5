"""A node's cache of unpacked OCI images, keyed by manifest digest and shared by its jobs.

An image is asked for by its manifest digest in an OCI image layout (a folder
with ``index.json`` and ``blobs/``). The first start that needs it unpacks it
once, with ``umoci``, under the digest's lock; jobs starting together wait for
that one unpack and share it. The manifest is checked against its digest before
anything is read, and umoci checks every blob it reads against its own; a
missing or corrupt image is an ``ImageError`` whose text is the attempt's reason.

Each entry is made in a private folder and renamed into place, so a reader
never sees half an image. A lease per attempt marks an entry in use; eviction
removes the least recently used entries past the size limit and never one with
a lease. Everything in the cache is root's and read-only to others: jobs see an
image only through a read-only bind of its root filesystem.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .image_error import ImageError

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
UNPACK_TIMEOUT_SECONDS = 1800
# A manifest or config is read whole: past this it is no image's (registries refuse a manifest
# over 4 MiB).
MAX_JSON_BLOB_BYTES = 4 * 1024 * 1024
UNPACKS_LOG = "unpacks.log"  # a line per unpack: the digest (what tests and reports count)


# Where the sandbox mounts its own folders over the read-only image: made in every unpacked
# root (bwrap cannot create a mount point in a read-only root), as real folders, never links.
MOUNT_POINTS = ("dev", "proc", "sys", "tmp", "root", "var/tmp", "run", "trainyard")
PROGRESS_SECONDS = 2.0


@dataclass(frozen=True)
class CachedImage:
    digest: str
    rootfs: Path
    env: list[str]  # the image's ``Env``, ``NAME=value`` each
    size_bytes: int


def image_prepare(
    *, cache_root: Path, layout: Path, digest: str, lease: str, progress=None
) -> CachedImage:
    """The image ``digest`` of ``layout``, unpacked once into the cache, leased to ``lease``.

    ``progress(done_bytes, total_bytes)`` hears how much of the image's layers the
    unpack has read, every few seconds while it runs; not at all when it is cached.
    """
    _check_digest(digest)
    entry = _entry(cache_root, digest)
    with _digest_lock(cache_root, digest):
        if not (entry / "image.json").exists():
            _unpack(cache_root, layout, digest, entry, progress)
        (entry / "leases").mkdir(exist_ok=True)
        (entry / "leases" / _lease_name(lease)).touch()
        os.utime(entry / "image.json")  # last used: what eviction orders by
    return _cached(entry, digest)


def image_env(*, layout: Path, digest: str) -> list[str]:
    """The image's ``Env`` from its config in ``layout``, both checked against their digests."""
    return _image_env(image_manifest_and_config(layout=layout, digest=digest)[1])


def image_manifest_and_config(*, layout: Path, digest: str) -> tuple[dict, dict]:
    """The image's manifest and config in ``layout``, each checked against its digest."""
    manifest, _size = _manifest(layout, digest)
    return manifest, _config(layout, manifest)


def image_release(*, cache_root: Path, digest: str, lease: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (_entry(cache_root, digest) / "leases" / _lease_name(lease)).unlink()


def images_evict(*, cache_root: Path, limit_bytes: int) -> list[str]:
    """Remove the least recently used images until the cache fits; never one in use."""
    entries = []
    for entry in cache_root.glob("sha256-*"):
        with contextlib.suppress(FileNotFoundError, ValueError):
            meta = json.loads((entry / "image.json").read_text())
            entries.append(((entry / "image.json").stat().st_mtime, meta, entry))
    total = sum(meta["size_bytes"] for _used, meta, _entry in entries)
    evicted = []
    for _used, meta, entry in sorted(entries, key=lambda item: item[0]):
        if total <= limit_bytes:
            break
        with _digest_lock(cache_root, meta["digest"]):
            if any((entry / "leases").iterdir()):
                continue  # in use: a job's root
            shutil.rmtree(entry)
        total -= meta["size_bytes"]
        evicted.append(meta["digest"])
    return evicted


def unpack_count(cache_root: Path, digest: str) -> int:
    """How many times ``digest`` was unpacked into this cache."""
    log = cache_root / UNPACKS_LOG
    return log.read_text().split().count(digest) if log.exists() else 0


def _entry(cache_root: Path, digest: str) -> Path:
    return cache_root / digest.replace(":", "-")


def _lease_name(lease: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", lease) or lease.startswith("."):
        raise ValueError(f"bad lease name {lease!r}")
    return lease


@contextlib.contextmanager
def _digest_lock(cache_root: Path, digest: str) -> Iterator[None]:
    locks = cache_root / ".locks"
    locks.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (locks / digest.replace(":", "-")).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _unpack(cache_root: Path, layout: Path, digest: str, entry: Path, progress) -> None:
    manifest, manifest_size = _manifest(layout, digest)
    env = _image_env(_config(layout, manifest))
    layers_bytes = sum(
        int(layer.get("size") or 0)
        for layer in manifest.get("layers") or []
        if isinstance(layer, dict)
    )
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache_root))
    try:
        # The one manifest under a tag umoci can name; the blobs are the layout's own.
        view = work / "layout"
        view.mkdir()
        (view / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        descriptor = {
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": digest,
            "size": manifest_size,
            "annotations": {"org.opencontainers.image.ref.name": "trainyard"},
        }
        (view / "index.json").write_text(
            json.dumps({"schemaVersion": 2, "manifests": [descriptor]})
        )
        (view / "blobs").symlink_to((layout / "blobs").resolve())
        _umoci(
            "raw",
            "unpack",
            "--image",
            f"{view}:trainyard",
            str(work / "rootfs"),
            progress=(lambda done: progress(min(done, layers_bytes), layers_bytes))
            if progress
            else None,
        )
        shutil.rmtree(view)
        _make_mount_points(work / "rootfs")
        size = _folder_bytes(work / "rootfs")
        meta = {"digest": digest, "size_bytes": size, "env": env}
        (work / "image.json").write_text(json.dumps(meta))
        os.chmod(work, 0o755)
        os.rename(work, entry)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    with (cache_root / UNPACKS_LOG).open("a") as log:
        log.write(f"{digest}\n")


def _check_digest(digest: str) -> None:
    if not DIGEST.fullmatch(digest):
        raise ImageError(f"{digest!r} is not an image digest (sha256:<64 hex digits>)")


def _manifest(layout: Path, digest: str) -> tuple[dict, int]:
    """The manifest, checked against ``digest``, and its size in bytes."""
    _check_digest(digest)
    data = _verified_blob(layout, digest, what="manifest")
    return _json(data, f"image manifest {digest}"), len(data)


def _config(layout: Path, manifest: dict) -> dict:
    descriptor = manifest.get("config")
    if not isinstance(descriptor, dict) or not DIGEST.fullmatch(str(descriptor.get("digest"))):
        raise ImageError("the image's manifest names no config: the image is corrupt")
    return _json(_verified_blob(layout, descriptor["digest"], what="config"), "image config")


def _image_env(config: dict) -> list[str]:
    """The config's ``Env`` (``NAME=value`` strings), checked before umoci reads the image."""
    runtime = config.get("config") or {}
    env = runtime.get("Env") or [] if isinstance(runtime, dict) else None
    if not isinstance(env, list) or not all(isinstance(item, str) for item in env):
        raise ImageError("the image's config is not an OCI image config (its Env is no list)")
    return env


def _json(data: bytes, what: str) -> dict:
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ImageError(f"{what} is not a JSON object: the image is corrupt")
    return value


def blob_path(layout: Path, digest: str) -> Path:
    """Where an OCI layout keeps the blob ``digest`` (``sha256:<hex>``)."""
    return layout / "blobs" / "sha256" / digest.removeprefix("sha256:")


def _verified_blob(layout: Path, digest: str, *, what: str) -> bytes:
    if not DIGEST.fullmatch(str(digest)):
        raise ImageError(f"the image's {what} names no sha256 digest")
    path = blob_path(layout, digest)
    try:
        if path.stat().st_size > MAX_JSON_BLOB_BYTES:
            raise ImageError(f"image {what} {digest} is larger than a {what} may be")
        data = path.read_bytes()
    except OSError:
        raise ImageError(f"image {digest} has no {what} in the site's image store") from None
    if f"sha256:{hashlib.sha256(data).hexdigest()}" != digest:
        raise ImageError(f"image {what} {digest} does not match its digest: the image is corrupt")
    return data


def _umoci(*args: str, progress=None) -> None:
    """Run umoci; ``progress(bytes read)`` every few seconds while it runs."""
    try:
        process = subprocess.Popen(
            ["umoci", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    except FileNotFoundError:
        raise ImageError(
            "umoci is not installed on this node (Debian: apt-get install umoci)", node_fault=True
        ) from None
    with process:
        errors = _errors_while_waiting(process, progress)
    if process.returncode:
        last = errors.strip().splitlines()[-1:] or ["no message"]
        raise ImageError(f"the image cannot be unpacked: {last[0][:300]}")


def _errors_while_waiting(process: subprocess.Popen, progress) -> str:
    """umoci's stderr once it exits; killed past the time limit."""
    deadline = time.monotonic() + UNPACK_TIMEOUT_SECONDS
    while True:
        try:
            _out, errors = process.communicate(timeout=PROGRESS_SECONDS)
            return errors or ""
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                process.kill()
                process.communicate()
                raise ImageError(
                    f"unpacking the image took over {UNPACK_TIMEOUT_SECONDS} s", node_fault=True
                ) from None
            if progress:
                progress(_bytes_read(process.pid))


def _bytes_read(pid: int) -> int:
    """What a process has read so far (``rchar``), or 0 once it is gone."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def _make_mount_points(rootfs: Path) -> None:
    """The sandbox's mount points as real folders: a link there would aim a mount elsewhere."""
    for name in MOUNT_POINTS:
        path = rootfs
        for part in Path(name).parts:
            path = path / part
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                path.unlink()
            if not path.exists():
                path.mkdir(mode=0o755)


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _cached(entry: Path, digest: str) -> CachedImage:
    meta = json.loads((entry / "image.json").read_text())
    return CachedImage(
        digest=digest, rootfs=entry / "rootfs", env=meta["env"], size_bytes=meta["size_bytes"]
    )
