"""Adding an image to a project: from a registry, an uploaded archive, a Containerfile or a recipe.

The admin's form saves the row as ``adding`` and queues ``jobs.tasks.image_add``;
this does the work there, however long it takes: the image is brought into the
site's store (``store.py``), what it holds is read (``facts.py``), and the row
becomes ``ready`` with its digest, or ``failed`` with the reason in ``problem``.
Jobs may choose it at once: they wait for it, then take its digest or fail with its
problem (``waiting_jobs.py``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from jobs.execution.replica.image_error import ImageError
from jobs.models import Image

from .facts import image_facts
from .store import StoreError, store_copy, store_path, store_tag
from .waiting_jobs import image_saved

# A registry reference as Docker's grammar spells one: host[:port]/path[:tag][@digest].
REGISTRY_REFERENCE = re.compile(
    r"[a-z0-9][a-z0-9.-]*(?::[0-9]{1,5})?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


logger = logging.getLogger("trainyard.images")


class AddError(Exception):
    """Why an image could not be added, for its ``problem``."""


def incoming_archive(image_id: int) -> Path:
    """Where an uploaded archive waits for its image to be added."""
    return store_path() / "incoming" / f"{store_tag(image_id)}.tar"


def registry_reference_problem(reference: str) -> str | None:
    if not REGISTRY_REFERENCE.fullmatch(reference):
        return "not a registry reference such as registry.example.org:5000/team/pytorch:2.13"
    return None


def image_add(image_id: int) -> Image:
    """Bring the image into the store and record what it holds; never raises for the image."""
    image = Image.objects.get(pk=image_id)
    began = time.monotonic()
    logger.info("Image %s: adding (%s)", image.name, image.get_source_display())
    try:
        with _source_of(image) as source:
            digest = store_copy(source, tag=store_tag(image.pk), options=_source_options(image))
        facts = image_facts(store_path(), digest)
    except (AddError, StoreError, ImageError) as error:
        image.state, image.problem = Image.State.FAILED, str(error)
        image_saved(image)
        logger.warning("Image %s: could not be added: %s", image.name, error)
        return image
    finally:
        incoming_archive(image.pk).unlink(missing_ok=True)
    image.digest, image.size_bytes, image.layers = digest, facts.size_bytes, facts.layers
    image.python_version, image.cuda_version = facts.python_version, facts.cuda_version
    image.torch_version, image.state, image.problem = facts.torch_version, Image.State.READY, ""
    image_saved(image)
    logger.info(
        "Image %s: ready, %s, %.0f MB in %s, added in %.0f s",
        image.name,
        digest[:19],
        facts.size_bytes / 1e6,
        "1 layer" if len(facts.layers) == 1 else f"{len(facts.layers)} layers",
        time.monotonic() - began,
    )
    return image


@contextlib.contextmanager
def _source_of(image: Image) -> Iterator[str]:
    """The containers-image reference skopeo copies from, for as long as it is needed."""
    Source = Image.Source
    if image.source == Source.REGISTRY:
        problem = registry_reference_problem(image.source_detail)
        if problem:
            raise AddError(problem)
        yield f"docker://{image.source_detail}"
    elif image.source == Source.ARCHIVE:
        yield _archive_reference(incoming_archive(image.pk))
    elif image.source == Source.CONTAINERFILE:
        with _built(image) as reference:
            yield reference
    elif image.source == Source.RECIPE:
        yield _recipe_reference(image.source_detail)
    else:
        raise AddError("an image of the node's own system has nothing to add")


def _source_options(image: Image) -> tuple[str, ...]:
    """Plain HTTP only for a registry the site names as its own (no TLS on it)."""
    host = image.source_detail.split("/", 1)[0]
    insecure = settings.TRAINYARD_IMAGE_INSECURE_REGISTRIES
    if image.source == Image.Source.REGISTRY and host in insecure:
        return ("--src-tls-verify=false",)
    return ()


def _archive_reference(path: Path) -> str:
    """``oci-archive:`` or ``docker-archive:`` by what the archive holds."""
    try:
        with tarfile.open(path) as archive:
            names = {name.lstrip("./") for name in archive.getnames()}
    except (tarfile.TarError, OSError, EOFError):
        raise AddError("the archive is not a tar file (an OCI archive or `docker save`)") from None
    if "oci-layout" in names and "index.json" in names:
        return f"oci-archive:{path}"
    if "manifest.json" in names:
        return f"docker-archive:{path}"
    raise AddError("the archive holds neither an OCI layout nor a `docker save` image")


@contextlib.contextmanager
def _built(image: Image) -> Iterator[str]:
    """The Containerfile built, FROM the project's ready images by name."""
    from .containerfile import BuildError, build_containerfile

    bases = {
        base.name: (store_path(), store_tag(base.pk))
        for base in Image.objects.filter(project=image.project, state=Image.State.READY)
        .exclude(digest="")
        .exclude(pk=image.pk)
    }
    # Hex only: buildah names the folder in a reference, where mkdtemp's names (with "_" at
    # either end) are refused.
    work = _scratch() / f"build-{secrets.token_hex(8)}"
    work.mkdir(mode=0o700)
    try:
        try:
            layout, tag = build_containerfile(
                containerfile=image.source_detail,
                context=None,
                bases=bases,
                work_dir=work,
                log=logger.debug,
            )
        except BuildError as error:
            raise AddError(str(error)) from None
        yield f"oci:{layout}:{tag}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _recipe_reference(key: str) -> str:
    from .demo_recipes import DEMO_RECIPES, DemoImageError, build_demo_image

    recipe = next((r for r in DEMO_RECIPES if r.key == key), None)
    if recipe is None:
        raise AddError(f"there is no built-in recipe {key!r}")
    try:
        layout, tag = build_demo_image(
            recipe, cache_dir=store_path().parent / "recipe-builds", log=logger.info
        )
    except DemoImageError as error:
        raise AddError(str(error)) from None
    return f"oci:{layout}:{tag}"


def _scratch() -> Path:
    scratch = store_path().parent / "image-builds"
    scratch.mkdir(parents=True, exist_ok=True)
    return scratch
