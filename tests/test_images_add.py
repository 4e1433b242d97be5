"""Adding a work image (jobs/images/add.py): an archive in, its facts out; bad input, a reason.

Real tools: the archive is written by skopeo from a tiny image umoci built, and
brought into the site's store by skopeo, as an admin's upload is.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile

import pytest
from django.core.exceptions import ValidationError

from jobs.execution.replica.gpu_driver import driver_libraries
from jobs.execution.replica.image_cache import image_prepare
from jobs.execution.replica.prepare import root_label
from jobs.images.add import image_add, incoming_archive
from jobs.images.facts import image_facts
from jobs.images.store import store_copy, store_tag
from jobs.models import Image
from jobs.services.submit import job_submit
from tests.factories import JobFactory, NodeFactory, ProjectFactory, UserFactory
from tests.support.tiny_images import append_layer, build_tiny_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path, settings):
    settings.TRAINYARD_IMAGE_STORE = tmp_path / "store"
    return settings.TRAINYARD_IMAGE_STORE


def uploaded(image: Image, archive) -> Image:
    incoming_archive(image.pk).parent.mkdir(parents=True, exist_ok=True)
    incoming_archive(image.pk).write_bytes(archive.read_bytes())
    return image


@pytest.mark.parametrize("kind", ["oci-archive", "docker-archive"])
def test_an_archive_becomes_a_ready_image_with_what_it_holds(tmp_path, store, kind):
    layout = tmp_path / "layout"
    build_tiny_image(layout, "a", marker="A", env=["GREETING=hi"], python=True)
    archive = tmp_path / "image.tar"
    target = f"{kind}:{archive}" + (":tiny/a:1" if kind == "docker-archive" else "")
    subprocess.run(["skopeo", "copy", "--quiet", f"oci:{layout}:a", target], check=True)
    image = Image.objects.create(
        project=ProjectFactory(), name="tiny", source=Image.Source.ARCHIVE, state="adding"
    )
    image = image_add(uploaded(image, archive).pk)
    assert (image.state, image.problem) == (Image.State.READY, "")
    assert image.digest.startswith("sha256:") and len(image.layers) == 1
    assert image.python_version == "3.11"
    assert (image.cuda_version, image.torch_version) == ("", "")
    assert image.size_bytes > image.layers[0]["size"]  # and its config
    assert (store / "blobs" / "sha256" / image.digest.split(":")[1]).exists()
    assert not incoming_archive(image.pk).exists()  # the upload is not kept twice


def test_a_corrupt_archive_fails_with_a_reason(tmp_path, store):
    archive = tmp_path / "broken.tar"
    archive.write_bytes(b"not a tar at all" * 100)
    image = Image.objects.create(
        project=ProjectFactory(), name="broken", source=Image.Source.ARCHIVE, state="adding"
    )
    image = image_add(uploaded(image, archive).pk)
    assert image.state == Image.State.FAILED
    assert image.problem == "the archive is not a tar file (an OCI archive or `docker save`)"
    assert image.digest == ""


def test_a_registry_reference_is_pulled_from_the_sites_registry(
    tmp_path, store, registry, settings
):
    layout = tmp_path / "layout"
    build_tiny_image(layout, "a", marker="A", env=["GREETING=hi"], python=True)
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            f"oci:{layout}:a",
            f"docker://{registry}/team/tiny:1",
        ],
        check=True,
    )
    image = Image.objects.create(
        project=ProjectFactory(),
        name="from-registry",
        source=Image.Source.REGISTRY,
        source_detail=f"{registry}/team/tiny:1",
        state="adding",
    )
    refused = image_add(image.pk)  # TLS, which a plain-HTTP registry does not speak
    assert refused.state == Image.State.FAILED and "http" in refused.problem.lower()
    settings.TRAINYARD_IMAGE_INSECURE_REGISTRIES = [registry]
    Image.objects.filter(pk=image.pk).update(state="adding", problem="")
    image = image_add(image.pk)
    assert (image.state, image.problem, image.python_version) == (Image.State.READY, "", "3.11")


def test_a_containerfile_is_built_from_a_ready_image_of_the_project(tmp_path, store):
    layout = tmp_path / "layout"
    build_tiny_image(layout, "a", marker="A", env=["GREETING=hi"], python=True)
    project = ProjectFactory()
    base = Image.objects.create(project=project, name="tiny", source="archive", state="adding")
    base.digest = store_copy(f"oci:{layout}:a", tag=store_tag(base.pk))
    base.state = Image.State.READY
    base.save()
    recipe = "FROM tiny\nRUN echo built > /etc/built\nENV STAGE=two\n"
    image = Image.objects.create(
        project=project, name="built", source="containerfile", source_detail=recipe, state="adding"
    )
    image = image_add(image.pk)
    assert (image.state, image.problem) == (Image.State.READY, "")
    # The base's own layer, shared, then the RUN's.
    assert image.layers[0] == image_facts(store, base.digest).layers[0]
    assert len(image.layers) == 2
    unpacked = image_prepare(
        cache_root=tmp_path / "cache", layout=store, digest=image.digest, lease="check"
    )
    assert (unpacked.rootfs / "etc/built").read_text() == "built\n"
    assert "STAGE=two" in unpacked.env and "GREETING=hi" in unpacked.env


def add_from_an_unknown_base() -> Image:
    """A Containerfile whose FROM names no image of its project, added."""
    image = Image.objects.create(
        project=ProjectFactory(),
        name="built",
        source="containerfile",
        source_detail="FROM elsewhere/base:1\nRUN true\n",
        state="adding",
    )
    return image_add(image.pk)


def test_a_containerfile_from_an_unknown_image_is_refused(store):
    image = add_from_an_unknown_base()
    assert image.state == Image.State.FAILED
    assert "elsewhere/base:1" in image.problem


def test_a_containerfiles_work_folder_is_a_path_buildah_can_name_whatever_is_drawn(
    store, monkeypatch
):
    """A random folder name that starts or ends with ``_`` (``mkdtemp`` draws from a-z, 0-9
    and ``_``) is no reference path for buildah: about one build in twenty failed on it."""
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: iter(["_edge_", "x__y_"]))
    image = add_from_an_unknown_base()
    assert "work folder" not in image.problem
    assert "elsewhere/base:1" in image.problem


def test_a_registry_that_cannot_be_reached_fails_with_its_words(store):
    image = Image.objects.create(
        project=ProjectFactory(),
        name="far",
        source=Image.Source.REGISTRY,
        source_detail="127.0.0.1:9/team/none:1",
        state="adding",
    )
    image = image_add(image.pk)
    assert image.state == Image.State.FAILED
    assert "127.0.0.1:9" in image.problem


def test_submit_records_the_digest_and_refuses_an_image_that_failed(store):
    NodeFactory(gpu_model=None, gpu_count=0, cpu_milli=8000, memory_mib=32 * 1024)
    user = UserFactory()
    project = ProjectFactory(owner=user)
    digest = "sha256:" + "ab" * 32
    Image.objects.create(project=project, name="ready", source="archive", digest=digest)
    Image.objects.create(
        project=project, name="broken", source="archive", state="failed", problem="not a tar"
    )
    base = {"project": project.name, "command": "true", "resources": {"cpu_cores": 1}}
    job = job_submit(user=user, data={**base, "name": "a", "image": "ready"})
    assert job.image_digest == digest
    with pytest.raises(Exception) as refused:
        job_submit(user=user, data={**base, "name": "b", "image": "broken"})
    assert "Image broken could not be added: not a tar" in str(refused.value)


def test_the_driver_libraries_come_from_ldconfig_by_soname():
    cache = """\
