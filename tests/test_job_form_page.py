"""The New job page: defaults, htmx panels, no-JavaScript fallbacks, errors and CSRF."""

import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from jobs.environment import EnvironmentInput, job_environment
from jobs.models import Job
from resources.models import SiteSettings
from tests.factories import (
    CodeVersionFactory,
    DatasetFactory,
    ImageFactory,
    ProjectFactory,
    SpecFactory,
    UserFactory,
)
from tests.job_site import build_site, form_post

pytestmark = pytest.mark.django_db
URL = "/jobs/new/"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


class Controls(HTMLParser):
    """Collects form controls, the ids labels point at, and controls wrapped in labels."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict] = []
        self.label_for: set[str] = set()
        self.in_label = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "label":
            self.in_label += 1
            if attrs.get("for"):
                self.label_for.add(attrs["for"])
        if tag in ("input", "select", "textarea") and attrs.get("type") != "hidden":
            self.controls.append({**attrs, "_wrapped": self.in_label > 0})

    def handle_endtag(self, tag):
        if tag == "label":
            self.in_label -= 1


def controls_of(html: str) -> Controls:
    parser = Controls()
    parser.feed(html)
    return parser


def checked(html: str, name: str) -> list[str]:
    return [
        c["value"] for c in controls_of(html).controls if c.get("name") == name and "checked" in c
    ]


def test_every_control_has_a_label(owner_client, site):
    SiteSettings.objects.filter(pk=1).update(spec_management_enabled=True)
    parsed = controls_of(owner_client.get(URL).content.decode())
    unlabelled = [
        c for c in parsed.controls if not c["_wrapped"] and c.get("id") not in parsed.label_for
    ]
    assert len(parsed.controls) > 20
    assert unlabelled == []


def test_every_described_by_points_at_an_element_that_is_there(owner_client, site):
    """A screen reader reads a field's help and its errors: the ids must exist."""
    html = owner_client.post(URL, form_post(cpu_cores="", gpu_count="0", name="x" * 300)).content
    html = html.decode()
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    described = {
        i for group in re.findall(r'aria-describedby="([^"]+)"', html) for i in group.split()
    }
    assert any(i.endswith("_error") for i in described)  # the post had errors
    assert described - ids == set()


def test_project_data_is_selected_by_default(owner_client, site):
    html = owner_client.get(URL).content.decode()
    assert checked(html, "datasets") == ["cats", "dogs"]
    assert checked(html, "pretrained_models") == ["resnet50"]
    form = owner_client.get(URL).context["form"]
    assert (form["code_version"].value(), form["image"].value()) == ("v1", "pytorch")


def test_project_from_the_query_string(owner_client, owner, site):
    ProjectFactory(name="zeta", owner=owner)
    form = owner_client.get(URL + "?project=zeta").context["form"]
    assert form["project"].value() == "zeta"


def test_free_tier_model_is_the_default(owner_client, site):
    assert owner_client.get(URL).context["form"]["gpu_model"].value() == "P4"


def test_spec_mode_only_when_the_admin_turned_it_on(owner_client, site):
    SpecFactory(name="V100 × 1", gpu_model=site.v100)
    assert 'name="config_mode"' not in owner_client.get(URL).content.decode()
    SiteSettings.objects.filter(pk=1).update(spec_management_enabled=True)
    html = owner_client.get(URL).content.decode()
    assert 'name="config_mode"' in html
    assert "V100 × 1" in html


def test_high_priority_is_offered_to_staff_only(client, owner_client, site):
    assert 'value="high"' not in owner_client.get(URL).content.decode()
    staff = UserFactory(username="staffer", is_staff=True)
    client.force_login(staff)
    assert 'value="high"' in client.get(URL).content.decode()


