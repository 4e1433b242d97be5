"""Slurm side by side: the same one-card `sleep 1` jobs five ways, on the same machine.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/slurm_side_by_side.py [--jobs 500] [--clients 4] [--poll 0.5] \\
        [--ways abcde] [--pairs 5] [--reaction 0] [--sleep 1] [--platform-nice 0]

(a) straight to Slurm: ``sbatch`` from here, one card, 12 CPUs and 56 GiB each;
(b) through Trainyard's API (gunicorn) with the Slurm executor on the 4-node
    development cluster (``deploy/slurm-dev``, started if it is down);
(c) through Trainyard's API with the local executor, on 4 local nodes of the
    same size (``manage.py run_agent``, bubblewrap where installed);
(d) ``sbatch`` from here again, but each job only when a card frees, by a loop
    that does nothing else (``bench/slurm_sbatch.py``): the floor of (b) for
    any scheduler that places a job on a free card and then submits it;
(e) ``sbatch`` from here again, all at once as (a), but each job inside Trainyard's
    sandbox: Trainyard's batch script and replica keeper, no platform
    (``bench/slurm_sandboxed.py``). (b)/(e) is what Trainyard's control plane adds to
    Slurm; (e)/(a) what isolating each job costs on this machine.

Every job writes the time it started (``date +%s.%N``) and sleeps 1 s (``--sleep``). For each
way it prints the wall time from the first submission until every job ended,
the jobs started per second (jobs / time from the first submission to the last
start), the median submit-to-start delay (start file − the client's time just
before it submitted), the median time a job held its card (``slurmd``'s launch of
its batch step to the step's end, ``bench/slurm_occupancy.py``), and the ratios
to (a), and (b)'s to (e); for each (b) run, Trainyard's CPU, what it
asked of the database and the broker, and the tasks its central worker ran (how many,
and their wall time). Trainyard's own work runs for real:
the scheduler's passes, the executors, the tracking, the agent. It uses a
scratch database (``<name>_slurmbench``), created and dropped here, and
temporary folders; ``--clients`` submit at once in every way.

On a site, Trainyard's web, workers and database run on their own host, and the
replicas' keepers on the nodes; here all of them share the machine's cores.
``--platform-nice N`` runs Trainyard's processes and PostgreSQL's (the server is
reniced for the run and set back after) N steps below the cluster's daemons and
the replicas, as if they had cores of their own as long as the nodes leave some idle.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

from bench.platform_counts import TaskTally, platform_counts, print_platform_counts  # noqa: E402
from bench.slurm_occupancy import median_occupancy, node_logs  # noqa: E402
from bench.slurm_report import report  # noqa: E402
from bench.slurm_sandboxed import SandboxedBatch  # noqa: E402
from bench.slurm_sbatch import (  # noqa: E402
    Result,
    in_parallel,
    run_all_at_once,
    run_when_free,
    summarize,
)
from bench.slurm_site import CONF, scratch_site, submit_job  # noqa: E402
from bench.start_overhead import (  # noqa: E402
    child_env,
    kill_replicas,
    spawn,
    spawn_notifications_worker,
    stop,
    wait_for,
)

COMMAND = 'date +%s.%N > "$TRAINYARD_DATA_OUT/start"\nsleep {sleep}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4, help="submitting at once")
    parser.add_argument(
        "--sleep", type=float, default=1, help="each job's run time (s); the issue's is 1"
    )
    parser.add_argument(
        "--poll", type=float, default=0.5, help="Slurm tracking and local agent poll (s)"
    )
    parser.add_argument(
        "--ways", default="abcde", help="which of (a) to (e) to run; (a) always runs"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="interleaved runs of (a), (e), (b); medians are compared",
    )
    parser.add_argument(
        "--platform-nice",
        type=int,
        default=0,
        help="run Trainyard's processes and PostgreSQL this much below the cluster's",
    )
    parser.add_argument(
        "--reaction",
        type=float,
        default=0,
        help="(d)'s wait from a job's end to its successor's sbatch (s)",
    )
    args = parser.parse_args()

    with scratch_site("slurmbench") as scratch:
        roots, prefix = scratch.roots, scratch.prefix
        processes: list[subprocess.Popen] = []
        try:
            env = trainyard_env(args, roots, prefix)
            token, slurm_nodes = cast()
            port = start_trainyard(env, roots, processes, nice=args.platform_nice)
            renice_database(args.platform_nice)
            results: dict[str, list[Result]] = {"a": [], "e": [], "b": []}
            # Interleaved, so that a slow minute of the machine falls on both ways alike.
            for pair in range(args.pairs):
                busy = machine_busy_seconds()
                results["a"].append(run_all_at_once(args, roots / f"a{pair}", conf=CONF))
                print(f"(a{pair}) the machine's CPU: {machine_busy_seconds() - busy:.1f} s")
                if "e" in args.ways:
                    busy = machine_busy_seconds()
                    results["e"].append(
                        run_all_at_once(
                            args,
                            roots / f"e{pair}",
                            conf=CONF,
                            batch_class=SandboxedBatch,
                            label="e",
                        )
                    )
                    print(f"(e{pair}) the machine's CPU: {machine_busy_seconds() - busy:.1f} s")
                if "b" in args.ways:
                    before, busy = session_cpu_seconds(processes), machine_busy_seconds()
                    counted, tasks = platform_counts(), TaskTally(roots / "central.log")
                    results["b"].append(run_api(args, port, token, f"b{pair}"))
                    after = session_cpu_seconds(processes)
                    print_platform_counts(f"b{pair}", counted, args.jobs)
                    print(f"(b{pair}) the central worker's tasks (wall time):")
                    tasks.print(f"b{pair}", args.jobs)
                    print(f"(b{pair}) the machine's CPU: {machine_busy_seconds() - busy:.1f} s")
                    for name, seconds in after.items():
                        print(f"  CPU {seconds - before[name]:6.1f} s  {name}")
                    cpu = sum(after.values()) - sum(before.values())
                    per_job = cpu / args.jobs * 1000
                    print(f"(b{pair}) Trainyard's CPU: {cpu:.1f} s, {per_job:.0f} ms a job")
            if "d" in args.ways:
                results["d"] = [run_when_free(args, roots / "d", conf=CONF, reaction=args.reaction)]
            if "c" in args.ways:
                local_nodes = switch_to_local(slurm_nodes)
                agent = ["manage.py", "run_agent", "--concurrency", "4"]
                agent += [arg for node in local_nodes for arg in ("--node", node)]
                processes.append(spawn(agent, env, roots / "agent.log"))
                wait_for(lambda: "ready." in (roots / "agent.log").read_text(), 60, "agent")
                results["c"] = [run_api(args, port, token, "c")]
            report(args, {key: runs for key, runs in results.items() if runs})
        finally:
            for process in processes:
                stop(process)
            kill_replicas(roots / "nodes")
            renice_database(0)


def trainyard_env(args, roots: Path, prefix: str) -> dict[str, str]:
    return {
        **child_env(roots, args.poll),
        "TRAINYARD_SLURM": "1",
        "TRAINYARD_SLURM_PARTITION": "trainyard",
        "TRAINYARD_SLURM_CONF": str(CONF),
        "TRAINYARD_SLURM_JOB_PREFIX": prefix,
        "TRAINYARD_SLURM_TRACK_SECONDS": str(args.poll),
        # Production settings: with DEBUG on, every process also keeps every query it ran.
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
    }


def cast() -> tuple[str, list[str]]:
    """A paying user with a token, the V100 model, and the cluster's nodes synced."""
    from django.contrib.auth import get_user_model

    from accounts.services import api_token_create
    from billing.accounts import account_for_user
    from jobs.execution.slurm.inventory import inventory_sync
    from jobs.models import Project
    from resources.models import GpuModel

    user = get_user_model().objects.create_user(username="bench", password=None)
    account = account_for_user(user=user)
    account.billing_enabled = True
    account.save()
    Project.objects.create(name="bench", owner=user)
    GpuModel.objects.create(
        name="V100", card_memory_gib=16, cpu_cores_per_card=12, memory_gib_per_card=56
    )
    nodes = sorted(inventory_sync().created)
    _row, token = api_token_create(user=user, name="bench")
    return token, nodes


