"""The form's estimate panel: times for the chosen and compared card counts, and the cost."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from billing.accounts import account_for_user
from billing.models import Price
from jobs.estimates.cost import estimate_cost
from jobs.estimates.estimate import Estimator
from jobs.estimates.formatting import duration_text
from jobs.estimates.panel import estimate_panel
from tests.estimates_support import seed_models_and_templates

pytestmark = pytest.mark.django_db

PRICES_FROM = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def seeded():
    models, templates = seed_models_and_templates()
    for name, amount in {"V100": "12.00", "P40": "6.00", "P4": "3.00"}.items():
        Price.objects.create(
            gpu_model=models[name], unit="card_hour", amount=Decimal(amount), valid_from=PRICES_FROM
        )
    return models, templates


def paid(user):
    account = account_for_user(user=user)
    account.billing_enabled = True
    account.save()
    return account


def test_duration_text_reads_like_the_issue():
    assert duration_text(20.4) == "20 s"
    assert duration_text(59.7) == "1 min"
    assert duration_text(400) == "7 min"
    assert duration_text(3600) == "1 h"
    assert duration_text(4830) == "1 h 20 min"


def test_panel_shows_the_chosen_count_and_the_others_with_the_cost(
    seeded, owner, django_assert_max_num_queries
):
    models, templates = seeded
    paid(owner)
    with django_assert_max_num_queries(10):
        panel = estimate_panel(
            user=owner,
            template=templates["ResNet50"],
            gpu_model=models["V100"],
            cards=1,
            dataset_samples=6000,
            with_augmentation=False,
            command="",
        )
    assert panel.chosen.cards == 1
    assert panel.chosen.estimate.training_seconds == pytest.approx(400)
    assert [(o.cards, round(o.estimate.seconds)) for o in panel.others] == [
        (2, 326),
        (4, 232),
        (6, 198),
    ]
    # 400 s on one V100 at 12.00 per card-hour.
    assert panel.cost.expected == Decimal("1.33")
    assert panel.cost.low < panel.cost.expected < panel.cost.high
    assert panel.cost.currency == "CNY"
    assert panel.notes == []


def test_free_account_on_p4_spends_free_hours_not_money(seeded, owner):
    models, templates = seeded
    panel = estimate_panel(
        user=owner,
        template=templates["MobileNet"],
        gpu_model=models["P4"],
        cards=2,
        dataset_samples=6000,
        with_augmentation=False,
        command="",
    )
    assert panel.chosen.estimate.training_seconds == pytest.approx(370)
    assert panel.cost.expected == Decimal("0.00")
    assert panel.cost.free_card_hours == Decimal("0.21")  # 370 s × 2 cards


def test_cost_after_the_free_grant_is_used_up_is_charged(seeded, owner):
    models, templates = seeded
    account = paid(owner)
    account.grants.update(used_card_seconds=100 * 3600)
    estimate = Estimator().template(
        template=templates["ResNet50"], dataset_samples=6000, gpu_model=models["P4"], cards=1
    )
    cost = estimate_cost(account=account, gpu_model=models["P4"], cards=1, estimate=estimate)
    assert cost.expected == Decimal("1.15")  # 1385 s at 3.00 per card-hour
    assert cost.free_card_hours == 0


def test_free_account_is_told_nasnet_is_closed_to_it(seeded, owner):
    models, templates = seeded
    panel = estimate_panel(
        user=owner,
        template=templates["NASNet"],
        gpu_model=models["P4"],
        cards=1,
        dataset_samples=6000,
        with_augmentation=False,
        command="",
    )
    assert panel.chosen is None
    assert "not available to your account" in panel.notes[0]


def test_nasnet_for_a_paid_account_says_the_first_run_gives_an_estimate(seeded, owner):
    models, templates = seeded
    paid(owner)
    panel = estimate_panel(
        user=owner,
        template=templates["NASNet"],
        gpu_model=models["V100"],
        cards=1,
        dataset_samples=6000,
        with_augmentation=True,
        command="",
    )
    assert panel.chosen is None
    assert "first finished job" in panel.notes[0]


def test_template_with_augmentation_says_the_search_is_not_timed_yet(seeded, owner):
    models, templates = seeded
    paid(owner)
    panel = estimate_panel(
        user=owner,
        template=templates["SSD-MobileNetV1"],
        gpu_model=models["V100"],
        cards=6,
        dataset_samples=400,
        with_augmentation=True,
        command="",
    )
    assert panel.chosen.estimate.training_seconds == pytest.approx(234)
    assert "augmentation search" in panel.notes[0]


def test_no_template_and_no_earlier_run_gives_no_estimate(seeded, owner):
    models, _templates = seeded
    panel = estimate_panel(
        user=owner,
        template=None,
        gpu_model=models["V100"],
        cards=1,
        dataset_samples=0,
        with_augmentation=False,
        command="python mine.py",
    )
    assert panel.chosen is None
    assert "not run this command" in panel.notes[0]
