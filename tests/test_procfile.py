"""What `make run` starts, with the environment honcho gives each process: the proxy asks
the web process where it really listens (honcho gives every process a PORT of its own)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from honcho.environ import expand_processes, parse_procfile

ROOT = Path(__file__).resolve().parent.parent


def started(port: str) -> dict[str, tuple[list[str], dict]]:
    """Each process's command line and environment as `make run PORT=<port>` has honcho
    run them."""
    dry = subprocess.run(
        ["make", "-n", "run", f"PORT={port}"], cwd=ROOT, capture_output=True, text=True
    )
    [line] = [line for line in dry.stdout.splitlines() if "honcho start" in line]
    # The environment make hands honcho: the line's assignments, as its shell reads them.
    assignments = line.split(".venv/bin/honcho")[0]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    shown = subprocess.run(
        ["bash", "-c", f"{assignments} env -0"], env=clean, capture_output=True, text=True
    )
    given = dict(item.split("=", 1) for item in shown.stdout.split("\0") if "=" in item)
    env = {k: v for k, v in given.items() if clean.get(k) != v}
    processes = expand_processes(parse_procfile((ROOT / "Procfile").read_text()).processes, env=env)
    commands = {}
    for process in processes:
        shell_env = {**os.environ, **process.env}
        expanded = subprocess.run(
            ["bash", "-c", f"printf '%s\\n' {process.cmd}"],
            env=shell_env,
            capture_output=True,
            text=True,
        )
        commands[process.name.split(".")[0]] = (expanded.stdout.split(), process.env)
    return commands


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_proxy_asks_the_web_process_where_it_listens_and_sends_people_back_there():
    commands = started("8312")
    web, web_env = commands["web"]
    proxy, _proxy_env = commands["proxy"]
    assert option(web, "--bind") == "127.0.0.1:8312"
    assert option(proxy, "--dashboard") == "127.0.0.1:8312"
    # A port's site sends a visitor without its cookie to the dashboard's "Open".
    assert web_env.get("TRAINYARD_BASE_URL") == "http://127.0.0.1:8312"


def test_an_image_build_never_holds_the_workers_that_run_scheduling_passes():
    """Adding an image takes minutes (the demo's two at `make run`): on the central
    worker's two processes it held every scheduling pass back until both were built, and
    a job submitted meanwhile read "waiting for the scheduler" all that time."""
    from trainyard.celery import app

    def queue(task: str) -> str:
        return app.amqp.router.route({}, task)["queue"].name

    served = {
        name: option(argv, "-Q").split(",")
        for name, (argv, _env) in started("8313").items()
        if "worker" in argv and "-Q" in argv
    }
    images = queue("jobs.tasks.image_add")
    assert [name for name, queues in served.items() if images in queues] == ["images"]
    for task in ("jobs.tasks.schedule_pass", "notifications.tasks.notify_job_event"):
        assert images != queue(task)