def test_gpu_ratio_shown_live(owner_client, site):
    data = form_post(gpu_model="V100", gpu_count="3", _action="apply", _panel="resources")
    response = owner_client.post(URL, data, **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="resources-section"')
    assert "<html" not in html
    form = response.context["form"]
    assert (form["cpu_cores"].value(), form["memory_gib"].value()) == ("36", "168")
    assert "readonly" in str(form["cpu_cores"])


def test_gpu_custom_keeps_what_the_user_typed(owner_client, site):
    data = form_post(gpu_ratio="custom", cpu_cores="5", memory_gib="30", _action="apply")
    form = owner_client.post(URL, {**data, "_panel": "resources"}, **HTMX).context["form"]
    assert (form["cpu_cores"].value(), form["memory_gib"].value()) == ("5", "30")
    assert "readonly" not in str(form["cpu_cores"])


def test_cpu_memory_by_ratio_shown_live(owner_client, site):
    data = form_post(kind="cpu", cpu_cores="8", cpu_memory_ratio="8", _action="apply")
    form = owner_client.post(URL, {**data, "_panel": "resources"}, **HTMX).context["form"]
    assert form["memory_gib"].value() == "64"


def test_vgpu_memory_and_totals_shown_live(owner_client, site):
    data = form_post(kind="vgpu", gpu_count="2", vgpu_compute_percent="25", _action="apply")
    response = owner_client.post(URL, {**data, "_panel": "resources"}, **HTMX)
    assert response.context["form"]["vgpu_memory_gib"].value() == "4"
    assert "Total compute: 50% · total GPU memory: 8 GiB" in response.content.decode()


def test_changing_project_selects_the_new_projects_data(owner_client, owner, site):
    other = ProjectFactory(name="audio", owner=owner)
    DatasetFactory(project=other, name="speech")
    CodeVersionFactory(project=other, name="v7")
    ImageFactory(project=other, name="kaldi", is_default=True)
    data = form_post(project="audio", _action="apply", _panel="project-items")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    assert html.lstrip().startswith('<fieldset id="project-items"')
    assert checked(html, "datasets") == ["speech"]
    assert 'value="kaldi" selected' in html
    assert 'value="v7" selected' in html


def test_deselected_data_stays_deselected_in_the_same_project(owner_client, site):
    data = form_post(datasets=["dogs"], _action="apply", _panel="project-items")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    assert checked(html, "datasets") == ["dogs"]


def test_feasibility_panel(owner_client, site):
    data = form_post(gpu_count="16", _action="feasibility")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="feasibility-panel"')
    assert "no node has 16 V100 cards (largest: 8)" in html
    html = owner_client.post(URL, form_post(_action="feasibility"), **HTMX).content.decode()
    assert "Feasible" in html


def test_feasibility_without_javascript_keeps_the_form(owner_client, site):
    data = form_post(name="kept-name", gpu_count="16", _action="feasibility")
    response = owner_client.post(URL, data)
    html = response.content.decode()
    assert "<html" in html
    assert "no node has 16 V100 cards" in html
    assert 'value="kept-name"' in html
    assert not Job.objects.exists()


def test_environment_panel_uses_the_shared_builder(owner_client, site):
    data = form_post(
        task_mode="distributed", replicas="2", gpu_count="2", ports="8080", _action="environment"
    )
    html = owner_client.post(URL, data, **HTMX).content.decode()
    expected = job_environment(
        EnvironmentInput(
            job_id=None,
            replicas=2,
            distributed=True,
            kind="gpu",
            gpu_count=2,
            dataset_count=2,
            pretrained_count=1,
            ports=(8080,),
        )
    )
    assert html.lstrip().startswith('<div id="environment-panel"')
    assert html.count("<tr><td><code>") == len(expected)
    for name, value in expected.items():
        assert f"<code>{name}</code></td><td><code>{escape(value)}</code>" in html
    for name in ("MASTER_ADDR", "WORLD_SIZE", "TRAINYARD_DATA_IN2", "TRAINYARD_PORT_8080"):
        assert name in expected


def test_environment_counts_only_selected_datasets(owner_client, site):
    data = form_post(datasets=["dogs"], _action="environment")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    assert "TRAINYARD_DATA_IN1" in html and "TRAINYARD_DATA_IN2" not in html


def test_submit_creates_the_job_and_shows_it(owner_client, site):
    response = owner_client.post(URL, form_post(max_runtime="1.5", max_runtime_unit="hours"))
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:detail", args=[job.pk])
    assert job.max_runtime_minutes == 90
    assert job.state == Job.State.QUOTA_WAIT


def test_errors_keep_everything_typed(owner_client, site):
    data = form_post(
        name="my-run",
        command="echo hi\npython train.py",
        ports="8080, 99999",
        max_runtime="3",
        gpu_ratio="custom",
        cpu_cores="7",
        memory_gib="30",
        datasets=["dogs"],
    )
    response = owner_client.post(URL, data)
    html = response.content.decode()
    assert "Port 99999 is out of range" in html
    for kept in ('value="my-run"', "echo hi\npython train.py", 'value="8080, 99999"', 'value="7"'):
        assert kept in html
    assert checked(html, "datasets") == ["dogs"]
    assert 'id="form-errors"' in html
    assert "Please correct the problem below." in html


def test_error_summary_counts_every_message(owner_client, site):
    html = owner_client.post(URL, form_post(command="", ports="80, 80")).content.decode()
    assert "Please correct the 3 problems below." in html


def test_csrf_is_enforced(owner, site):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(URL, form_post()).status_code == 403
    token = client.get(URL).context["csrf_token"]
    response = client.post(URL, {**form_post(), "csrfmiddlewaretoken": str(token)})
    assert response.status_code == 302


def test_wrong_method_is_refused(owner_client, site):
    assert owner_client.put(URL).status_code == 405


def test_anonymous_is_sent_to_login(client, site):
    response = client.get(URL)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_user_without_projects_is_told(client, site):
    client.force_login(UserFactory(username="loner"))
    assert "not a member of any project" in client.get(URL).content.decode()


def test_page_shows_the_free_panel(owner_client, site):
    html = owner_client.get(URL).content.decode()
    assert 'id="free-panel"' in html
    assert 'hx-post="/resources/free/refresh/"' in html


def test_nav_links_to_the_new_job_page(owner_client, site):
    assert f'href="{URL}"' in owner_client.get(reverse("jobs:list")).content.decode()


def test_switching_the_language_renders_the_form_as_posted_and_sets_the_cookie(owner_client, site):
    response = owner_client.post(
        URL, form_post(_action="language", _language="zh-hans", name="kept", gpu_count="3")
    )
    assert response.status_code == 200
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    html = response.content.decode()
    assert '<html lang="zh-hans">' in html and "新建任务" in html
    assert 'value="kept"' in html and 'value="3"' in html
    assert not Job.objects.exists()


def test_an_unknown_language_keeps_the_current_one(owner_client, site):
    response = owner_client.post(URL, form_post(_action="language", _language="xx"))
    assert response.status_code == 200
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "en"


def test_vgpu_mode_offers_only_models_with_virtual_gpus(owner_client, site):
    data = form_post(kind="vgpu", gpu_model="P4", _action="apply", _panel="resources")
    response = owner_client.post(URL, data, **HTMX)
    form = response.context["form"]
    offered = [value for value, _label in form.fields["gpu_model"].choices]
    assert "P4" not in offered and "V100" in offered
    assert form["gpu_model"].value() in offered
    assert form.preview is not None and form.preview.is_vgpu


def test_the_summary_says_what_is_wrong_instead_of_disappearing(owner_client, site):
    data = form_post(kind="cpu", cpu_cores="-2", _action="apply", _panel="resources")
    html = owner_client.post(URL, data, **HTMX).content.decode()
    summary = re.search(r'<p class="summary[^"]*"[^>]*>(.*?)</p>', html, re.S)
    assert summary, html
    assert "CPU cores must be more than 0; you gave -2" in summary.group(1)


@pytest.mark.parametrize(("panel", "most"), [("resource-checks", 19), ("limit-checks", 25)])
def test_a_check_as_typed_takes_few_queries(
    owner_client, site, django_assert_max_num_queries, panel, most
):
    owner_client.get(URL)  # the session and the account exist, as when typing
    data = form_post(kind="cpu", cpu_cores="-2", _action="apply", _panel=panel)
    with django_assert_max_num_queries(most):
        response = owner_client.post(URL, data, **HTMX)
    assert 'hx-swap-oob="true"' in response.content.decode()


def test_the_environment_panel_tells_a_preemptible_job_its_grace(owner_client, site):
    SiteSettings.objects.update_or_create(pk=1, defaults={"preempt_grace_seconds": 75})
    ticked = form_post(preemptible="on", _action="environment")
    html = owner_client.post(URL, ticked, **HTMX).content.decode()
    assert "<code>TRAINYARD_PREEMPT_GRACE</code></td><td><code>75</code>" in html
    plain = owner_client.post(URL, form_post(_action="environment"), **HTMX).content.decode()
    assert "TRAINYARD_PREEMPT_GRACE" not in plain
