"""The ``trainyard`` command: submit, list, follow and stop jobs through the JSON API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from . import output
from .api_client import ApiClient
from .config import Credentials, credentials, server_url, write_config
from .errors import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    ApiError,
    CliError,
    InputError,
    NotFound,
)
from .follow import follow_job
from .job_files import apply_overrides, dump_job, load_job_file
from .queue_text import queue_text

# The part of a job the feasibility check reads (``POST /api/v1/resources/feasibility``):
# its resources, and whether it may borrow beyond the quota.
RESOURCE_FIELDS = ("task_mode", "replicas", "config_mode", "spec", "resources", "preemptible")

json_option = click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
set_option = click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a field of the file; dotted keys, YAML values (resources.gpu_count=2).",
)
job_file = click.argument("job_file", metavar="JOB.yaml")


def client() -> ApiClient:
    return ApiClient(credentials())


def job_input(job_file: str, assignments: tuple[str, ...]) -> dict:
    return apply_overrides(load_job_file(job_file), assignments)


@contextmanager
def visible_job(job_id: int) -> Iterator[None]:
    """A 404 inside says the job is not there for this user."""
    try:
        yield
    except NotFound:
        raise CliError(f"no job {job_id} that you can see") from None


@click.group(epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Trainyard on the command line: submit, follow, list and stop training jobs.

    The server and token come from TRAINYARD_URL and TRAINYARD_TOKEN, else from
    `trainyard login URL`. Job files are YAML with the fields of POST /api/v1/jobs.
    """


@cli.command()
@click.argument("url")
@click.option(
    "--token", help="The API token; others can see it in `ps`, so it is asked for by default."
)
def login(url: str, token: str | None) -> None:
    """Store the server URL and an API token (made on your profile page) after checking them."""
    url = server_url(url)
    if token is None:
        if sys.stdin.isatty():
            token = click.prompt("API token", hide_input=True)
        else:
            token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise InputError("no token given; make one on your profile page")
    try:
        ApiClient(Credentials(url=url, token=token)).get("/projects")
    except ApiError as exc:
        if exc.status != 401:
            raise
        raise CliError(f"{url} refused this token (401); make one on {url}/profile/") from None
    path = write_config({"url": url, "token": token})
    click.echo(f"Logged in to {url}; token stored in {path}")


@cli.command()
@job_file
@set_option
@click.option("--follow", "-f", is_flag=True, help="Show state changes and the log until it ends.")
@click.option("--replica", default=0, show_default=True, help="Whose log --follow shows.")
@json_option
def submit(
    job_file: str, assignments: tuple[str, ...], follow: bool, replica: int, as_json: bool
) -> None:
    """Submit the job in JOB.yaml (`-`: standard input).

    With --follow, exit with the job's result: 0 succeeded, 4 failed, 5 stopped, 6 timed out.
    """
    body = job_input(job_file, assignments)
    api = client()
    job = api.post("/jobs", body)
    if as_json:
        output.echo_json(job)
    else:
        click.echo(f"Submitted job {job['id']} ({job['name']}): {job['state']}", err=follow)
    if follow:
        _follow(api, job["id"], replica=replica, states=True)


@cli.command()
@job_file
@set_option
@json_option
def check(job_file: str, assignments: tuple[str, ...], as_json: bool) -> None:
    """Could the job in JOB.yaml ever run (a node big enough, within your quota)? Exit 1 if not."""
    body = job_input(job_file, assignments)
    answer = client().post(
        "/resources/feasibility", {k: body[k] for k in RESOURCE_FIELDS if k in body}
    )
    output.emit(answer, as_json=as_json, render=output.feasibility_text)
    if not answer["feasible"]:
        sys.exit(EXIT_REFUSED)


@cli.command()
@click.option("--state", help="Only jobs in this state (quota_wait, running, succeeded, …).")
@click.option("--project", help="Only this project's jobs.")
@click.option("--limit", default=50, show_default=True, help="At most this many, newest first.")
@click.option("--all", "every", is_flag=True, help="Every user's jobs (staff only).")
@json_option
def jobs(state: str | None, project: str | None, limit: int, every: bool, as_json: bool) -> None:
    """Your jobs and your projects' jobs, newest first."""
    page = client().get(
        "/jobs", state=state, project=project, limit=limit, all="1" if every else None
    )
    output.emit(page, as_json=as_json, render=output.jobs_page)


@cli.command()
@click.argument("job_id", type=int)
@json_option
def show(job_id: int, as_json: bool) -> None:
    """A job's settings, state and events."""
    with visible_job(job_id):
        job = client().get(f"/jobs/{job_id}")
    output.emit(job, as_json=as_json, render=output.job_details)


