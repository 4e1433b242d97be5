"""What prepared statements save: the CPU of an API submission, Django's and PostgreSQL's.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/prepared_statements.py [--posts 300] [--rounds 3]

Posts one-card jobs (``POST /api/v1/jobs`` through the whole Django stack, the test
client, no network) on a scratch database (``<name>_prepared``, created and dropped
here), alternately on a connection that prepares its repeated statements (the settings'
default, ``trainyard/databases.py``) and on one that does not (client-side binding, as
before), round by round. For each it prints per submission the CPU of this process
and of the connection's PostgreSQL backend (``/proc/<pid>/stat``), medians over rounds;
the job events' log lines are off for both.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time

from scratch import django_setup, scratch_database
from submit_latency import site_setup

PREPARED_OPTIONS = ("server_side_binding", "prepare_threshold")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--posts", type=int, default=300, help="submissions per round and way")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    django_setup()
    logging.disable(logging.INFO)  # a line per job event, both ways alike
    from django.db import connection

    options = connection.settings_dict["OPTIONS"]
    prepared = {name: options[name] for name in PREPARED_OPTIONS if name in options}
    if not prepared:
        raise SystemExit("Prepared statements are off here (TRAINYARD_DB_PREPARED_STATEMENTS).")
    ways = {"prepared (default)": prepared, "not prepared (before)": {}}
    results: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    with scratch_database("prepared"):
        token = site_setup()
        number = 0
        for _round in range(args.rounds):
            for way, extra in ways.items():
                connection.close()
                for name in PREPARED_OPTIONS:
                    options.pop(name, None)
                options.update(extra)
                results[way].append(submissions(token, number, args.posts))
                number += args.posts
        connection.close()
        options.update(prepared)
    print(f"{args.posts} submissions a round, {args.rounds} rounds; CPU ms a submission")
    print(f"{'':24} {'Django':>8} {'PostgreSQL':>11} {'both':>8}")
    medians = {}
    for way, runs in results.items():
        django_ms = statistics.median(run[0] for run in runs)
        database_ms = statistics.median(run[1] for run in runs)
        medians[way] = django_ms + database_ms
        print(f"{way:24} {django_ms:8.1f} {database_ms:11.1f} {django_ms + database_ms:8.1f}")
    first, second = medians.values()
    print(f"prepared / not prepared: {first / second:.2f}")


def submissions(token: str, first: int, count: int) -> tuple[float, float]:
    """(this process's, the backend's) CPU ms per submission, after ten to warm up."""
    from django.db import connection
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    for number in range(first, first + 10):
        post(client, number)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    own, database = time.process_time(), backend_cpu(backend)
    for number in range(first + 10, first + 10 + count):
        post(client, number)
    own, database = time.process_time() - own, backend_cpu(backend) - database
    return own / count * 1000, database / count * 1000


def post(client, number: int) -> None:
    body = {
        "project": "bench",
        "name": f"prepared-{number}",
        "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1},
        "command": "sleep 1",
    }
    response = client.post("/api/v1/jobs", body, content_type="application/json")
    if response.status_code != 201:
        raise SystemExit(f"POST /api/v1/jobs answered {response.status_code}: {response.content}")


def backend_cpu(pid: int) -> float:
    """A PostgreSQL backend's CPU seconds (user and system) so far; it runs on this host."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
