"""The templates and estimates API: what the form's panel shows, as JSON."""

from decimal import Decimal

import pytest

from billing.models import Price
from tests.billing_cast import PRICES_FROM
from tests.estimates_support import seed_models_and_templates

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded():
    models, templates = seed_models_and_templates()
    Price.objects.create(
        gpu_model=models["V100"], unit="card_hour", amount=Decimal("12"), valid_from=PRICES_FROM
    )
    return models, templates


def test_templates_say_which_a_free_account_may_use(seeded, owner_client):
    listed = {t["name"]: t for t in owner_client.get("/api/v1/templates").json()}
    assert set(listed) == {
        "ResNet50",
        "MobileNet",
        "NASNet",
        "Faster R-CNN ResNet50-FPN",
        "SSD-MobileNetV1",
    }
    assert listed["NASNet"]["forbidden_gpu_models"] == ["P4"]
    assert listed["NASNet"]["available"] is False
    assert "not available to your account" in listed["NASNet"]["unavailable_reason"]
    assert listed["ResNet50"]["available"] is True
    assert "$TRAINYARD_DATA_IN1" in listed["ResNet50"]["command_template"]


def test_estimate_for_two_v100_is_the_measured_time_with_the_others_and_a_cost(
    seeded, owner_client
):
    response = owner_client.get(
        "/api/v1/estimates",
        {"template": "ResNet50", "gpu_model": "V100", "cards": 2, "dataset_samples": 6000},
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["estimate"]["seconds"] == pytest.approx(326)
    assert data["estimate"]["basis"] == "seed"
    assert [o["cards"] for o in data["compared"]] == [1, 4, 6]
    assert data["cost"]["currency"] == "CNY"
    assert Decimal(data["cost"]["expected"]) == Decimal("2.17")  # 326 s × 2 cards × 12/h


def test_refused_template_gives_no_estimate_and_the_reason(seeded, owner_client):
    data = owner_client.get(
        "/api/v1/estimates",
        {"template": "NASNet", "gpu_model": "P4", "cards": 1, "dataset_samples": 6000},
    ).json()
    assert data["estimate"] is None
    assert "not available to your account" in data["notes"][0]


def test_unknown_names_are_422_naming_the_field(seeded, owner_client):
    response = owner_client.get("/api/v1/estimates", {"gpu_model": "A100"})
    assert response.status_code == 422
    assert response.json()["errors"] == {"gpu_model": ["There is no GPU model named A100"]}
    response = owner_client.get("/api/v1/estimates", {"gpu_model": "V100", "template": "X"})
    assert response.json()["errors"] == {"template": ["There is no workload template named X"]}


def test_estimates_need_a_login(seeded, client):
    assert client.get("/api/v1/estimates", {"gpu_model": "V100"}).status_code == 401
    assert client.get("/api/v1/templates").status_code == 401
