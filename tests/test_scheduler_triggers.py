"""Changes that may let jobs start schedule a pass after they commit."""

import pytest
from celery.signals import before_task_publish
from django.core.cache import cache
from django.urls import reverse

from jobs.lifecycle.pass_requests import PASS_QUEUED_KEY, pass_begins, request_pass
from resources.models import Node, Quota
from resources.services import node_set_state
from tests.factories import GpuModelFactory, NodeFactory, QuotaFactory, UserFactory

pytestmark = pytest.mark.django_db


def schedules(callbacks) -> bool:
    return request_pass in callbacks


def test_saving_a_quota_in_the_admin_schedules_a_pass(
    admin_client_, django_capture_on_commit_callbacks
):
    v100 = GpuModelFactory(name="V100")
    user = UserFactory(username="ada")
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(
            reverse("admin:resources_quota_add"),
            {"user": user.pk, "resource": "gpu", "gpu_model": v100.pk, "limit": 4},
        )
    assert response.status_code == 302
    assert Quota.objects.get(user=user).limit == 4
    assert schedules(callbacks)


def test_deleting_a_quota_in_the_admin_schedules_a_pass(
    admin_client_, django_capture_on_commit_callbacks
):
    quota = QuotaFactory()
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(
            reverse("admin:resources_quota_delete", args=[quota.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not Quota.objects.exists()
    assert schedules(callbacks)


def test_changing_a_node_in_the_admin_schedules_a_pass(
    admin_client_, django_capture_on_commit_callbacks
):
    node = NodeFactory(name="gpu01")
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client_.post(
            reverse("admin:resources_node_changelist"),
            {"action": "drain", "_selected_action": [node.pk]},
        )
    assert response.status_code == 302
    assert Node.objects.get(pk=node.pk).state == Node.State.DRAINING
    assert schedules(callbacks)


def test_node_set_state_schedules_a_pass(django_capture_on_commit_callbacks):
    node = NodeFactory(state=Node.State.DOWN)
    with django_capture_on_commit_callbacks() as callbacks:
        node_set_state(node=node, state=Node.State.READY)
    assert schedules(callbacks)


def test_saving_a_node_schedules_a_pass_but_a_heartbeat_does_not(
    django_capture_on_commit_callbacks,
):
    node = NodeFactory()
    with django_capture_on_commit_callbacks() as callbacks:
        node.save(update_fields=["last_heartbeat"])
    assert not schedules(callbacks)
    with django_capture_on_commit_callbacks() as callbacks:
        node.cpu_milli = 128_000
        node.save()
    assert schedules(callbacks)


@pytest.fixture
def published():
    """Names of the Celery tasks sent to the broker while the test runs."""
    names: list[str] = []

    def record(sender, **_kwargs):
        names.append(sender)

    before_task_publish.connect(record, weak=False)
    cache.delete(PASS_QUEUED_KEY)
    yield names
    before_task_publish.disconnect(record)
    cache.delete(PASS_QUEUED_KEY)


def test_a_burst_of_changes_queues_one_pass_until_that_pass_begins(settings, published):
    settings.TRAINYARD_SHARED_CACHE = True
    for _ in range(5):
        request_pass()
    assert published == ["jobs.tasks.schedule_pass"]
    pass_begins()  # the queued pass reads from now on: a later change needs a new one
    request_pass()
    request_pass()
    assert published == ["jobs.tasks.schedule_pass"] * 2


def test_without_a_shared_cache_every_change_queues_a_pass(settings, published):
    settings.TRAINYARD_SHARED_CACHE = False
    for _ in range(3):
        request_pass()
    assert published == ["jobs.tasks.schedule_pass"] * 3
