"""The Django admin speaks cores and GiB, round-trips them exactly, and explains its refusals."""

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import translation

from resources.models import Quota, SiteSettings, Spec
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_every_millicore_and_mib_round_trips_through_the_form_fields():
    from resources.admin_units import CoresField, GibField

    cores, gib = CoresField(), GibField()
    for milli in range(0, 5001):
        assert cores.clean(str(cores.prepare_value(milli))) == milli
    for mib in [*range(0, 5001), 448 * 1024 + 1, 2**40 + 7]:
        assert gib.clean(str(gib.prepare_value(mib))) == mib
    assert cores.prepare_value(1500) == Decimal("1.5")
    assert gib.prepare_value(1000) == Decimal("0.9765625")
    assert gib.prepare_value(65536) == Decimal("64")


def form_data(response) -> dict:
    """What the admin's change form posts back when the admin saves it unchanged."""
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if value is None:
            continue
        data[name] = value if isinstance(value, list) else str(field.prepare_value(value))
    return data


@pytest.mark.parametrize(("cpu_milli", "memory_mib"), [(96_000, 448 * 1024), (1_500, 1_000)])
def test_a_node_saved_unchanged_in_the_admin_keeps_its_exact_millicores_and_mib(
    admin_client_, cpu_milli, memory_mib
):
    node = NodeFactory(gpu_model=None, gpu_count=0, cpu_milli=cpu_milli, memory_mib=memory_mib)
    url = reverse("admin:resources_node_change", args=[node.pk])
    page = admin_client_.get(url)
    form = page.context["adminform"].form
    assert form.fields["cpu_milli"].label == "CPU (cores)"
    assert form.fields["memory_mib"].label == "Memory (GiB)"
    data = form_data(page) | {
        "cards-TOTAL_FORMS": "0",
        "cards-INITIAL_FORMS": "0",
        "cards-MIN_NUM_FORMS": "0",
        "cards-MAX_NUM_FORMS": "1000",
    }

    response = admin_client_.post(url, data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    node.refresh_from_db()
    assert (node.cpu_milli, node.memory_mib) == (cpu_milli, memory_mib)


def test_a_spec_is_entered_in_cores_and_gib(admin_client_):
    v100 = GpuModelFactory(name="V100")
    response = admin_client_.post(
        reverse("admin:resources_spec_add"),
        {
            "name": "half-v100",
            "kind": "vgpu",
            "gpu_model": v100.pk,
            "gpu_count": "1",
            "vgpu_compute_percent": "50",
            "vgpu_memory_mib": "8",
            "cpu_milli": "6.5",
            "memory_mib": "28.5",
            "storage_gib": "10",
            "enabled": "on",
            "order": "0",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    spec = Spec.objects.get(name="half-v100")
    assert (spec.vgpu_memory_mib, spec.cpu_milli, spec.memory_mib) == (8192, 6500, 29184)


def test_a_quota_limit_is_entered_in_the_resources_unit(admin_client_):
    owner = UserFactory(username="owner")
    add = reverse("admin:resources_quota_add")
    for resource, typed, stored in [
        (Quota.Resource.CPU, "12.5", 12_500),
        (Quota.Resource.MEMORY, "56", 56 * 1024),
    ]:
        response = admin_client_.post(add, {"user": owner.pk, "resource": resource, "limit": typed})
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert Quota.objects.get(user=owner, resource=resource).limit == stored
    quota = Quota.objects.get(user=owner, resource=Quota.Resource.CPU)
    page = admin_client_.get(reverse("admin:resources_quota_change", args=[quota.pk]))
    assert page.context["adminform"].form["limit"].value() == Decimal("12.5")


def test_a_quota_borrow_limit_is_in_the_limits_unit_and_empty_means_no_cap(admin_client_):
    owner = UserFactory(username="owner")
    v100 = GpuModelFactory(name="V100")
    add = reverse("admin:resources_quota_add")
    for data, borrow_limit in [
        ({"resource": Quota.Resource.CPU, "limit": "8", "borrow_limit": "4.5"}, 4_500),
        ({"resource": Quota.Resource.MEMORY, "limit": "56", "borrow_limit": "0.5"}, 512),
        ({"resource": Quota.Resource.GPU, "gpu_model": v100.pk, "limit": "2"}, None),
    ]:
        response = admin_client_.post(add, {"user": owner.pk, **data})
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert Quota.objects.get(user=owner, resource=data["resource"]).borrow_limit == borrow_limit
    quota = Quota.objects.get(user=owner, resource=Quota.Resource.CPU)
    url = reverse("admin:resources_quota_change", args=[quota.pk])
    page = admin_client_.get(url)
    assert page.context["adminform"].form["borrow_limit"].value() == Decimal("4.5")
    assert admin_client_.post(url, form_data(page)).status_code == 302
    quota.refresh_from_db()
    assert (quota.limit, quota.borrow_limit) == (8_000, 4_500)
    listed = admin_client_.get(reverse("admin:resources_quota_changelist")).content.decode()
    assert "Borrow limit" in listed and "4.5" in listed


def test_a_fractional_borrow_limit_on_cards_is_refused_naming_the_field(admin_client_):
    v100 = GpuModelFactory(name="V100")
    data = {"resource": Quota.Resource.GPU, "gpu_model": v100.pk, "limit": "2"}
    response = admin_client_.post(
        reverse("admin:resources_quota_add"), {**data, "borrow_limit": "1.5"}
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "borrow_limit": ["A limit on GPU cards or virtual-GPU compute is a whole number, not 1.5."]
    }
    assert not Quota.objects.exists()


def test_the_preemption_grace_is_a_site_setting(admin_client_):
    site = SiteSettings.load()
    url = reverse("admin:resources_sitesettings_change", args=[site.pk])
    page = admin_client_.get(url)
    assert page.context["adminform"].form["preempt_grace_seconds"].value() == 60
    response = admin_client_.post(url, form_data(page) | {"preempt_grace_seconds": "120"})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert SiteSettings.load().preempt_grace_seconds == 120


def test_the_jobs_admin_sets_preemptible_and_shows_the_schedulers_borrowing(admin_client_):
    job = JobFactory(preemptible=True, borrowed=True)
    form = admin_client_.get(reverse("admin:jobs_job_change", args=[job.pk])).context["adminform"]
    assert form.form["preemptible"].value() is True
    assert "borrowed" not in form.form.fields
    assert "borrowed" in form.readonly_fields


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("en", "A default quota (no user) for this resource already exists"),
        ("zh-hans", "该资源已有默认配额（无用户）"),
    ],
)
def test_a_second_default_quota_is_refused_with_a_sentence_naming_the_fields(
    admin_client_, language, expected
):
    Quota.objects.create(user=None, resource=Quota.Resource.CPU, limit=8000)
    with translation.override(language):
        response = admin_client_.post(
            reverse("admin:resources_quota_add"),
            {"resource": Quota.Resource.CPU, "limit": "4"},
            HTTP_ACCEPT_LANGUAGE=language,
        )
    page = response.content.decode()
    assert response.status_code == 200
    assert expected in page
    assert "quota_unique_default_resource" not in page
    assert Quota.objects.count() == 1


def test_a_slurm_nodes_cpu_and_memory_are_read_only_in_cores_and_gib(admin_client_):
    node = NodeFactory(
        gpu_model=None, gpu_count=0, cpu_milli=48_000, memory_mib=1_000, from_slurm=True
    )
    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "cpu_milli" not in page.context["adminform"].form.fields
    assert "CPU (cores)" in text and "0.9765625" in text and "millicores" not in text


def test_a_jobs_admin_form_shows_its_request_in_cores_and_gib(admin_client_):
    job = JobFactory(cpu_milli=12_500, memory_mib=1_000)
    page = admin_client_.get(reverse("admin:jobs_job_change", args=[job.pk]))
    form = page.context["adminform"].form
    assert (form.fields["cpu_milli"].label, form.fields["memory_mib"].label) == (
        "CPU (cores)",
        "Memory (GiB)",
    )
    assert form["cpu_milli"].value() == Decimal("12.5")
    text = page.content.decode()
    assert 'value="12.5"' in text and 'value="0.9765625"' in text
