"""Run again and personal templates: the New job form filled from a job, unchanged → same job."""

import pytest

from jobs.forms import JobForm
from jobs.models import Job, PersonalTemplate
from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body
from tests.test_job_export import same_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def form_post(page_form: JobForm) -> dict:
    """What the browser posts for an unbound form left as it was filled."""
    data = {"_action": "submit"}
    for name in page_form.fields:
        value = page_form.value(name)
        if value is None or value is False:
            continue
        if value is True:
            data[name] = "on"  # a ticked checkbox
        else:
            data[name] = value if isinstance(value, list) else str(value)
    return data


JOBS = {
    "ratio": {},
    "custom": {
        "resources": {"kind": "gpu", "gpu_count": 2, "cpu_cores": 7.5, "memory_gib": 30.5},
        "ports": [8080],
        "max_runtime_minutes": 90,
        "max_retries": 1,
        "datasets": ["dogs"],
        "code_version": None,
        "preemptible": True,
        "keep_checkpoint": True,
    },
    "vgpu": {
        "resources": {"kind": "vgpu", "gpu_count": 2, "vgpu_compute_percent": 30},
        "max_runtime_minutes": 120,
    },
    "vgpu-unlocked": {
        "resources": {
            "kind": "vgpu",
            "gpu_count": 1,
            "vgpu_compute_percent": 25,
            "vgpu_memory_gib": 6,
        },
        "image": None,
    },
    "cpu": {"resources": {"kind": "cpu", "gpu_model": None, "cpu_cores": 3, "cpu_memory_ratio": 8}},
    "cpu-custom": {
        "resources": {"kind": "cpu", "gpu_model": None, "cpu_cores": 2, "memory_gib": 5}
    },
    "distributed": {"task_mode": "distributed", "replicas": 2, "pretrained_models": []},
}


@pytest.mark.parametrize("overrides", JOBS.values(), ids=JOBS.keys())
def test_run_again_opens_the_form_filled_and_submitting_it_makes_the_same_job(
    owner_client, owner, site, overrides
):
    first = job_submit(user=owner, data=job_body(**overrides))
    page = owner_client.get(f"/jobs/new/?from={first.pk}")
    assert page.status_code == 200
    form = page.context["form"]
    assert form.value("name") == first.name
    response = owner_client.post("/jobs/new/", form_post(form))
    assert response.status_code == 302, response.context["form"].errors
    again = Job.objects.exclude(pk=first.pk).get()
    assert same_job(first, again) == {}


def test_a_ratio_job_reopens_on_the_ratio_and_a_custom_one_on_custom(owner_client, owner, site):
    ratio = job_submit(user=owner, data=job_body(resources={"gpu_count": 2}))
    custom = job_submit(user=owner, data=job_body(**JOBS["custom"]))
    form = owner_client.get(f"/jobs/new/?from={ratio.pk}").context["form"]
    assert (form.value("gpu_ratio"), form.value("cpu_cores")) == ("ratio", "24")
    form = owner_client.get(f"/jobs/new/?from={custom.pk}").context["form"]
    assert (form.value("gpu_ratio"), form.value("cpu_cores")) == ("custom", "7.5")
    assert (form.value("max_runtime"), form.value("max_runtime_unit")) == ("90", "minutes")


def test_the_job_page_links_run_again(owner_client, owner, site):
    job = job_submit(user=owner, data=job_body())
    page = owner_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/new/?from={job.pk}"' in page


def test_nobody_runs_again_a_job_they_cannot_see(client, outsider, owner, site):
    job = job_submit(user=owner, data=job_body())
    client.force_login(outsider)
    assert client.get(f"/jobs/new/?from={job.pk}").status_code == 404
    assert client.get("/jobs/new/?from=x").status_code == 404
    assert client.post(f"/jobs/{job.pk}/save-template/", {"template_name": "t"}).status_code == 404


def test_save_as_template_then_start_a_job_from_it(owner_client, owner, member, site):
    job = job_submit(user=owner, data=job_body(**JOBS["custom"]))
    response = owner_client.post(f"/jobs/{job.pk}/save-template/", {"template_name": " mine "})
    assert response.status_code == 302
    template = PersonalTemplate.objects.get(owner=owner)
    assert (template.name, template.source_job) == ("mine", job)

    form_page = owner_client.get("/jobs/new/")
    assert f'href="/jobs/new/?saved={template.pk}"' in form_page.content.decode()
    form = owner_client.get(f"/jobs/new/?saved={template.pk}").context["form"]
    owner_client.post("/jobs/new/", form_post(form))
    again = Job.objects.exclude(pk=job.pk).get()
    assert same_job(job, again) == {}

    # The same name replaces; another user's templates are their own.
    owner_client.post(f"/jobs/{again.pk}/save-template/", {"template_name": "mine"})
    assert PersonalTemplate.objects.get(owner=owner).source_job == again
    owner_client.force_login(member)
    assert owner_client.get(f"/jobs/new/?saved={template.pk}").status_code == 404
    assert list(owner_client.get("/jobs/templates/").context["templates"]) == []


@pytest.mark.parametrize(
    "name, message",
    [("   ", "Template name: give the template a name."), ("x" * 129, "at most 128 characters")],
)
def test_a_bad_template_name_names_the_field_and_keeps_what_was_typed(
    owner_client, owner, site, name, message
):
    job = job_submit(user=owner, data=job_body())
    response = owner_client.post(f"/jobs/{job.pk}/save-template/", {"template_name": name})
    assert response.status_code == 422
    page = response.content.decode()
    assert message in page
    assert f'value="{name}"' in page
    assert not PersonalTemplate.objects.exists()


def test_templates_page_lists_and_deletes_ones_own(
    owner_client, owner, site, django_assert_num_queries
):
    job = job_submit(user=owner, data=job_body())
    for name in ("a", "b", "c"):
        owner_client.post(f"/jobs/{job.pk}/save-template/", {"template_name": name})
    # session, user, free-hours banner, unread notifications, templates
    with django_assert_num_queries(5):
        page = owner_client.get("/jobs/templates/")
    assert [t.name for t in page.context["templates"]] == ["a", "b", "c"]
    template = PersonalTemplate.objects.get(name="b")
    assert owner_client.post(f"/jobs/templates/{template.pk}/delete/").status_code == 302
    assert list(PersonalTemplate.objects.values_list("name", flat=True)) == ["a", "c"]
