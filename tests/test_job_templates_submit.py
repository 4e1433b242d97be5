"""Workload templates on the New job form and in the API: filling, refusing, estimating."""

from decimal import Decimal

import pytest
from django.urls import reverse

from billing.models import Price
from jobs.estimates.seed import seed_templates
from jobs.models import Job, WorkloadTemplate
from tests.billing_cast import PRICES_FROM
from tests.factories import GpuModelFactory
from tests.job_site import build_site, form_post, job_body

pytestmark = pytest.mark.django_db

NASNET_ON_P4 = "NASNet may not run on P4; choose another GPU model."
CLOSED = "so it is not available to your account"


@pytest.fixture
def paid_site(project, owner):
    site = build_site(project=project, billing_for=[owner])
    GpuModelFactory(name="P40", card_memory_gib=24, relative_speed=1.4)
    seed_templates()
    return site


@pytest.fixture
def free_site(project, owner):
    site = build_site(project=project)
    GpuModelFactory(name="P40", card_memory_gib=24, relative_speed=1.4)
    seed_templates()
    return site


def post_api(client, **body):
    return client.post("/api/v1/jobs", job_body(**body), content_type="application/json")


def test_api_refuses_nasnet_on_p4_with_the_reason(paid_site, owner_client):
    response = post_api(owner_client, template="NASNet", resources={"gpu_model": "P4"})
    assert response.status_code == 422
    assert response.json()["errors"]["gpu_model"] == [NASNET_ON_P4]
    assert not Job.objects.exists()


def test_api_refuses_nasnet_to_a_free_account_whatever_the_model(free_site, owner_client):
    response = post_api(owner_client, template="NASNet", resources={"gpu_model": "P4"})
    assert response.status_code == 422
    (message,) = response.json()["errors"]["template"]
    assert "Accounts without billing may use only P4" in message and CLOSED in message


def test_api_refuses_an_unknown_template(paid_site, owner_client):
    response = post_api(owner_client, template="AlexNet")
    assert response.status_code == 422
    assert response.json()["errors"]["template"] == ["There is no workload template named AlexNet"]


def test_api_fills_what_the_body_leaves_out_from_the_template(paid_site, owner_client):
    body = job_body(template="ResNet50")
    del body["command"]
    response = owner_client.post("/api/v1/jobs", body, content_type="application/json")
    assert response.status_code == 201, response.content
    resnet = WorkloadTemplate.objects.get(name="ResNet50")
    job = Job.objects.get()
    assert (job.template, job.command, job.augmentation_command, job.max_runtime_minutes) == (
        resnet,
        resnet.command_template,
        resnet.augmentation_command,
        60,
    )
    data = response.json()
    assert data["template"] == "ResNet50"
    assert data["augmentation_command"] == resnet.augmentation_command


def test_api_keeps_what_the_body_gives(paid_site, owner_client):
    response = post_api(
        owner_client,
        template="MobileNet",
        command="python mine.py",
        augmentation_command="",
        max_runtime_minutes=None,
    )
    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert (job.command, job.augmentation_command, job.max_runtime_minutes) == (
        "python mine.py",
        "",
        None,
    )


def test_form_refuses_nasnet_on_p4_next_to_the_gpu_model(paid_site, owner_client):
    response = owner_client.post(
        reverse("jobs:new"),
        form_post(template="NASNet", filled_template="NASNet", gpu_model="P4"),
    )
    assert response.status_code == 200
    assert response.context["form"].errors["gpu_model"] == [NASNET_ON_P4]
    assert "NASNet may not run on P4" in response.content.decode()
    assert not Job.objects.exists()


def test_form_tells_a_free_account_nasnet_is_closed(free_site, owner_client):
    page = owner_client.get(reverse("jobs:new")).content.decode()
    assert "NASNet · Image classification (not available to your account)" in page
    response = owner_client.post(
        reverse("jobs:new"), form_post(template="NASNet", filled_template="NASNet", gpu_model="P4")
    )
    assert CLOSED in response.context["form"].errors["template"][0]


def test_choosing_a_template_fills_command_search_and_run_time_once(paid_site, owner_client):
    resnet = WorkloadTemplate.objects.get(name="ResNet50")
    chosen = owner_client.post(
        reverse("jobs:new"),
        form_post(template="ResNet50", filled_template="", _action="apply", _panel="template"),
    )
    form = chosen.context["form"]
    assert form.value("command") == resnet.command_template
    assert form.value("augmentation_command") == resnet.augmentation_command
    assert (form.value("max_runtime"), form.value("max_runtime_unit")) == ("60", "minutes")
    assert form.value("filled_template") == "ResNet50"
    edited = owner_client.post(
        reverse("jobs:new"),
        form_post(template="ResNet50", filled_template="ResNet50", command="python mine.py"),
    )
    job = Job.objects.get()
    assert edited.status_code == 302
    assert (job.template, job.command) == (resnet, "python mine.py")


def test_form_page_shows_the_estimate_and_the_restriction(paid_site, owner_client):
    page = owner_client.post(
        reverse("jobs:new"),
        form_post(template="NASNet", filled_template="", _action="apply", _panel="template"),
    ).content.decode()
    assert "NASNet may not run on P4." in page
    assert 'id="estimate-panel"' in page
    assert "no measured times" in page


def test_estimate_panel_endpoint_follows_the_form(paid_site, owner_client):
    priceless = owner_client.post(
        reverse("jobs:estimate"), form_post(template="ResNet50", filled_template="ResNet50")
    )
    assert "No price is set for V100" in priceless.content.decode()
    Price.objects.create(
        gpu_model=paid_site.v100, unit="card_hour", amount=Decimal("12"), valid_from=PRICES_FROM
    )
    # build_site's two datasets hold 6000 samples each.
    response = owner_client.post(
        reverse("jobs:estimate"),
        form_post(template="ResNet50", filled_template="ResNet50", gpu_count="1"),
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "on 1 × V100" in html
    assert "Expected cost" in html
    assert "From the measured tables" in html


def test_estimate_panel_endpoint_wants_a_post_and_a_login(paid_site, owner_client, client):
    assert owner_client.get(reverse("jobs:estimate")).status_code == 405
    owner_client.logout()
    response = client.post(reverse("jobs:estimate"), form_post())
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
