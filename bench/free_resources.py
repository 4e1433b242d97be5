"""Time the free-resource snapshot, the panel and the feasibility check at many nodes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/free_resources.py [--sizes 1000 5000]

Prints, for each node count: the queries and the best of a few runs of
``free_resources_compute`` (the snapshot), of ``free_panel`` (what a page
reads: the snapshot plus the user's quota) and of ``request_feasibility``.
It works in its own scratch database (``<name>_bench``), created and dropped here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")
MODELS = {"V100": 16, "P40": 24, "P4": 8, "V100-32G": 32}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("Set DATABASE_URL to a PostgreSQL database (the bench uses <name>_bench).")
    db = settings.DATABASES["default"]
    db["TEST"]["NAME"] = f"{db['NAME']}_bench"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        for size in args.sizes:
            measure(size, args.repeat)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def measure(size: int, repeat: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.free_panel import free_panel
    from resources.feasibility import request_feasibility
    from resources.free import free_resources_compute, free_resources_refresh
    from resources.request import ResourceRequest

    models = fill(size)
    user, _created = get_user_model().objects.get_or_create(username="bench")
    free_resources_refresh()
    request = ResourceRequest(
        kind="gpu",
        gpu_model=models["V100"],
        gpu_count=8,
        cpu_milli=96_000,
        memory_mib=448 * 1024,
        replicas=4,
    )
    for name, run in [
        ("snapshot", free_resources_compute),
        ("panel", lambda: free_panel(user=user)),
        ("feasibility", lambda: request_feasibility(request=request, user=user)),
    ]:
        with CaptureQueriesContext(connection) as queries:
            run()
        best = min(timed(run) for _ in range(repeat))
        print(f"{size:>6} nodes  {name:<12} {len(queries):>2} queries  {best * 1000:8.1f} ms")


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def fill(size: int) -> dict:
    """``size`` ready nodes spread over the models, 8 cards each, some partly allocated."""
    from resources.models import GpuCard, GpuModel, Node

    GpuCard.objects.all().delete()
    Node.objects.all().delete()
    models = {
        name: GpuModel.objects.get_or_create(
            name=name,
            defaults={
                "card_memory_gib": memory,
                "cpu_cores_per_card": 12,
                "memory_gib_per_card": 56,
                "supports_vgpu": True,
            },
        )[0]
        for name, memory in MODELS.items()
    }
    names = list(models)
    nodes = Node.objects.bulk_create(
        Node(
            name=f"bench-{i:06d}",
            gpu_model=models[names[i % len(names)]],
            gpu_count=8,
            gpu_allocated=i % 3,
            cpu_milli=96_000,
            memory_mib=448 * 1024,
        )
        for i in range(size)
    )
    GpuCard.objects.bulk_create(
        GpuCard(
            node=node,
            index=index,
            memory_mib=node.gpu_model.card_memory_gib * 1024,
            compute_allocated_percent=100 if index < node.gpu_allocated else 0,
        )
        for node in nodes
        for index in range(8)
    )
    return models


if __name__ == "__main__":
    main()