def renice_database(nice: int) -> None:
    """Every PostgreSQL server process at ``nice`` (new backends inherit the postmaster's)."""
    pids = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True).stdout
    for pid in pids.split():
        subprocess.run(["renice", "-n", str(nice), "-p", pid], capture_output=True, check=False)


def start_trainyard(env: dict[str, str], roots: Path, processes: list, nice: int = 0) -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gunicorn = ["nice", "-n", str(nice)] if nice else []
    gunicorn += [str(Path(sys.executable).with_name("gunicorn")), "trainyard.wsgi"]
    gunicorn += ["--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4"]
    processes.append(
        subprocess.Popen(
            gunicorn,
            cwd=ROOT,
            env=env,
            stdout=(roots / "web.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    )
    worker = ["-m", "celery", "-A", "trainyard", "worker", "-B", "-Q", "celery"]
    worker += ["--schedule", str(roots / "beat"), "--concurrency", "4", "--loglevel", "INFO"]
    worker += ["--without-gossip", "--without-mingle", "--hostname", "central@%h"]
    # Its line per task run (routine, so only when verbose) is what ``TaskTally`` counts.
    central_env = {**env, "TRAINYARD_VERBOSE": "1"}
    processes.append(spawn(worker, central_env, roots / "central.log", nice=nice))
    processes.append(spawn_notifications_worker(env, roots / "notify.log", nice=nice))
    wait_for(lambda: "ready." in (roots / "central.log").read_text(), 60, "the worker")
    wait_for(lambda: "Booting worker" in (roots / "web.log").read_text(), 60, "gunicorn")
    return port


def run_api(args, port: int, token: str, label: str) -> Result:
    """(b) or (c): submit through the API; the nodes that are ready decide the executor."""
    from jobs.execution.files import replica_output_dir, storage_name
    from jobs.models import Job, Replica, ReplicaAttempt

    submitted: dict[int, float] = {}
    command = COMMAND.format(sleep=f"{args.sleep:g}")

    def submit(index: int) -> None:
        at = time.time()
        submitted[submit_job(port, token, name=f"{label}-{index}", command=command)] = at

    began = time.time()
    in_parallel(args.jobs, args.clients, submit)
    print(f"({label}) {args.jobs} submitted through the API in {time.time() - began:.1f} s")
    jobs = Job.objects.filter(pk__in=list(submitted))
    wait_for(lambda: not jobs.exclude(state__in=Job.FINAL_STATES).exists(), 3600, f"({label})")
    ended = time.time()
    failed = jobs.exclude(state=Job.State.SUCCEEDED).values_list("pk", "state", "state_reason")
    if failed:
        print(f"({label}) not succeeded: {list(failed)[:5]}", file=sys.stderr)
    starts = {}
    for replica in Replica.objects.filter(job__in=jobs).select_related("node"):
        start = replica_output_dir(storage_name(replica.node), replica.job_id, 0) / "start"
        if start.exists():
            starts[replica.job_id] = float(start.read_text())
    print(f"({label}) where the time goes: {breakdown(jobs, starts)}")
    result = summarize(began, ended, submitted, starts)
    slurm_ids = ReplicaAttempt.objects.filter(replica__job__in=jobs).exclude(external_id="")
    result.card_s = median_occupancy(
        node_logs(CONF), set(slurm_ids.values_list("external_id", flat=True))
    )
    return result


def breakdown(jobs, starts: dict[int, float]) -> str:
    """Medians: waiting to be placed, placed to running, replica's exit to the job's end."""
    from jobs.models import JobEvent, ReplicaAttempt

    placed = dict(
        JobEvent.objects.filter(job__in=jobs, to_state="starting")
        .order_by("-created_at")
        .values_list("job_id", "created_at")
    )
    ends = dict(
        ReplicaAttempt.objects.filter(replica__job__in=jobs).values_list(
            "replica__job_id", "ended_at"
        )
    )
    waits, launches, reports = [], [], []
    for job_id, submitted_at, finished_at in jobs.values_list("pk", "submitted_at", "finished_at"):
        if job_id in placed and job_id in starts:
            waits.append((placed[job_id] - submitted_at).total_seconds())
            launches.append(starts[job_id] - placed[job_id].timestamp())
        if ends.get(job_id) and finished_at:
            reports.append((finished_at - ends[job_id]).total_seconds())
    median = statistics.median
    return (
        f"submit→placed {median(waits):.2f} s, placed→started {median(launches):.2f} s, "
        f"replica ended→job ended {median(reports):.2f} s"
    )


def switch_to_local(slurm_nodes: list[str]) -> list[str]:
    """Take the Slurm nodes out of scheduling and add 4 local nodes of the same size."""
    from resources.models import Node
    from resources.services import node_set_state, node_sync_cards

    names = []
    for template in Node.objects.filter(name__in=slurm_nodes).order_by("name"):
        node_set_state(node=template, state=Node.State.DOWN, reason="bench: local turn")
        local = Node.objects.create(
            name=f"local-{template.name}",
            gpu_model=template.gpu_model,
            gpu_count=template.gpu_count,
            cpu_milli=template.cpu_milli,
            memory_mib=template.memory_mib,
            storage_gib=template.storage_gib,
        )
        node_sync_cards(node=local)
        names.append(local.name)
    return names


def sessions_cpu_seconds(processes: list[subprocess.Popen]) -> float:
    """CPU time used so far by every process of these sessions (each was started in a
    session of its own: gunicorn and its workers, Celery and its pool), reaped children
    included."""
    return sum(session_cpu_seconds(processes).values())


def machine_busy_seconds() -> float:
    """CPU time the whole machine has been busy (all cores; ``/proc/stat``)."""
    user, nice, system, _idle, _iowait, irq, softirq = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]
    )
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def session_cpu_seconds(processes: list[subprocess.Popen]) -> dict[str, float]:
    """The same, per session (named by its leader's command)."""
    names = {process.pid: " ".join(map(str, process.args[:6])) for process in processes}
    ticks = dict.fromkeys(names.values(), 0)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in names:  # the session id (field 6 of stat(5))
            # utime stime cutime cstime
            ticks[names[int(fields[3])]] += sum(int(value) for value in fields[11:15])
    return {name: count / os.sysconf("SC_CLK_TCK") for name, count in ticks.items()}


if __name__ == "__main__":
    main()
