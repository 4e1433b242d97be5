"""`make run` is quiet: a line per job event and per warning or error, and Slurm's beat entries
only where Slurm is configured; TRAINYARD_VERBOSE=1 (`make run V=1`) shows every task run."""

import json
import re
import time

import pytest

from jobs.models import Job
from jobs.services.submit import job_submit
from tests.job_site import build_site, job_body
from tests.support import processes
from tests.support.waiting import wait_until
from tests.test_settings import BASE_ENV, run_python

BEAT_TASKS = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps(sorted(entry['task'] for entry in s.CELERY_BEAT_SCHEDULE.values())))"
)


def beat_tasks(env: dict, tmp_path) -> list[str]:
    result = run_python(BEAT_TASKS, env, tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_slurm_beat_sends_no_slurm_task(tmp_path):
    tasks = beat_tasks({}, tmp_path)
    assert "jobs.agent.dispatch_polls" in tasks
    assert [task for task in tasks if task.startswith("jobs.slurm.")] == []


def test_with_slurm_configured_beat_tracks_it_and_syncs_its_nodes(tmp_path):
    tasks = beat_tasks({"TRAINYARD_SLURM": "1"}, tmp_path)
    assert {"jobs.slurm.track", "jobs.slurm.sync_nodes"} <= set(tasks)


def test_the_embedded_broker_connects_without_a_warning(tmp_path):
    code = (
        "import django; django.setup(); from trainyard.celery import app\n"
        "with app.connection_for_write() as connection: print(connection.as_uri())"
    )
    result = run_python(code, {}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "No hostname was supplied" not in result.stderr


def run_beat(env: dict, tmp_path) -> str:
    """Beat's output until it sent its first tasks, on an embedded broker of its own.

    Beat logs a send before it writes the message, so the output is whole once two are in.
    """
    sent = tmp_path / "broker" / "in"
    log = tmp_path / "beat.log"
    argv = processes.celery("beat", beat_schedule=tmp_path / "beat-schedule")
    env = {**BASE_ENV, "TRAINYARD_VAR_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1", **env}
    beat = processes.launch(argv, env=env, log=log)
    try:
        wait_until(lambda: sent.is_dir() and len(list(sent.iterdir())) >= 2, what="beat's sends")
    finally:
        processes.stop([beat], timeout=30)
    return log.read_text()


@pytest.mark.parametrize("verbose", [False, True])
def test_beat_says_nothing_of_its_routine_sends_unless_verbose(tmp_path, verbose):
    output = run_beat({"TRAINYARD_VERBOSE": "1" if verbose else "0"}, tmp_path)
    assert ("Sending due task" in output) is verbose, output


@pytest.mark.integration
@pytest.mark.parametrize("verbose", [False, True])
def test_a_worker_logs_the_job_event_not_the_task_runs(
    start_celery_worker, project, owner, tmp_path, verbose
):
    build_site(project=project, billing_for=[owner])
    start_celery_worker(queues="celery", env={"TRAINYARD_VERBOSE": "1" if verbose else "0"})
    job = job_submit(user=owner, data=job_body())
    wait_until(lambda: Job.objects.get(pk=job.pk).state == Job.State.STARTING, what="starting")
    log = tmp_path / "worker-0.log"
    wait_until(lambda: re.search(rf"Job {job.pk}: \w+ → starting", log.read_text()), what="event")
    time.sleep(1)  # the task's own lines, if any, come right after
    text = log.read_text()
    assert ("succeeded in" in text) is verbose, text
    assert ("Task jobs.tasks.schedule_pass" in text) is verbose, text


REFUSALS = (
    "import logging, django; django.setup()\n"
    "log = logging.getLogger('django.request')\n"
    "for status in (403, 500):\n"
    "    try:\n"
    "        raise PermissionError('boom')\n"
    "    except PermissionError:\n"
    "        log.warning('Refused %s: /billing/overview/', status, exc_info=True,"
    " extra={'status_code': status})\n"
)


def test_a_refused_request_is_one_line_and_a_server_error_keeps_its_traceback(tmp_path):
    result = run_python(REFUSALS, {}, tmp_path)
    assert result.returncode == 0, result.stderr
    refused, failed = result.stderr.split("Refused 500")
    assert refused.strip() == "Refused 403: /billing/overview/"
    assert "Traceback" in failed
