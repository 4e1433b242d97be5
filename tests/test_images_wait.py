"""A job may be submitted while its image is still being added: it waits for the image.

A person who has just added an image (or opened the demo while its images build) submits
at once; refusing them ("try again when it is ready") loses their form for no reason the
platform could not wait out itself. The job waits in the queue, saying for which image;
it takes the image's digest and may start once the image is ready, and fails, naming the
image's problem, if the image could not be added.
"""

from __future__ import annotations

import subprocess

import pytest
from django.core import mail
from django.urls import reverse

from jobs.images.add import image_add, incoming_archive
from jobs.models import Image, Job
from jobs.scheduler import run_pass
from jobs.services.submit import job_submit
from notifications.models import Kind, Notification
from tests.factories import NodeFactory, ProjectFactory, UserFactory
from tests.notification_support import queued_job_events
from tests.support.tiny_images import build_tiny_image

pytestmark = pytest.mark.django_db


# A registry reference nothing answers at: its image cannot be added.
UNREACHABLE = "127.0.0.1:9/team/none:1"


def being_added(project, name: str, source: str, detail: str = "") -> Image:
    """An image of ``project`` as the admin leaves it: added, not yet ready."""
    return Image.objects.create(
        project=project, name=name, source=source, source_detail=detail, state=Image.State.ADDING
    )


@pytest.fixture
def store(tmp_path, settings):
    settings.TRAINYARD_IMAGE_STORE = tmp_path / "store"
    return settings.TRAINYARD_IMAGE_STORE


@pytest.fixture
def submit():
    NodeFactory(gpu_model=None, gpu_count=0, cpu_milli=8000, memory_mib=32 * 1024)
    user = UserFactory(email="owner@example.com")
    project = ProjectFactory(owner=user)

    def submit(image: Image, name: str = "first") -> Job:
        data = {"project": project.name, "name": name, "command": "true", "image": image.name}
        return job_submit(user=user, data={**data, "resources": {"cpu_cores": 1}})

    submit.project = project
    return submit


def test_a_job_waits_for_its_image_and_starts_in_it_once_ready(tmp_path, store, submit):
    image = being_added(submit.project, "coming", Image.Source.ARCHIVE)
    job = submit(image)
    run_pass()
    job.refresh_from_db()
    # what it lacks is something to run in, not quota: "Waiting for resources"
    assert (job.state, job.image_digest) == (Job.State.RESOURCE_WAIT, "")
    assert job.state_reason == "Waiting for image coming to be added"
    assert job.state_reason_code == "wait.image"

    layout, archive = tmp_path / "layout", tmp_path / "image.tar"
    build_tiny_image(layout, "a", marker="A", env=[], python=False)
    subprocess.run(["skopeo", "copy", "--quiet", f"oci:{layout}:a", f"oci-archive:{archive}"])
    incoming_archive(image.pk).parent.mkdir(parents=True, exist_ok=True)
    incoming_archive(image.pk).write_bytes(archive.read_bytes())
    image = image_add(image.pk)
    assert image.state == Image.State.READY

    run_pass()
    job.refresh_from_db()
    assert job.image_digest == image.digest
    assert job.state == Job.State.STARTING


def test_a_job_waiting_for_an_image_that_cannot_be_added_fails_naming_why(store, submit):
    image = being_added(submit.project, "far", Image.Source.REGISTRY, UNREACHABLE)
    job = submit(image)
    image = image_add(image.pk)
    assert image.state == Image.State.FAILED
    job.refresh_from_db()
    assert job.state == Job.State.FAILED
    assert job.state_reason.startswith("Image far could not be added: ")
    assert "127.0.0.1:9" in job.state_reason


def test_its_owner_is_told_a_job_failed_for_its_image_though_it_never_started(
    store, submit, django_capture_on_commit_callbacks
):
    from notifications.tasks import notify_job_event

    image = being_added(submit.project, "far", Image.Source.REGISTRY, UNREACHABLE)
    job = submit(image)
    with django_capture_on_commit_callbacks() as callbacks:
        image_add(image.pk)
    for event_id in queued_job_events(callbacks):
        notify_job_event(event_id)

    notification = Notification.objects.get(job=job)
    assert notification.kind == Kind.FAILED
    [email] = mail.outbox
    assert f"Job #{job.pk} {job.name}" in email.subject
    assert "Image far could not be added" in email.body


def test_the_job_page_says_its_image_is_being_added_not_that_it_has_none(client, submit):
    # Its digest is empty until the image is ready; empty also means the node's own system.
    image = being_added(submit.project, "coming", Image.Source.ARCHIVE)
    job = submit(image)
    client.force_login(job.owner)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "own system" not in page
    assert 'coming <span class="muted">(being added)</span>' in page
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    assert (
        'coming <span class="muted">(添加中)</span>'
        in client.get(f"/jobs/{job.pk}/").content.decode()
    )
