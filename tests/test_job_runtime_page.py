"""The job page's attempts, live log and outputs; log and output downloads; the logs API."""

import os
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.execution.files import attempt_log_path, output_files, replica_output_dir
from jobs.execution.replica.checkpoint import checkpoint_remove
from jobs.models import Job, Replica, ReplicaAttempt
from tests.agent_support import make_node
from tests.factories import JobFactory

LOG = "".join(f"line {i}\n" for i in range(1, 301))


@pytest.fixture
def ran(settings, tmp_path, project, owner):
    """A job whose replica 0 ran twice on a node; files as the agent leaves them."""
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    node = make_node(name="gpu-a")
    job = JobFactory(owner=owner, project=project, state=Job.State.RUNNING, attempt=2)
    replica = Replica.objects.create(job=job, index=0, node=node)
    now = timezone.now()
    attempts = [
        ReplicaAttempt.objects.create(
            replica=replica, number=number, node=node, state=state, started_at=now, exit_code=code
        )
        for number, state, code in [(1, "failed", 3), (2, "running", None)]
    ]
    for attempt, text in zip(attempts, ["first try\n", LOG], strict=True):
        path = attempt_log_path(node.name, attempt.pk)
        path.parent.mkdir(parents=True)
        path.write_text(text)
    output = replica_output_dir(node.name, job.pk, 0)
    (output / "checkpoints").mkdir(parents=True)
    (output / "checkpoints" / "epoch-1.pt").write_bytes(b"x" * 2048)
    (output / "metrics.json").write_text('{"acc": 0.9}')
    secret = tmp_path / "secret"
    secret.write_text("do not serve")
    os.symlink(secret, output / "stolen")
    return job, attempts


def panel(client, job, **params):
    return client.get(
        reverse("jobs:runtime", args=[job.pk]), params, headers={"HX-Request": "true"}
    )


def test_job_page_shows_attempts_the_log_tail_and_outputs(owner_client, ran):
    job, attempts = ran
    page = owner_client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert 'id="runtime-panel"' in page and 'hx-trigger="every 2s"' in page
    assert "line 300</code>" in page and "line 100\n" not in page  # the last 200 lines
    assert "line 101\n" in page
    assert "checkpoints/epoch-1.pt" in page and "2.0\xa0KB" in page and "metrics.json" in page
    assert "stolen" not in page  # a link the job made is not an output


def test_panel_shows_an_earlier_attempt_on_request(owner_client, ran):
    job, _attempts = ran
    body = panel(owner_client, job, replica=0, attempt=1).content.decode()
    assert "first try" in body and "line 300" not in body
    assert "attempt=1" in body  # keeps polling the attempt being read


def test_polling_stops_when_the_job_has_ended(owner_client, ran):
    job, _attempts = ran
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED)
    body = panel(owner_client, job).content.decode()
    assert "hx-trigger" not in body and "line 300" in body


def test_panel_query_count_does_not_grow_with_attempts(
    owner_client, ran, django_assert_max_num_queries
):
    job, attempts = ran
    for number in range(3, 8):
        ReplicaAttempt.objects.create(
            replica=attempts[0].replica, number=number, node=attempts[0].node
        )
    with django_assert_max_num_queries(6):
        assert panel(owner_client, job).status_code == 200


