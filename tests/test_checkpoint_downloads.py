"""A kept checkpoint as an output: the job page lists each replica's files, the download serves
them, and nothing the job put in the folder (links, a pipe, a linked folder) leads outside it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse

from jobs.execution.files import node_checkpoint_dir, replica_output_dir
from jobs.models import Job, Replica, ReplicaAttempt
from resources.models import Node
from tests.agent_support import make_node
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db
SECRET = "the web server's own file"


def ran_on(job: Job, *placements: tuple[int, str]) -> None:
    """An attempt of replica ``index`` on node ``name`` for each placement, in order."""
    for index, name in placements:
        node = Node.objects.filter(name=name).first() or make_node(name=name)
        replica, _new = Replica.objects.get_or_create(job=job, index=index, defaults={"node": node})
        ReplicaAttempt.objects.create(
            replica=replica,
            number=replica.attempts.count() + 1,
            node=node,
            state="succeeded",
            exit_code=0,
        )


def hostile_checkpoint(folder: Path, host: Path) -> None:
    """What a job saved, and what it planted to reach the server's files."""
    (folder / "epoch-3").mkdir(parents=True)
    (folder / "state.pt").write_bytes(b"w" * 3000)
    (folder / "epoch-3" / "optimizer.pt").write_bytes(b"o")
    os.symlink(host / "secret.txt", folder / "stolen.pt")  # a link to a host file
    os.symlink(host, folder / "linked")  # a link to a host folder
    os.mkfifo(folder / "pipe")  # opening it would wait for a writer


@pytest.fixture
def host(tmp_path) -> Path:
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    return folder


@pytest.fixture
def kept(settings, tmp_path, project, owner, host) -> Job:
    """An ended job that kept its checkpoint; replica 0 ran on gpu-a (node-local folders)."""
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_CHECKPOINT_ROOT = ""
    job = JobFactory(owner=owner, project=project, state=Job.State.SUCCEEDED, keep_checkpoint=True)
    ran_on(job, (0, "gpu-a"))
    output = replica_output_dir("gpu-a", job.pk, 0)
    output.mkdir(parents=True)
    (output / "metrics.json").write_text("{}")
    hostile_checkpoint(node_checkpoint_dir("gpu-a", job.pk, 0), host)
    return job


def page(client, job: Job) -> str:
    response = client.get(reverse("jobs:detail", args=[job.pk]))
    assert response.status_code == 200
    return response.content.decode()


def download(client, job: Job, path: str, *, node: str = "gpu-a", replica: int = 0):
    return client.get(reverse("jobs:checkpoint_download", args=[job.pk, replica, node, path]))


def test_the_page_lists_the_kept_checkpoint_beside_the_outputs(owner_client, kept):
    html = page(owner_client, kept)
    outputs = html[html.index("<h3>Outputs</h3>") :]
    assert outputs.index("metrics.json") < outputs.index('<h5 class="checkpoint-title">Checkpoint')
    for path in ("state.pt", "epoch-3/optimizer.pt"):
        url = reverse("jobs:checkpoint_download", args=[kept.pk, 0, "gpu-a", path])
        assert f'href="{url}"' in html
    assert "2.9\xa0KB" in outputs  # state.pt's size
    for planted in ("stolen.pt", "linked", "pipe", "secret.txt"):
        assert planted not in outputs


def test_the_download_serves_a_checkpoint_file(owner_client, kept):
    response = download(owner_client, kept, "epoch-3/optimizer.pt")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"o"
    assert 'filename="optimizer.pt"' in response["Content-Disposition"]


@pytest.mark.parametrize(
    "path",
    [
        "stolen.pt",  # a link to a host file
        "linked/secret.txt",  # through a link to a host folder
        "pipe",  # a fifo: refused, never waited on
        "epoch-3",  # a folder
        "../output/metrics.json",  # out of the folder by name
        "missing.pt",
    ],
)
def test_the_download_refuses_what_is_not_a_file_in_the_folder(owner_client, kept, path):
    response = download(owner_client, kept, path)
    assert response.status_code == 404
    assert SECRET.encode() not in response.content


@pytest.mark.parametrize("node", ["gpu-b", "..", "not a node"])
def test_the_download_refuses_a_node_the_replica_never_ran_on(owner_client, kept, node):
    make_node(name="gpu-b")
    assert download(owner_client, kept, "state.pt", node=node).status_code == 404


def test_outsiders_neither_see_nor_download_the_checkpoint(client, outsider, member, kept):
    client.force_login(outsider)
    assert client.get(reverse("jobs:detail", args=[kept.pk])).status_code == 404
    assert download(client, kept, "state.pt").status_code == 404
    client.force_login(member)
    assert download(client, kept, "state.pt").status_code == 200


def test_a_job_that_does_not_keep_its_checkpoint_lists_and_serves_none(owner_client, kept):
    Job.objects.filter(pk=kept.pk).update(keep_checkpoint=False)
    html = page(owner_client, kept)
    assert "checkpoint-title" not in html and "state.pt" not in html
    assert download(owner_client, kept, "state.pt").status_code == 404


def test_a_checkpoint_with_nothing_saved_says_so(owner_client, owner, project, kept):
    job = JobFactory(owner=owner, project=project, state=Job.State.FAILED, keep_checkpoint=True)
    ran_on(job, (0, "gpu-a"))
    node_checkpoint_dir("gpu-a", job.pk, 0).mkdir(parents=True)
    html = page(owner_client, job)
    assert '<h5 class="checkpoint-title">Checkpoint</h5>' in html
    assert "The job saved nothing in /trainyard/checkpoint." in html


def test_node_local_checkpoints_are_listed_per_node_the_replica_ran_on(owner_client, kept, host):
    ran_on(kept, (0, "gpu-b"))
    hostile_checkpoint(node_checkpoint_dir("gpu-b", kept.pk, 0), host)
    html = page(owner_client, kept)
    assert html.count('<h5 class="checkpoint-title">') == 2
    for node in ("gpu-a", "gpu-b"):
        url = reverse("jobs:checkpoint_download", args=[kept.pk, 0, node, "state.pt"])
        assert f'href="{url}"' in html
        assert download(owner_client, kept, "state.pt", node=node).status_code == 200


def test_a_shared_checkpoint_root_is_listed_once_per_replica(
    owner_client, settings, tmp_path, project, owner, host
):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_CHECKPOINT_ROOT = str(tmp_path / "shared")
    job = JobFactory(owner=owner, project=project, state=Job.State.FAILED, keep_checkpoint=True)
    # Replica 0 ran on gpu-a, was preempted and ran on gpu-b; replica 1 on gpu-b.
    ran_on(job, (0, "gpu-a"), (1, "gpu-b"), (0, "gpu-b"))
    for index in (0, 1):
        hostile_checkpoint(tmp_path / "shared" / str(job.pk) / f"replica-{index}", host)
    html = page(owner_client, job)
    assert html.count('<h5 class="checkpoint-title">') == 2
    assert html.count("optimizer.pt</a>") == 2
    for index, node in ((0, "gpu-a"), (1, "gpu-b")):
        url = reverse("jobs:checkpoint_download", args=[job.pk, index, node, "state.pt"])
        assert f'href="{url}"' in html
    # The folder is the same whichever node the replica ran on.
    response = download(owner_client, job, "epoch-3/optimizer.pt", node="gpu-b")
    assert response.status_code == 200
    assert download(owner_client, job, "stolen.pt", node="gpu-b").status_code == 404


def test_the_heading_reads_in_chinese(owner_client, kept):
    owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    assert '<h5 class="checkpoint-title">检查点</h5>' in page(owner_client, kept)
