"""What a replica's own network costs: at start, and for gloo's all-reduce.

    sudo .venv/bin/python bench/isolation_cost.py [--starts 100] [--mib 16] [--rounds 30]

Needs root and the host's job network (``manage.py job_network install``).
Prints, side by side:

- the start of a sandboxed ``true`` as today's agent ran it (bwrap on the
  host's network) and as it runs now (slot, namespace, veth, its table and a
  published port; ``nsenter`` into it; all removed again): median and p99;
- gloo's all-reduce throughput between two processes on the host's loopback
  and between two replica namespaces on the job bridge (MB/s, median of rounds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")

ALL_REDUCE = """
import os, statistics, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method=f"tcp://{sys.argv[1]}:{sys.argv[2]}",
                        rank=int(sys.argv[3]), world_size=2)
tensor = torch.ones(int(sys.argv[4]) * 2**20 // 4)
rounds = []
for _ in range(int(sys.argv[5])):
    start = time.perf_counter()
    dist.all_reduce(tensor)
    rounds.append(time.perf_counter() - start)
if dist.get_rank() == 0:
    print(statistics.median(rounds))
dist.destroy_process_group()
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def time_starts(count: int, *, networked: bool) -> list[float]:
    from jobs.execution.replica import network, sandbox, slots

    bwrap = shutil.which("bwrap")
    folder = Path(tempfile.mkdtemp(prefix="isolation-bench-"))
    os.chmod(folder, 0o755)
    (folder / "output").mkdir()
    command = folder / "command.sh"
    command.write_text("true\n")
    mounts = sandbox.Mounts(code=None, output=folder / "output")
    argv = sandbox.bwrap_argv(
        bwrap=bwrap, mounts=mounts, command_file=command, uid=None, tmp_bytes=2**26, hostname="b"
    )
    times = []
    for attempt in range(count):
        start = time.perf_counter()
        if networked:
            slot = slots.take_slot(owner="bench", start=attempt)
            replica = network.ReplicaNetwork(
                namespace=network.namespace_name(slot.number, 10**9 + attempt),
                slot=slot.number,
                address=slot.address,
                published={59990: 6006},
            )
            network.replica_network_up(replica)
            subprocess.run(network.enter_argv(replica) + argv, check=True)
            network.replica_network_down(replica)
            slot.close()
        else:
            subprocess.run(argv, check=True)
        times.append(time.perf_counter() - start)
    shutil.rmtree(folder)
    return times


def all_reduce(mib: int, rounds: int, *, networked: bool) -> float:
    """MB/s of one all-reduce of ``mib`` MiB between two ranks (median round)."""
    from jobs.execution.replica import network, slots

    script = Path(tempfile.mkstemp(suffix=".py")[1])
    script.write_text(ALL_REDUCE)
    held, nets, prefixes, address = [], [], [[], []], "127.0.0.1"
    if networked:
        for rank in range(2):
            slot = slots.take_slot(owner="bench", start=100 + rank)
            held.append(slot)
            replica = network.ReplicaNetwork(
                namespace=network.namespace_name(slot.number, 2 * 10**9 + rank),
                slot=slot.number,
                address=slot.address,
            )
            nets.append(replica)
        for replica in nets:
            replica.gang = [other.address for other in nets if other is not replica]
            network.replica_network_up(replica)
        prefixes = [network.enter_argv(replica) for replica in nets]
        address = nets[0].address
    env = {
        **os.environ,
        "PYTHONWARNINGS": "ignore",
        "GLOO_SOCKET_IFNAME": "eth0" if networked else "lo",
    }
    try:
        ranks = [
            subprocess.Popen(
                [*prefixes[rank], sys.executable, str(script), address, "29511", str(rank)]
                + [str(mib), str(rounds)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for rank in range(2)
        ]
        outputs = [rank.communicate(timeout=600)[0] for rank in ranks]
    finally:
        for replica in nets:
            network.replica_network_down(replica)
        for slot in held:
            slot.close()
        script.unlink()
    seconds = float(outputs[0].strip())
    return mib * 1.048576 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--mib", type=int, default=16, help="tensor size of one all-reduce")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    import django

    django.setup()
    from jobs.execution.replica.sandbox import isolation_problem

    problem = isolation_problem()
    if problem:
        sys.exit(f"cannot measure: {problem}")
    plain = time_starts(args.starts, networked=False)
    own = time_starts(args.starts, networked=True)
    print(f"replica start ({args.starts} each)   median ms   p99 ms")
    print(
        f"  bwrap, host network       {1000 * statistics.median(plain):9.1f} "
        f"{1000 * percentile(plain, 0.99):8.1f}"
    )
    print(
        f"  bwrap, own network        {1000 * statistics.median(own):9.1f} "
        f"{1000 * percentile(own, 0.99):8.1f}"
    )
    added = statistics.median(own) - statistics.median(plain)
    print(f"  added by the network      {1000 * added:9.1f}")
    host = all_reduce(args.mib, args.rounds, networked=False)
    netns = all_reduce(args.mib, args.rounds, networked=True)
    print(f"gloo all-reduce of {args.mib} MiB, 2 ranks   MB/s")
    print(f"  host loopback             {host:9.0f}")
    print(f"  two namespaces, bridge    {netns:9.0f}   ({netns / host:.2f} x)")


if __name__ == "__main__":
    main()
