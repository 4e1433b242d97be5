"""The admin's images: adding one from an archive (queued, then ready), bad input named per field,
and the image's page showing what it holds and the jobs using it."""

from __future__ import annotations

import subprocess

import pytest
from celery import current_app
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import Image
from tests.factories import JobFactory, ProjectFactory
from tests.support.tiny_images import build_tiny_image

pytestmark = pytest.mark.django_db
ADD = "/admin/jobs/image/add/"


@pytest.fixture
def eager_tasks():
    """The worker's tasks, run in place (the worker imports every tasks module)."""
    import jobs.tasks  # noqa: F401

    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = False


def test_an_uploaded_archive_is_added_and_its_page_shows_what_it_holds(
    admin_client, tmp_path, settings, eager_tasks, django_capture_on_commit_callbacks
):
    settings.TRAINYARD_IMAGE_STORE = tmp_path / "store"
    build_tiny_image(tmp_path / "layout", "a", marker="A", env=["X=1"], python=True)
    archive = tmp_path / "a.tar"
    subprocess.run(
        ["skopeo", "copy", "--quiet", f"oci:{tmp_path / 'layout'}:a", f"oci-archive:{archive}"],
        check=True,
    )
    project = ProjectFactory()
    form = {"project": project.pk, "name": "tiny", "source": "archive", "source_detail": ""}
    upload = SimpleUploadedFile("a.tar", archive.read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(ADD, {**form, "archive": upload})
    assert response.status_code == 302, response.content.decode()[:2000]
    image = Image.objects.get(name="tiny")
    assert (image.state, image.python_version) == (Image.State.READY, "3.11")
    JobFactory(project=project, image=image, image_digest=image.digest)
    page = admin_client.get(f"/admin/jobs/image/{image.pk}/change/").content.decode()
    assert image.digest in page and "3.11" in page
    assert f"{image.layers[0]['digest']} (" in page  # each layer, with its size
    assert f'?image__id__exact={image.pk}">1</a>' in page  # the one job using it
    listing = admin_client.get("/admin/jobs/image/").content.decode()
    assert "tiny" in listing


@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"source": "archive"}, "archive", "Choose the archive to upload."),
        (
            {"source": "registry", "source_detail": "-oops ; rm -rf /"},
            "source_detail",
            "Not a registry reference such as",
        ),
        ({"source": "containerfile"}, "source_detail", "Write the Containerfile."),
        ({"source": "recipe", "source_detail": "nope"}, "source_detail", "built-in recipes"),
    ],
)
def test_bad_input_is_refused_naming_the_field(admin_client, form, field, message):
    project = ProjectFactory()
    response = admin_client.post(ADD, {"project": project.pk, "name": "x", **form})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors[field])
    assert not Image.objects.filter(name="x").exists()
