"""Staff operate every job: list, open and stop it, in the app and the API (issue 18, point 5).

As an admin saw it: the Jobs page was empty, /jobs/<id>/ of alice's job a 404,
and nothing could stop it but the Django admin, which cannot either.
"""

import pytest

from jobs.models import Job
from jobs.services.stop import stop_requester
from tests.factories import JobFactory, NodeFactory, ReplicaFactory, UserFactory

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def staff():
    return UserFactory(username="ops", is_staff=True)


@pytest.fixture
def alices_job():
    return JobFactory(owner=UserFactory(username="alice"), name="alice-train")


def test_staff_open_and_stop_another_users_job_and_the_stop_says_who(client, staff, alices_job):
    client.force_login(staff)
    assert client.get(f"/jobs/{alices_job.pk}/").status_code == 200
    response = client.post(f"/jobs/{alices_job.pk}/stop/")
    assert response.status_code == 302
    alices_job.refresh_from_db()
    assert alices_job.state == Job.State.STOPPED
    assert stop_requester(job=alices_job) == staff


def test_staff_see_every_job_in_the_list_and_filter_by_user_and_node(client, staff, alices_job):
    bobs = JobFactory(owner=UserFactory(username="bob"), name="bob-train")
    node = NodeFactory(name="gpu-07")
    ReplicaFactory(job=bobs, node=node)
    client.force_login(staff)
    page = client.get("/jobs/").content.decode()
    assert "alice-train" in page and "bob-train" in page
    assert ">alice<" in page  # an Owner column
    only_alice = client.get("/jobs/?user=alice").content.decode()
    assert "alice-train" in only_alice and "bob-train" not in only_alice
    on_node = client.get("/jobs/?node=gpu-07").content.decode()
    assert "bob-train" in on_node and "alice-train" not in on_node


def test_other_users_still_get_404_for_someone_elses_job(client, alices_job):
    client.force_login(UserFactory(username="mallory"))
    assert client.get(f"/jobs/{alices_job.pk}/").status_code == 404
    assert client.post(f"/jobs/{alices_job.pk}/stop/").status_code == 404
    assert "alice-train" not in client.get("/jobs/?user=alice").content.decode()


def test_api_lists_every_job_for_staff_with_all_and_stops_it(client, staff, alices_job):
    own = JobFactory(owner=staff, name="ops-own")
    client.force_login(staff)
    mine = [job["id"] for job in client.get("/api/v1/jobs").json()["items"]]
    assert mine == [own.pk]
    every = [job["id"] for job in client.get("/api/v1/jobs?all=1").json()["items"]]
    assert sorted(every) == sorted([own.pk, alices_job.pk])
    response = client.post(f"/api/v1/jobs/{alices_job.pk}/stop", content_type=JSON)
    assert response.status_code == 200 and response.json()["state"] == "stopped"
    assert stop_requester(job=Job.objects.get(pk=alices_job.pk)) == staff


def test_api_all_is_refused_to_users_who_are_not_staff(client, alices_job):
    client.force_login(UserFactory(username="mallory"))
    response = client.get("/api/v1/jobs?all=1")
    assert response.status_code == 403
    assert "all" in response.json()["detail"]