@cli.command()
@click.argument("job_id", type=int)
@click.option("--minutes", default=5, show_default=True, help="How far back (JSON: every point).")
@json_option
def top(job_id: int, minutes: int, as_json: bool) -> None:
    """What a job's replicas use now: CPU, memory, I/O and each card (as sampled)."""
    with visible_job(job_id):
        series = client().get(f"/jobs/{job_id}/metrics", minutes=minutes)
    output.emit(series, as_json=as_json, render=output.usage_text)


@cli.command()
@click.argument("job_id", type=int)
@click.option("--replica", default=0, show_default=True, help="Which replica's log.")
@click.option("--attempt", type=int, help="Which attempt (default: the latest).")
@click.option("--tail", default=200, show_default=True, help="How many of the last lines.")
@click.option("--follow", "-f", is_flag=True, help="The whole log, then new lines until the end.")
@json_option
def logs(
    job_id: int, replica: int, attempt: int | None, tail: int, follow: bool, as_json: bool
) -> None:
    """A replica's log. With -f, exit with the job's result (0 succeeded, 4 failed, …)."""
    api = client()
    if follow:
        with visible_job(job_id):
            api.get(f"/jobs/{job_id}")
        _follow(api, job_id, replica=replica, states=False)
    try:
        answer = api.get(f"/jobs/{job_id}/logs", replica=replica, attempt=attempt, tail=tail)
    except NotFound:
        with visible_job(job_id):
            api.get(f"/jobs/{job_id}")
        raise CliError(f"job {job_id} has no log for replica {replica} yet") from None
    output.emit(answer, as_json=as_json, render=lambda log: "\n".join(log["lines"]))


@cli.command()
@click.argument("job_id", type=int)
@json_option
def stop(job_id: int, as_json: bool) -> None:
    """Stop a job: a waiting one at once, a running one after its grace period."""
    with visible_job(job_id):
        job = client().post(f"/jobs/{job_id}/stop")
    output.emit(job, as_json=as_json, render=output.stop_text)


@cli.command()
@click.argument("job_id", type=int)
@json_option
def export(job_id: int, as_json: bool) -> None:
    """Print a job as a job file: `trainyard export 12 > job.yaml` submits the same job again."""
    with visible_job(job_id):
        body = client().get(f"/jobs/{job_id}/export")
    output.emit(body, as_json=as_json, render=lambda b: dump_job(b).rstrip("\n"))


@cli.command()
@json_option
def queue(as_json: bool) -> None:
    """Waiting jobs you may see, per model, in the order the scheduler takes them."""
    output.emit(client().get("/queue"), as_json=as_json, render=queue_text)


@cli.command()
@click.argument("job_id", type=int)
@click.argument("direction", type=click.Choice(["up", "down"]))
@json_option
def move(job_id: int, direction: str, as_json: bool) -> None:
    """Move one of your waiting jobs up or down among your jobs of its queue."""
    _change_in_queue(job_id, "move", {"direction": direction}, as_json)


@cli.command()
@click.argument("job_id", type=int)
@click.argument("level", type=click.Choice(["normal", "high"]))
@json_option
def priority(job_id: int, level: str, as_json: bool) -> None:
    """Staff: set a waiting job's priority."""
    _change_in_queue(job_id, "priority", {"priority": level}, as_json)


def _change_in_queue(job_id: int, action: str, body: dict, as_json: bool) -> None:
    """POST ``/jobs/{id}/<action>`` and print the queue it answers with."""
    with visible_job(job_id):
        answer = client().post(f"/jobs/{job_id}/{action}", body)
    output.emit(answer, as_json=as_json, render=queue_text)


@cli.command()
@click.option("--refresh", is_flag=True, help="Recompute the snapshot now.")
@json_option
def free(refresh: bool, as_json: bool) -> None:
    """Free cards, cores and memory (a recent snapshot) and your free quota."""
    api = client()
    answer = api.post("/resources/free/refresh") if refresh else api.get("/resources/free")
    output.emit(answer, as_json=as_json, render=output.free_text)


@cli.command()
@click.option("--month", metavar="YYYY-MM", help="Default: this month.")
@json_option
def bill(month: str | None, as_json: bool) -> None:
    """Your statement for a month: hours and amounts by job, free grant and totals."""
    answer = client().get("/billing/statement", month=month)
    output.emit(answer, as_json=as_json, render=lambda a: output.statement_text(a, month))


def _follow(api: ApiClient, job_id: int, *, replica: int, states: bool) -> None:
    try:
        code = follow_job(api, job_id, replica=replica, states=states)
    except KeyboardInterrupt:
        click.echo(f"\nStopped following; job {job_id} keeps running.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code)


def main() -> None:
    cli(prog_name="trainyard")
