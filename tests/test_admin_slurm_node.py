"""A node runs on Slurm only where Slurm is configured (TRAINYARD_SLURM=1): only there does
beat track Slurm's jobs, so the admin refuses to make a Slurm node anywhere else."""

import pytest
from django.urls import reverse

from resources.models import Node
from tests.factories import NodeFactory
from tests.test_admin_units import form_data

pytestmark = pytest.mark.django_db
INLINE = {
    "cards-TOTAL_FORMS": "0",
    "cards-INITIAL_FORMS": "0",
    "cards-MIN_NUM_FORMS": "0",
    "cards-MAX_NUM_FORMS": "1000",
}


def make_slurm(admin_client_, node: Node):
    url = reverse("admin:resources_node_change", args=[node.pk])
    data = form_data(admin_client_.get(url)) | INLINE | {"executor": Node.Executor.SLURM}
    return admin_client_.post(url, data)


def test_without_slurm_the_admin_refuses_a_slurm_node(admin_client_, settings):
    settings.TRAINYARD_SLURM_ENABLED = False
    node = NodeFactory(gpu_model=None, gpu_count=0)
    response = make_slurm(admin_client_, node)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "TRAINYARD_SLURM=1" in " ".join(errors["executor"])
    node.refresh_from_db()
    assert node.executor == Node.Executor.LOCAL


def test_with_slurm_configured_the_admin_makes_one(admin_client_, settings):
    settings.TRAINYARD_SLURM_ENABLED = True
    node = NodeFactory(gpu_model=None, gpu_count=0)
    response = make_slurm(admin_client_, node)
    assert response.status_code == 302
    node.refresh_from_db()
    assert node.executor == Node.Executor.SLURM


def test_a_slurm_node_stays_editable_after_slurm_is_turned_off(admin_client_, settings):
    settings.TRAINYARD_SLURM_ENABLED = False
    node = NodeFactory(gpu_model=None, gpu_count=0, executor=Node.Executor.SLURM)
    assert make_slurm(admin_client_, node).status_code == 302
