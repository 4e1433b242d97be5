"""One free-tier rule: billing and the workload templates agree on the models an
account without billing may use, aggregated (``*``) models included."""

import pytest

from billing.accounts import account_for_user
from billing.rules import gpu_model_refusal
from jobs.estimates.rules import template_errors
from tests.estimates_support import seed_models_and_templates
from tests.factories import GpuModelFactory

pytestmark = pytest.mark.django_db


def test_billing_and_templates_name_the_same_free_models(owner):
    models, templates = seed_models_and_templates()
    # Flagged free tier, but a member is not: billing refuses it.
    flagged = GpuModelFactory(name="*big", free_tier=True)
    flagged.members.set([models["V100"], models["P4"]])
    # Not flagged, but every member is free tier: billing lets the account use it.
    all_free = GpuModelFactory(name="*P4")
    all_free.members.set([models["P4"]])
    account = account_for_user(user=owner)
    assert gpu_model_refusal(account=account, gpu_model=flagged) is not None
    assert gpu_model_refusal(account=account, gpu_model=all_free) is None

    template_message = template_errors(user=owner, template=templates["NASNet"], gpu_model=None)
    billing_message = gpu_model_refusal(account=account, gpu_model=models["V100"]).message
    assert "may use only *P4, P4," in template_message["template"][0]
    assert "free-tier GPU models (*P4, P4)" in billing_message
