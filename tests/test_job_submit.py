"""``job_submit``: what a valid submission creates, and the defaults it fills in."""

import pytest
from django.core.exceptions import ValidationError

from billing.accounts import account_for_user
from jobs.lifecycle.pass_requests import request_pass
from jobs.models import Job, JobEvent
from jobs.services.ports import job_ports_update
from jobs.services.submit import job_submit
from resources.models import SiteSettings
from tests.factories import DatasetFactory, SpecFactory, UserFactory
from tests.job_site import GIB, build_site, job_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def submit(owner, **overrides) -> Job:
    return job_submit(user=owner, data=job_body(**overrides))


def test_job_waits_for_the_scheduler_with_a_reason(site, owner):
    job = submit(owner)
    assert job.state == Job.State.QUOTA_WAIT
    assert job.state_reason == "Queued; waiting for the scheduler"
    event = JobEvent.objects.get(job=job)
    assert (event.from_state, event.to_state) == ("", "quota_wait")
    assert event.reason == "Submitted by owner; waiting for the scheduler"


def test_submit_schedules_a_pass_after_commit(site, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        submit(owner)
    assert callbacks == [request_pass]


def test_gpu_cpu_and_memory_follow_the_per_card_ratio(site, owner):
    job = submit(owner, resources={"gpu_count": 2})
    assert (job.cpu_milli, job.memory_mib, job.storage_gib) == (24_000, 112 * GIB, 10)


def test_gpu_custom_cpu_and_memory(site, owner):
    job = submit(owner, resources={"cpu_cores": 2.5, "memory_gib": 20})
    assert (job.cpu_milli, job.memory_mib) == (2500, 20 * GIB)


def test_vgpu_memory_follows_compute_percent(site, owner):
    job = submit(owner, resources={"kind": "vgpu", "gpu_count": 2, "vgpu_compute_percent": 25})
    assert job.vgpu_memory_mib == 4 * GIB  # 25 % of a 16 GiB card
    # Two quarter cards: half a card's worth of CPU and memory.
    assert (job.cpu_milli, job.memory_mib) == (6000, 28 * GIB)


def test_vgpu_unlocked_memory_up_to_the_card(site, owner):
    resources = {"kind": "vgpu", "vgpu_compute_percent": 10, "vgpu_memory_gib": 16}
    job = submit(owner, resources=resources)
    assert job.vgpu_memory_mib == 16 * GIB


def test_cpu_memory_by_ratio(site, owner):
    cpu = {"kind": "cpu", "gpu_model": None, "gpu_count": None, "cpu_cores": 8}
    assert submit(owner, resources=cpu).memory_mib == 32 * GIB  # 1:4 by default
    assert submit(owner, resources={**cpu, "cpu_memory_ratio": 8}).memory_mib == 64 * GIB
    assert submit(owner, resources={**cpu, "memory_gib": 10}).memory_mib == 10 * GIB


def test_cpu_job_without_any_resources_takes_form_defaults(site, owner):
    job = job_submit(user=owner, data={**job_body(), "resources": {}})
    assert (job.resource_kind, job.cpu_milli, job.memory_mib) == ("cpu", 4000, 16 * GIB)


def test_project_data_all_selected_by_default(site, owner):
    job = submit(owner)
    assert [jd.dataset.name for jd in job.jobdataset_set.all()] == ["cats", "dogs"]
    assert [jp.pretrained_model.name for jp in job.jobpretrainedmodel_set.all()] == ["resnet50"]
    assert job.code_version.name == "v1"
    assert job.image.name == "pytorch"


def test_chosen_datasets_keep_their_order(site, owner):
    job = submit(owner, datasets=["dogs", "cats"])
    rows = job.jobdataset_set.order_by("position")
    assert [(r.position, r.dataset.name) for r in rows] == [(1, "dogs"), (2, "cats")]


def test_data_and_image_may_be_left_out(site, owner):
    job = submit(owner, datasets=[], pretrained_models=[], image=None, code_version=None)
    assert not job.jobdataset_set.exists()
    assert not job.jobpretrainedmodel_set.exists()
    assert job.image is None and job.code_version is None


def test_another_image_of_the_project(site, owner):
    assert submit(owner, image="tensorflow").image.name == "tensorflow"


def test_ports_limits_and_retries_are_kept(site, owner):
    job = submit(owner, ports=[8080, 6006], max_runtime_minutes=90, max_retries=3)
    assert list(job.ports.values_list("port", flat=True)) == [6006, 8080]
    assert (job.max_runtime_minutes, job.max_retries) == (90, 3)


def test_distributed_job_over_an_aggregated_model(site, owner):
    job = submit(
        owner,
        task_mode="distributed",
        replicas=3,
        resources={"gpu_model": "*V100", "gpu_count": 4},
    )
    assert (job.task_mode, job.replicas, job.gpu_model.name) == ("distributed", 3, "*V100")


def test_spec_mode_takes_the_specs_resources(site, owner):
    SiteSettings.objects.filter(pk=1).update(spec_management_enabled=True)
    SpecFactory(name="V100 × 2", gpu_model=site.v100, gpu_count=2, cpu_milli=24_000)
    job = submit(owner, config_mode="spec", spec="V100 × 2", resources={"gpu_count": 99})
    assert (job.config_mode, job.spec.name, job.gpu_count, job.cpu_milli) == (
        "spec",
        "V100 × 2",
        2,
        24_000,
    )


def test_spec_problems_are_reported_on_the_spec(site, owner):
    SiteSettings.objects.filter(pk=1).update(spec_management_enabled=True)
    SpecFactory(name="huge", gpu_model=site.v100, gpu_count=16)
    with pytest.raises(ValidationError) as error:
        submit(owner, config_mode="spec", spec="huge")
    assert error.value.message_dict == {
        "spec": ["Cannot run: no node has 16 V100 cards (largest: 8)"]
    }


def test_staff_may_submit_high_priority(site):
    staff = UserFactory(username="staffer", is_staff=True)
    site.project.members.add(staff)
    account = account_for_user(user=staff)
    account.billing_enabled = True
    account.save()
    assert job_submit(user=staff, data=job_body(priority="high")).priority == Job.Priority.HIGH


def test_member_may_submit_to_the_project(site, member):
    job = job_submit(user=member, data=job_body(resources={"gpu_model": "P4", "memory_gib": 40}))
    assert job.owner == member


def test_every_problem_is_reported_at_once(site, owner):
    with pytest.raises(ValidationError) as error:
        submit(owner, name="", command="", ports=[1], max_retries=99)
    assert set(error.value.message_dict) == {"name", "command", "ports", "max_retries"}


def test_crlf_command_is_stored_with_newlines(site, owner):
    assert submit(owner, command="cd /code\r\npython train.py\r\n").command == (
        "cd /code\npython train.py"
    )


def test_same_named_dataset_of_another_project_is_not_taken(site, owner):
    DatasetFactory(project=site.other_project, name="cats")
    job = submit(owner, datasets=["cats"])
    assert job.jobdataset_set.get().dataset.project == site.project


def test_ports_can_be_changed_after_submit(site, owner):
    job = submit(owner, ports=[8080])
    job_ports_update(job=job, ports=[6006, 8080, 9000], actor=owner)
    assert list(job.ports.values_list("port", flat=True)) == [6006, 8080, 9000]
    event = job.events.latest("pk")
    assert event.reason == "Ports changed by owner: 8080 → 6006, 8080, 9000"


def test_port_change_follows_the_same_rules(site, owner):
    job = submit(owner, ports=[8080])
    with pytest.raises(ValidationError) as error:
        job_ports_update(job=job, ports=[8080, 8080], actor=owner)
    assert error.value.message_dict == {"ports": ["Port 8080 is listed twice"]}


def test_ports_of_a_finished_job_cannot_change(site, owner):
    job = submit(owner, ports=[8080])
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED)
    with pytest.raises(ValidationError) as error:
        job_ports_update(job=job, ports=[9000], actor=owner)
    assert "can no longer change" in error.value.message_dict["ports"][0]
