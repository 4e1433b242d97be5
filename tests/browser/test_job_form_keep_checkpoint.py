"""New job's 'Keep the checkpoint as an output': ticked, submitted, said on the job's page, and
once the job has run, its checkpoint listed beside its outputs."""

from playwright.sync_api import expect

from jobs.execution.files import node_checkpoint_dir
from jobs.models import Job, Replica, ReplicaAttempt
from tests.agent_support import make_node
from tests.browser.conftest import screenshot, settle


def test_a_ticked_keep_checkpoint_box_keeps_the_checkpoint(pages, site, owner, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_CHECKPOINT_ROOT = ""
    page = pages.open(owner, "/jobs/new/")
    page.get_by_label("Name", exact=True).fill("kept-weights")
    page.get_by_label("Startup command").fill("python train.py")
    box = page.get_by_label("Keep the checkpoint as an output")
    expect(box).not_to_be_checked()
    box.check()
    settle(page)
    expect(box).to_be_checked()
    screenshot(page, "job-form-keep-checkpoint")
    page.get_by_role("button", name="Submit job").click()

    expect(page.locator("h1")).to_contain_text("kept-weights")
    request = page.locator("#request-title").locator("..")
    expect(request.locator("dt:text-is('Checkpoint') + dd")).to_have_text("Kept as an output")
    job = Job.objects.get(name="kept-weights")
    assert job.keep_checkpoint is True

    # The job ran on a node and ended; what it saved is listed beside its outputs.
    node = make_node(name="gpu-k")
    replica = Replica.objects.create(job=job, index=0, node=node)
    ReplicaAttempt.objects.create(replica=replica, number=1, node=node, state="succeeded")
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED)
    checkpoint = node_checkpoint_dir(node.name, job.pk, 0)
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.pt").write_bytes(b"weights")
    page.reload()
    expect(page.locator("h5.checkpoint-title")).to_have_text("Checkpoint")
    expect(page.get_by_role("link", name="state.pt")).to_have_attribute(
        "href", f"/jobs/{job.pk}/checkpoint/0/gpu-k/state.pt"
    )
    screenshot(page, "job-page-kept-checkpoint")