def test_member_downloads_the_whole_log(client, member, ran):
    job, attempts = ran
    client.force_login(member)
    response = client.get(reverse("jobs:log_download", args=[job.pk, attempts[1].pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode() == LOG
    assert "attachment" in response["Content-Disposition"]


def test_outsider_sees_no_log_panel_or_output(client, outsider, ran):
    job, attempts = ran
    client.force_login(outsider)
    assert panel(client, job).status_code == 404
    assert (
        client.get(reverse("jobs:log_download", args=[job.pk, attempts[0].pk])).status_code == 404
    )
    url = reverse("jobs:output_download", args=[job.pk, 0, "gpu-a", "metrics.json"])
    assert client.get(url).status_code == 404


def test_downloads_refuse_other_methods(owner_client, ran):
    job, attempts = ran
    assert owner_client.post(reverse("jobs:runtime", args=[job.pk])).status_code == 405
    url = reverse("jobs:log_download", args=[job.pk, attempts[0].pk])
    assert owner_client.post(url).status_code == 405


def test_owner_downloads_an_output_file(owner_client, ran):
    job, _attempts = ran
    url = reverse("jobs:output_download", args=[job.pk, 0, "gpu-a", "checkpoints/epoch-1.pt"])
    response = owner_client.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"x" * 2048


@pytest.mark.parametrize(
    ("node", "path"),
    [
        ("gpu-a", "stolen"),  # a link to a file outside the output folder
        ("gpu-a", "../../../attempts/1/output.log"),
        ("gpu-a", "checkpoints"),  # a folder
        ("gpu-b", "metrics.json"),  # a node the replica never ran on
    ],
)
def test_output_download_stays_inside_the_output_folder(owner_client, ran, node, path):
    job, _attempts = ran
    url = reverse("jobs:output_download", args=[job.pk, 0, node, path])
    assert owner_client.get(url).status_code == 404


def test_api_tails_the_latest_attempt_log(owner_client, ran):
    job, _attempts = ran
    response = owner_client.get(f"/api/v1/jobs/{job.pk}/logs", {"replica": 0, "tail": 2})
    assert response.status_code == 200
    data = response.json()
    assert data["lines"] == ["line 299", "line 300"]
    assert (data["attempt"], data["state"], data["node"]) == (2, "running", "gpu-a")
    assert data["size_bytes"] == len(LOG)


def test_api_reads_a_given_attempt(owner_client, ran):
    job, _attempts = ran
    response = owner_client.get(f"/api/v1/jobs/{job.pk}/logs", {"attempt": 1})
    assert response.json()["lines"] == ["first try"]


def test_api_rejects_a_tail_out_of_range(owner_client, ran):
    job, _attempts = ran
    response = owner_client.get(f"/api/v1/jobs/{job.pk}/logs", {"tail": 0})
    assert response.status_code == 422
    assert response.json() == {"errors": {"tail": ["Tail must be 1 to 10000 lines; you gave 0"]}}


def test_api_404_for_missing_attempt_or_foreign_job(client, owner_client, outsider, ran):
    job, _attempts = ran
    assert owner_client.get(f"/api/v1/jobs/{job.pk}/logs", {"replica": 1}).status_code == 404
    client.force_login(outsider)
    assert client.get(f"/api/v1/jobs/{job.pk}/logs").status_code == 404


def read_from(client, job, offset, **params):
    response = client.get(f"/api/v1/jobs/{job.pk}/logs", {"offset": offset, **params})
    assert response.status_code == 200, response.content
    data = response.json()
    return data["lines"], data["next_offset"]


def test_api_follows_a_running_log_from_an_offset(owner_client, ran):
    job, attempts = ran
    lines, offset = read_from(owner_client, job, 0)
    assert lines == LOG.splitlines() and offset == len(LOG)
    path = attempt_log_path("gpu-a", attempts[1].pk)
    with path.open("a") as log:
        log.write("half a li")
    # A line still being written waits until it is whole.
    assert read_from(owner_client, job, offset) == ([], offset)
    with path.open("a") as log:
        log.write("ne\nnext")
    assert read_from(owner_client, job, offset) == (["half a line"], offset + len("half a line\n"))


def test_api_gives_a_finished_attempts_last_line_without_its_newline(owner_client, ran):
    job, attempts = ran
    attempt_log_path("gpu-a", attempts[0].pk).write_text("first try\nno newline")
    lines, offset = read_from(owner_client, job, 0, attempt=1)
    assert (lines, offset) == (["first try", "no newline"], len("first try\nno newline"))


def test_api_reads_a_long_log_in_pieces(owner_client, ran, monkeypatch):
    job, _attempts = ran
    monkeypatch.setattr("jobs.execution.runtime.LOG_READ_BYTES", 100)
    seen, offset = [], 0
    while offset < len(LOG):
        lines, next_offset = read_from(owner_client, job, offset)
        assert 0 < next_offset - offset <= 100
        seen, offset = seen + lines, next_offset
    assert seen == LOG.splitlines()


def test_api_rejects_an_offset_past_the_end(owner_client, ran):
    job, _attempts = ran
    response = owner_client.get(f"/api/v1/jobs/{job.pk}/logs", {"offset": len(LOG) + 1})
    assert response.status_code == 422
    message = f"Offset must be 0 to the log's size, {len(LOG)} bytes; you gave {len(LOG) + 1}"
    assert response.json() == {"errors": {"offset": [message]}}


@pytest.mark.integration
def test_a_real_run_shows_its_log_and_outputs_on_the_page(agent_env, client):
    from tests.agent_support import cpu_job, place, wait_for_state

    node = make_node()
    agent = agent_env([node])
    job = cpu_job("echo training done\necho 0.93 > $TRAINYARD_DATA_OUT/accuracy.txt")
    job = wait_for_state(place(job, [node]), Job.FINAL_STATES, agent)
    client.force_login(job.owner)
    page = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "training done" in page and "accuracy.txt" in page
    assert "hx-trigger" not in page.split('id="runtime-panel"')[1].split(">")[0]
    url = reverse("jobs:output_download", args=[job.pk, 0, node.name, "accuracy.txt"])
    assert b"".join(client.get(url).streaming_content) == b"0.93\n"


def test_each_poll_brings_the_state_and_actions_and_a_new_state_the_times(owner_client, ran):
    job, _attempts = ran
    same = panel(owner_client, job, state="running").content.decode()
    assert 'id="state-card" aria-labelledby="state-title" hx-swap-oob="true"' in same
    assert 'id="job-actions" hx-swap-oob="true"' in same
    assert "Stop job" in same
    assert 'id="job-times"' not in same  # unchanged state: no estimate to recompute
    assert 'id="events-card"' not in same
    assert "state=running" in same  # the next poll says what this one showed

    Job.objects.filter(pk=job.pk).update(
        state=Job.State.SUCCEEDED, finished_at=timezone.now(), state_reason="Done"
    )
    changed = panel(owner_client, job, state="running").content.decode()
    assert 'id="job-times" aria-labelledby="times-title" hx-swap-oob="true"' in changed
    assert 'id="events-card" aria-labelledby="events-title" hx-swap-oob="true"' in changed
    assert "Stop job" not in changed
    assert "Run again" in changed
    assert "Done" in changed
    assert "hx-trigger" not in changed  # a finished job's panel stops polling


def test_an_output_named_with_a_newline_is_listed_and_downloads(owner_client, ran):
    """Finding 7: a newline in an output's name made the job page 500 for everyone."""
    job, _attempts = ran
    output = replica_output_dir("gpu-a", job.pk, 0)
    (output / "two\nlines.txt").write_text("odd name")
    page = owner_client.get(reverse("jobs:detail", args=[job.pk]))
    assert page.status_code == 200
    assert panel(owner_client, job).status_code == 200
    url = reverse("jobs:output_download", args=[job.pk, 0, "gpu-a", "two\nlines.txt"])
    response = owner_client.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"odd name"


def test_a_null_byte_in_an_output_path_is_a_404(owner_client, ran):
    job, _attempts = ran
    url = reverse("jobs:output_download", args=[job.pk, 0, "gpu-a", "metrics.json"])
    assert owner_client.get(url + "%00").status_code == 404


def test_the_output_walk_stops_at_a_bounded_number_of_entries(ran, monkeypatch):
    """60,000 empty folders took the page 1.2 s: the walk looks at a bounded number."""
    from jobs.execution import files

    job, _attempts = ran
    output = replica_output_dir("gpu-a", job.pk, 0)
    for i in range(3000):
        (output / "empty" / str(i)).mkdir(parents=True)
    seen = []
    real_walk = files.os.walk

    def counting_walk(*args, **kwargs):
        for entry in real_walk(*args, **kwargs):
            seen.append(entry[0])
            yield entry

    monkeypatch.setattr(files.os, "walk", counting_walk)
    listed = files.output_files(output)
    assert {f.relative_path for f in listed} >= {"metrics.json", "checkpoints/epoch-1.pt"}
    assert len(seen) <= getattr(files, "OUTPUT_WALK_ENTRIES", 1000) + 1


def nest(top: Path, levels: int, *, files_at: tuple[int, ...]) -> None:
    """``levels`` folders ``d`` each in the last, made relative to the one above (no path
    grows past PATH_MAX), with an empty ``at-<level>.pt`` at each level of ``files_at``."""
    folder = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(levels):
        os.mkdir("d", dir_fd=folder)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
        os.close(folder)
        folder = deeper
        if level in files_at:
            os.close(os.open(f"at-{level}.pt", os.O_CREAT | os.O_WRONLY, dir_fd=folder))
    os.close(folder)


@pytest.fixture
def deep_tree(ran):
    """1,500 nested folders in the output; removed after the test by the agent's own removal
    (pytest's, shutil.rmtree, recurses once per level too)."""
    job, _attempts = ran
    output = replica_output_dir("gpu-a", job.pk, 0)
    nest(output, 1500, files_at=(2, 1400))
    yield job, output
    checkpoint_remove(output / "d")


def test_a_tree_deeper_than_python_recurses_is_listed_to_a_bounded_depth(owner_client, deep_tree):
    """A job's 1,500 nested folders ended the job page in a RecursionError (os.walk recurses
    once per level): the walk stops ``OUTPUT_WALK_DEPTH`` levels down."""
    job, output = deep_tree
    listed = {f.relative_path for f in output_files(output)}
    assert "d/d/d/at-2.pt" in listed and "metrics.json" in listed
    assert not any(path.endswith("at-1400.pt") for path in listed)
    response = owner_client.get(reverse("jobs:detail", args=[job.pk]))
    assert response.status_code == 200
    assert "d/d/d/at-2.pt" in response.content.decode()
