"""The site's image store: one OCI image layout that every node reads its jobs' images from.

Admins' images arrive here however they were made (``add.py``): ``skopeo``
copies each into the layout under a tag of its own, converting a Docker image
to OCI on the way, and the layout keeps each blob once, however many images
share it. Nodes read it by manifest digest (``replica/image_cache.py``), so
the store is shared storage in production, as the data root is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from jobs.execution.replica.image_cache import blob_path

COPY_TIMEOUT_SECONDS = 3600


class StoreError(Exception):
    """An image that could not be brought into the store; the message says why."""


def store_path() -> Path:
    return Path(settings.TRAINYARD_IMAGE_STORE)


def store_tag(image_id: int) -> str:
    return f"image-{int(image_id)}"


def store_copy(source: str, *, tag: str, options: tuple[str, ...] = ()) -> str:
    """Copy the image at ``source`` (a containers-image reference) in as ``tag``; its digest.

    ``options``: skopeo's own for the source (``--src-tls-verify=false``…).
    """
    store = store_path()
    store.mkdir(parents=True, exist_ok=True)
    with _store_lock(store):
        _skopeo(
            "copy",
            "--quiet",
            "--dest-oci-accept-uncompressed-layers",
            *options,
            source,
            f"oci:{store}:{tag}",
        )
        return tagged_digest(store, tag)


def store_holds(digest: str) -> bool:
    """Whether the store has the manifest of ``digest`` (its layers are the manifest's)."""
    return bool(digest) and blob_path(store_path(), digest).exists()


def tagged_digest(layout: Path, tag: str) -> str:
    index = json.loads((layout / "index.json").read_text())
    for manifest in index.get("manifests", []):
        if (manifest.get("annotations") or {}).get("org.opencontainers.image.ref.name") == tag:
            return manifest["digest"]
    raise StoreError(f"the store has no image tagged {tag}")


@contextlib.contextmanager
def _store_lock(store: Path) -> Iterator[None]:
    """One writer of the layout's ``index.json`` at a time."""
    with (store / ".store.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _skopeo(*args: str) -> None:
    try:
        subprocess.run(
            ["skopeo", *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=COPY_TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise StoreError("skopeo is not installed (Debian: apt-get install skopeo)") from None
    except subprocess.CalledProcessError as error:
        last = (error.stderr or "").strip().splitlines()[-1:] or ["no message"]
        raise StoreError(last[0][:500]) from None
    except subprocess.TimeoutExpired:
        raise StoreError(f"copying the image took over {COPY_TIMEOUT_SECONDS} s") from None
