import io

import pytest
from django.apps import apps
from django.core.management import call_command

from resources.models import GpuModel, Node

pytestmark = pytest.mark.django_db

COUNTED = [
    "resources.GpuModel",
    "resources.Node",
    "resources.GpuCard",
    "resources.Spec",
    "resources.Quota",
    "jobs.Project",
    "jobs.Dataset",
    "jobs.Image",
    "billing.Price",
    "billing.Account",
    "billing.FreeGrant",
    "auth.User",
]


def counts() -> dict[str, int]:
    return {label: apps.get_model(label).objects.count() for label in COUNTED}


def test_seed_demo_is_idempotent(tmp_path, settings):
    settings.TRAINYARD_DATA_ROOT = tmp_path
    call_command("seed_demo", stdout=io.StringIO())
    first = counts()
    call_command("seed_demo", stdout=io.StringIO())
    assert counts() == first
    assert all(first.values())


def test_seed_demo_models_follow_seed_000(tmp_path, settings):
    settings.TRAINYARD_DATA_ROOT = tmp_path
    call_command("seed_demo", stdout=io.StringIO())
    table = {
        m.name: (m.card_memory_gib, m.cpu_cores_per_card, m.memory_gib_per_card)
        for m in GpuModel.objects.all()
    }
    assert table["P4"] == (8, 12, 40)
    assert table["P40"] == (24, 12, 40)
    assert table["V100"] == (16, 12, 56)
    assert list(GpuModel.objects.filter(free_tier=True).values_list("name", flat=True)) == ["P4"]
    aggregate = GpuModel.objects.get(name="*V100")
    assert set(aggregate.members.values_list("name", flat=True)) == {"V100", "V100-32G"}
    v100 = Node.objects.get(name="v100-01")
    assert v100.cards.count() == 8
