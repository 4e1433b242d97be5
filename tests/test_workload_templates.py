"""Workload templates: seeded from seed 000, and who may use which with which GPU."""

import io

import pytest
from django.core.management import call_command

from billing.accounts import account_for_user
from jobs.estimates.rules import template_errors, templates_for_user
from jobs.estimates.seed import seed_templates
from jobs.models import EstimatePoint, WorkloadTemplate
from tests.estimates_support import seed_models_and_templates
from tests.factories import GpuModelFactory

pytestmark = pytest.mark.django_db


def enable_billing(user) -> None:
    account = account_for_user(user=user)
    account.billing_enabled = True
    account.save()


def test_seeding_twice_gives_five_templates_and_the_tables_once():
    seed_models_and_templates()
    seed_templates()
    assert set(WorkloadTemplate.objects.values_list("name", flat=True)) == {
        "ResNet50",
        "MobileNet",
        "NASNet",
        "Faster R-CNN ResNet50-FPN",
        "SSD-MobileNetV1",
    }
    assert EstimatePoint.objects.filter(kind="measured").count() == 36
    assert EstimatePoint.objects.filter(kind="rough").count() == 10
    nasnet = WorkloadTemplate.objects.get(name="NASNet")
    assert list(nasnet.forbidden_gpu_models.values_list("name", flat=True)) == ["P4"]
    assert not nasnet.estimate_points.exists()
    for template in WorkloadTemplate.objects.all():
        assert "$TRAINYARD_DATA_IN1" in template.command_template
        assert "$TRAINYARD_DATA_OUT" in template.command_template
        assert template.default_max_runtime_minutes


def test_seed_demo_seeds_the_templates(tmp_path, settings):
    settings.TRAINYARD_DATA_ROOT = tmp_path
    call_command("seed_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())
    assert WorkloadTemplate.objects.count() == 5
    assert EstimatePoint.objects.count() == 46
    assert (tmp_path / "demo" / "code" / "v1" / "augment_search.py").exists()


def test_nasnet_on_p4_is_refused_with_the_reason(owner):
    models, templates = seed_models_and_templates()
    enable_billing(owner)
    errors = template_errors(user=owner, template=templates["NASNet"], gpu_model=models["P4"])
    assert errors == {"gpu_model": ["NASNet may not run on P4; choose another GPU model."]}
    assert template_errors(user=owner, template=templates["NASNet"], gpu_model=models["V100"]) == {}


def test_aggregated_model_with_a_forbidden_member_is_refused(owner):
    models, templates = seed_models_and_templates()
    enable_billing(owner)
    any_small = GpuModelFactory(name="*small")
    any_small.members.set([models["P4"], models["P40"]])
    errors = template_errors(user=owner, template=templates["NASNet"], gpu_model=any_small)
    assert "P4" in errors["gpu_model"][0] and "*small" in errors["gpu_model"][0]


def test_account_without_billing_cannot_pick_nasnet_at_all(owner):
    models, templates = seed_models_and_templates()
    for gpu_model in (models["P4"], models["V100"], None):
        errors = template_errors(user=owner, template=templates["NASNet"], gpu_model=gpu_model)
        assert list(errors) == ["template"]
        assert "without billing may use only P4" in errors["template"][0]
        assert "ask an admin to enable billing" in errors["template"][0]
    assert template_errors(user=owner, template=templates["ResNet50"], gpu_model=models["P4"]) == {}


def test_disabled_template_is_refused(owner):
    models, templates = seed_models_and_templates()
    WorkloadTemplate.objects.filter(pk=templates["SSD-MobileNetV1"].pk).update(enabled=False)
    template = WorkloadTemplate.objects.get(pk=templates["SSD-MobileNetV1"].pk)
    errors = template_errors(user=owner, template=template, gpu_model=models["P4"])
    assert "disabled" in errors["template"][0]


def test_no_template_is_always_allowed(owner):
    models, _templates = seed_models_and_templates()
    assert template_errors(user=owner, template=None, gpu_model=models["P4"]) == {}


def test_template_list_says_why_nasnet_is_closed_to_a_free_account(
    owner, django_assert_max_num_queries
):
    seed_models_and_templates()
    account_for_user(user=owner)
    with django_assert_max_num_queries(4):
        listed = {template.name: reason for template, reason in templates_for_user(user=owner)}
    assert "not available to your account" in listed["NASNet"]
    assert listed["ResNet50"] == ""
    enable_billing(owner)
    assert all(reason == "" for _t, reason in templates_for_user(user=owner))
