"""An attempt's image on its node: taken from the site's store into the node's cache.

Both executors call this on the node: the local agent before its runner
starts, the Slurm keeper before the replica script runs. The attempt holds a
lease on the cached image from here until it ends (``attempt_image_release``),
so eviction never takes a root from under a running job.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from jobs.execution.node_settings import settings

from . import sandbox
from .image_cache import CachedImage, image_env, image_prepare, image_release, images_evict

GIB = 1024 * 1024 * 1024


def image_name(job) -> str:
    """How reasons and logs name the job's image: its name, or its digest once the row is gone."""
    return job.image.name if job.image_id else job.image_digest


def lease_for(attempt_id: int) -> str:
    return f"attempt-{int(attempt_id)}"


def attempt_image_prepare(*, digest: str, attempt_id: int, progress=None) -> CachedImage:
    """The image unpacked in this node's cache and leased to the attempt; raises ImageError."""
    cache = Path(settings.TRAINYARD_IMAGE_CACHE)
    cache.mkdir(parents=True, exist_ok=True, mode=0o755)
    image = image_prepare(
        cache_root=cache,
        layout=Path(settings.TRAINYARD_IMAGE_STORE),
        digest=digest,
        lease=lease_for(attempt_id),
        progress=progress,
    )
    images_evict(cache_root=cache, limit_bytes=int(settings.TRAINYARD_IMAGE_CACHE_GIB * GIB))
    return image


def attempt_image_release(*, digest: str | None, attempt_id: int | None) -> None:
    if digest and attempt_id is not None:
        with contextlib.suppress(ValueError, OSError):
            image_release(
                cache_root=Path(settings.TRAINYARD_IMAGE_CACHE),
                digest=digest,
                lease=lease_for(attempt_id),
            )


def image_environment(image_env: list[str], *, gpu_driver: bool) -> dict[str, str]:
    """The image's ``Env`` as variables; the GPU driver's folder leads the library path."""
    env = {"PATH": sandbox.BASE_PATH}
    for item in image_env:
        name, _equals, value = item.partition("=")
        if name:
            env[name] = value
    if gpu_driver:
        libraries = env.get("LD_LIBRARY_PATH")
        driver = sandbox.GPU_DRIVER_DIR
        env["LD_LIBRARY_PATH"] = f"{driver}:{libraries}" if libraries else driver
        env["PATH"] = f"{env['PATH']}:{driver}"
    return env


def image_plan(job) -> dict | None:
    """What a node needs to run ``job`` in its image (digest, name, ``Env``); None: the host's.

    Read from the site's store where the platform prepares a Slurm replica; raises
    ``ImageError`` when the store has no such image or it is corrupt.
    """
    if not job.image_digest:
        return None
    env = image_env(layout=Path(settings.TRAINYARD_IMAGE_STORE), digest=job.image_digest)
    return {"digest": job.image_digest, "name": image_name(job), "env": env}
