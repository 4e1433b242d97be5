"""``trainyard queue``, ``move`` and ``priority`` against a live server."""

import json

from jobs.models import Job
from jobs.scheduler import run_pass
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, UserFactory


def test_the_queue_is_listed_and_reordered_from_the_terminal(server_cli, project, owner):
    v100 = GpuModelFactory(name="V100")
    NodeFactory(gpu_model=v100, gpu_count=1)
    JobFactory(owner=UserFactory(), gpu_model=v100)  # holds the one card
    first, second = (
        JobFactory(owner=owner, project=project, gpu_model=v100, name=f"run-{i}") for i in range(2)
    )
    run_pass()

    listed = server_cli("queue")

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "V100: 2 waiting"
    assert lines[1].split()[:4] == ["POS", "ID", "NAME", "OWNER"]
    assert lines[2].split()[:3] == ["1", str(first.pk), "run-0"]
    moved = server_cli("move", str(second.pk), "up", "--json")
    assert moved.returncode == 0, moved.stderr
    order = [job["id"] for job in json.loads(moved.stdout)["queues"][0]["jobs"]]
    assert order == [second.pk, first.pk]
    refused = server_cli("move", str(second.pk), "up")
    assert refused.returncode != 0 and "already first" in refused.stderr
    staff_only = server_cli("priority", str(first.pk), "high")
    assert staff_only.returncode != 0 and "Only staff" in staff_only.stderr
    assert Job.objects.get(pk=first.pk).priority == Job.Priority.NORMAL
