"""Jobs run in their work image on the local agent: the image's root as ``/``, its Env, the
platform's folders bound in, one unpack per node, and a clear reason when the image is bad.

The images are real OCI images (``tests/support/tiny_images.py``), brought into the
site's store by skopeo, unpacked by the agent with umoci, run by bubblewrap.
"""

from __future__ import annotations

import shutil
import sys
import threading

import pytest
from django.conf import settings

from jobs.execution.replica.image_cache import unpack_count
from jobs.images.store import store_copy, store_tag
from jobs.models import Image, Job
from tests.agent_support import (
    attempt_log,
    attempts_of,
    cpu_job,
    make_node,
    place,
    wait_for_state,
)
from tests.support.tiny_images import add_torch_layer
from tests.test_agent_distributed import all_reduce_job, sums

pytestmark = pytest.mark.integration

LOOK = """\
out=/trainyard/output
cat /etc/marker > $out/marker
(python3 --version || echo no python) > $out/python 2>&1
echo "$GREETING|$PATH|$HOME|$(pwd)" > $out/env
for place in /tmp /root /var/tmp /dev/shm /trainyard/output; do
  touch $place/w 2>/dev/null && echo "$place writable" >> $out/writes
done
for place in / /etc /usr/bin /trainyard/code; do
  touch $place/w 2>/dev/null && echo "$place WRITABLE" >> $out/writes || true
done
ls / > $out/root
"""


@pytest.fixture
def images(tiny_images, agent_env):
    """Images A and B in the site's store, and an agent for one node."""
    return tiny_images, agent_env([make_node()])


def in_image(image: Image, command: str = LOOK, **fields) -> Job:
    return cpu_job(command, image=image, image_digest=image.digest, **fields)


def output_of(job: Job, node) -> dict[str, str]:
    folder = settings.TRAINYARD_NODE_ROOT / node.name / "jobs" / str(job.pk) / "replica-0/output"
    return {path.name: path.read_text() for path in folder.iterdir() if path.is_file()}


def test_each_job_sees_its_own_image_its_env_and_the_platform_folders(images):
    rows, agent = images
    node = agent.nodes[0]
    jobs = {key: place(in_image(rows[key]), [node]) for key in ("a", "b")}
    for key, job in jobs.items():
        job = wait_for_state(job, Job.FINAL_STATES, agent)
        assert job.state == Job.State.SUCCEEDED, (
            job.state_reason,
            attempt_log(attempts_of(job)[0]),
        )
        out = output_of(job, node)
        assert out["marker"] == f"image {key.upper()}\n"
        greeting, path, home, cwd = out["env"].strip().split("|")
        assert (greeting, home, cwd) == (f"from-{key}", "/root", "/")
        assert sys.prefix not in path  # the image's PATH, not the agent's venv
        expected = ["/tmp", "/root", "/var/tmp", "/dev/shm", "/trainyard/output"]
        assert out["writes"].split("\n")[:-1] == [f"{p} writable" for p in expected]
    assert output_of(jobs["a"], node)["python"].startswith("Python 3.11")
    assert "no python" in output_of(jobs["b"], node)["python"]
    # The node's own system and the agent's files are nowhere in the job's root.
    assert "home" not in output_of(jobs["a"], node)["root"].split()


def test_two_jobs_starting_together_unpack_their_image_once(images):
    rows, agent = images
    node = agent.nodes[0]
    jobs = [in_image(rows["a"], "cat /etc/marker") for _ in range(2)]
    placers = [threading.Thread(target=place, args=(job, [node])) for job in jobs]
    for thread in placers:
        thread.start()
    for thread in placers:
        thread.join()
    for job in jobs:
        assert wait_for_state(job, Job.FINAL_STATES, agent).state == Job.State.SUCCEEDED
    assert unpack_count(settings.TRAINYARD_IMAGE_CACHE, rows["a"].digest) == 1


def test_a_job_cannot_write_into_the_shared_cache(images):
    rows, agent = images
    node = agent.nodes[0]
    cache = settings.TRAINYARD_IMAGE_CACHE
    attack = (
        f"touch /etc/marker /usr/bin/planted {cache}/planted 2>/dev/null; "
        "echo done > /trainyard/output/ran"
    )
    job = wait_for_state(place(in_image(rows["a"], attack), [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED
    assert output_of(job, node)["ran"] == "done\n"
    (entry,) = [p for p in cache.glob("sha256-*")]
    assert (entry / "rootfs/etc/marker").read_text() == "image A\n"
    assert not (entry / "rootfs/usr/bin/planted").exists()
    assert not (cache / "planted").exists()


def test_an_image_missing_from_the_store_fails_the_job_at_once_without_its_retries(images):
    rows, agent = images
    node = agent.nodes[0]
    image = rows["b"]
    shutil.rmtree(settings.TRAINYARD_IMAGE_STORE / "blobs")
    job = place(in_image(image, "echo never", max_retries=3), [node])
    job = wait_for_state(job, Job.FINAL_STATES, agent)
    assert job.state == Job.State.FAILED
    assert job.state_reason_code == "image.broken"
    assert f"Image {image.name} cannot be used" in job.state_reason
    assert "has no manifest" in job.state_reason
    assert str(settings.TRAINYARD_IMAGE_STORE) not in job.state_reason  # no platform path
    assert len(attempts_of(job)) == 1  # no retry: every try would use the same image


def test_distributed_pytorch_all_reduces_inside_an_image(tiny_images, agent_env, tmp_path):
    """Image A plus this environment's CPU PyTorch: two replicas, gloo, on two nodes."""
    build = tmp_path / "build" / "layout"
    add_torch_layer(build, "a", to_tag="torch")
    image = Image.objects.create(
        project=tiny_images["a"].project, name="tiny-torch", source="archive", state="adding"
    )
    image.digest = store_copy(f"oci:{build}:torch", tag=store_tag(image.pk))
    image.state = Image.State.READY
    image.save()
    nodes = [make_node(), make_node()]
    agent = agent_env(nodes)
    job = all_reduce_job()
    Job.objects.filter(pk=job.pk).update(image=image, image_digest=image.digest)
    job = wait_for_state(place(job, nodes), Job.FINAL_STATES, agent, timeout=180)
    assert job.state == Job.State.SUCCEEDED, (job.state_reason, attempt_log(attempts_of(job)[0]))
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]
    assert "image tiny-torch" in attempt_log(attempts_of(job)[0])