\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1
\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6) => /lib/i386-linux-gnu/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
"""
    assert driver_libraries(cache) == [
        "/lib/x86_64-linux-gnu/libcuda.so.1",
        "/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    ]


def test_the_facts_find_cuda_and_pytorch_in_the_layers(tmp_path):
    """A CUDA image's files, as NVIDIA's images and PyTorch's wheels lay them out."""
    layout = tmp_path / "layout"
    build_tiny_image(layout, "a", marker="A", env=[], python=False)
    files = tmp_path / "cuda"
    for name in (
        "usr/local/cuda-12.4/lib64/libcudart.so.12.4.127",
        "usr/local/lib/python3.12/dist-packages/torch-2.5.1+cu124.dist-info/METADATA",
        "usr/bin/python3.12",
    ):
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        (files / name).write_text("")
    layer = tmp_path / "cuda.tar"
    with tarfile.open(layer, "w") as archive:
        archive.add(files, arcname=".")
    digest = append_layer(layout, "a", layer, to_tag="cuda")
    facts = image_facts(layout, digest)
    assert (facts.python_version, facts.cuda_version, facts.torch_version) == (
        "3.12",
        "12.4",
        "2.5.1+cu124",
    )


def test_a_site_that_runs_every_job_in_an_image_refuses_none(store, settings):
    settings.TRAINYARD_HOST_SYSTEM_JOBS = False
    NodeFactory(gpu_model=None, gpu_count=0, cpu_milli=8000, memory_mib=32 * 1024)
    user = UserFactory()
    project = ProjectFactory(owner=user)
    Image.objects.create(project=project, name="host", source="host")
    base = {"project": project.name, "command": "true", "resources": {"cpu_cores": 1}}
    for image in (None, "host"):
        with pytest.raises(ValidationError) as refused:
            job_submit(user=user, data={**base, "name": "a", "image": image})
        assert refused.value.message_dict["image"] == [
            "This site runs every job in an image: choose one of the project's."
        ]


def test_the_form_lists_each_image_with_what_it_holds_or_why_not(client):
    user = UserFactory()
    project = ProjectFactory(owner=user)
    digest = "sha256:" + "cd" * 32
    Image.objects.create(
        project=project,
        name="torch",
        source="archive",
        digest=digest,
        python_version="3.11.2",
        torch_version="2.13.0+cpu",
        is_default=True,
    )
    Image.objects.create(project=project, name="coming", source="archive", state="adding")
    Image.objects.create(project=project, name="host", source="host")
    client.force_login(user)
    page = client.get("/jobs/new/").content.decode()
    assert "torch (Python 3.11.2, PyTorch 2.13.0+cpu)" in page
    assert "coming (being added)" in page
    assert "host (the node&#x27;s own system)" in page


def test_the_log_names_the_root_the_replica_really_has():
    """Without the sandbox (plain processes) a job's image cannot be its root: the log says so."""
    image = Image.objects.create(
        project=ProjectFactory(), name="tiny", source="archive", digest="sha256:" + "ab" * 32
    )
    job = JobFactory(image=image, image_digest=image.digest)
    assert root_label(job, {"image": {"digest": image.digest}}) == (
        "image tiny (sha256:abababababab…) as /"
    )
    assert root_label(job, {"image": None}).startswith("the node's own system as /: image tiny")
    assert root_label(JobFactory(), {"image": None}) == "the node's own system as / (no image)"
