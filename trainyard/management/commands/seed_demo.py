"""Create a demo site: GPU models, nodes, specs, prices, a project and two users.

Idempotent: running it again updates the same rows and creates nothing twice.
"""

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from billing.accounts import account_for_user
from billing.models import Price
from core.task_names import send_task
from jobs.estimates.seed import seed_templates
from jobs.images.demo_recipes import DEMO_RECIPES
from jobs.images.store import store_holds
from jobs.models import CodeVersion, Dataset, Image, PretrainedModel, Project
from resources.models import GpuModel, Node, Quota, SiteSettings, Spec
from resources.services import node_sync_cards

GIB = 1024
# The demo project's default image: its code is PyTorch training.
DEMO_DEFAULT = "pytorch-cpu"
# Seed 000: card memory, CPU cores and memory per card; speed relative to a P4,
# the geometric mean of the seed's single-node measured times.
GPU_MODELS = {
    "P4": {
        "card_memory_gib": 8,
        "cpu_cores_per_card": 12,
        "memory_gib_per_card": 40,
        "relative_speed": 1.0,
        "supports_vgpu": False,
        "free_tier": True,
    },
    "P40": {
        "card_memory_gib": 24,
        "cpu_cores_per_card": 12,
        "memory_gib_per_card": 40,
        "relative_speed": 1.4,
        "supports_vgpu": True,
        "free_tier": False,
    },
    "V100": {
        "card_memory_gib": 16,
        "cpu_cores_per_card": 12,
        "memory_gib_per_card": 56,
        "relative_speed": 2.3,
        "supports_vgpu": True,
        "free_tier": False,
    },
    "V100-32G": {
        "card_memory_gib": 32,
        "cpu_cores_per_card": 12,
        "memory_gib_per_card": 56,
        "relative_speed": 2.3,
        "supports_vgpu": True,
        "free_tier": False,
    },
}
AGGREGATES = {"*V100": ["V100", "V100-32G"]}
# name: (model, cards, cores, memory GiB)
NODES = {
    "v100-01": ("V100", 8, 96, 448),
    "v100-02": ("V100", 8, 96, 448),
    "v100x-01": ("V100-32G", 4, 48, 224),
    "p40-01": ("P40", 4, 48, 160),
    "p40-02": ("P40", 4, 48, 160),
    "p4-01": ("P4", 1, 12, 40),
    "p4-02": ("P4", 1, 12, 40),
    "p4-03": ("P4", 1, 12, 40),
    "p4-04": ("P4", 1, 12, 40),
    "cpu-01": (None, 0, 32, 128),
    "cpu-02": (None, 0, 32, 128),
}
# name: (kind, model, count, compute %, cores, memory GiB)
SPECS = {
    "P4 × 1": ("gpu", "P4", 1, None, 12, 40),
    "V100 × 1": ("gpu", "V100", 1, None, 12, 56),
    "V100 × 4": ("gpu", "V100", 4, None, 48, 224),
    "V100 vGPU 50 %": ("vgpu", "V100", 1, 50, 6, 28),
    "CPU 4 cores": ("cpu", None, 0, None, 4, 16),
}
PRICES_CNY = {"P4": "3.00", "P40": "6.00", "V100": "12.00", "V100-32G": "15.00"}
CPU_PRICE_CNY = "0.20"
PRICES_VALID_FROM = datetime(2026, 1, 1, tzinfo=UTC)
USERS = [("admin", "admin", True), ("alice", "alice", False), ("bob", "bob", False)]


class Command(BaseCommand):
    help = "Create (or update) the demo site: GPU models, nodes, specs, prices, project, users."

    def handle(self, *args, **options) -> None:
        with transaction.atomic():
            SiteSettings.load()
            models = self.seed_gpu_models()
            seed_templates()
            self.seed_nodes(models)
            self.seed_specs(models)
            self.seed_prices(models)
            users = self.seed_users()
            self.seed_quotas(users["alice"], models)
            self.seed_project(users)
        self.stdout.write(self.style.SUCCESS("Demo site ready. Logins:"))
        for username, password, is_staff in USERS:
            role = "admin" if is_staff else "user"
            self.stdout.write(f"  {username} / {password}  ({role})")

    def seed_gpu_models(self) -> dict[str, GpuModel]:
        models = {
            name: GpuModel.objects.update_or_create(name=name, defaults=fields)[0]
            for name, fields in GPU_MODELS.items()
        }
        for name, member_names in AGGREGATES.items():
            first = models[member_names[0]]
            aggregate, _created = GpuModel.objects.update_or_create(
                name=name,
                defaults={
                    "card_memory_gib": min(models[m].card_memory_gib for m in member_names),
                    "cpu_cores_per_card": first.cpu_cores_per_card,
                    "memory_gib_per_card": first.memory_gib_per_card,
                    "relative_speed": first.relative_speed,
                    "supports_vgpu": all(models[m].supports_vgpu for m in member_names),
                },
            )
            aggregate.members.set([models[m] for m in member_names])
            models[name] = aggregate
        return models

    def seed_nodes(self, models: dict[str, GpuModel]) -> None:
        for name, (model, cards, cores, memory_gib) in NODES.items():
            node, _created = Node.objects.update_or_create(
                name=name,
                defaults={
                    "gpu_model": models[model] if model else None,
                    "gpu_count": cards,
                    "cpu_milli": cores * 1000,
                    "memory_mib": memory_gib * GIB,
                    "storage_gib": 500,
                },
            )
            node_sync_cards(node=node)

    def seed_specs(self, models: dict[str, GpuModel]) -> None:
        for order, (name, (kind, model, count, compute, cores, memory_gib)) in enumerate(
            SPECS.items()
        ):
            vgpu_memory = models[model].card_memory_mib * compute // 100 if compute else None
            Spec.objects.update_or_create(
                name=name,
                defaults={
                    "kind": kind,
                    "gpu_model": models[model] if model else None,
                    "gpu_count": count,
                    "vgpu_compute_percent": compute,
                    "vgpu_memory_mib": vgpu_memory,
                    "cpu_milli": cores * 1000,
                    "memory_mib": memory_gib * GIB,
                    "order": order,
                },
            )

    def seed_prices(self, models: dict[str, GpuModel]) -> None:
        currency = settings.TRAINYARD_CURRENCY
        for name, amount in PRICES_CNY.items():
            Price.objects.update_or_create(
                gpu_model=models[name],
                valid_from=PRICES_VALID_FROM,
                defaults={
                    "unit": Price.Unit.CARD_HOUR,
                    "amount": Decimal(amount),
                    "currency": currency,
                },
            )
        Price.objects.update_or_create(
            gpu_model=None,
            valid_from=PRICES_VALID_FROM,
            defaults={
                "unit": Price.Unit.CORE_HOUR,
                "amount": Decimal(CPU_PRICE_CNY),
                "currency": currency,
            },
        )

    def seed_users(self) -> dict:
        users = {}
        user_model = get_user_model()
        for username, password, is_staff in USERS:
            user, created = user_model.objects.get_or_create(
                username=username, defaults={"is_staff": is_staff, "is_superuser": is_staff}
            )
            if created:
                user.set_password(password)
                user.save()
            account_for_user(user=user)
            users[username] = user
        return users

    def seed_quotas(self, user, models: dict[str, GpuModel]) -> None:
        limits = [
            (Quota.Resource.CPU, None, 128 * 1000),
            (Quota.Resource.MEMORY, None, 1024 * GIB),
            (Quota.Resource.GPU, "V100", 8),
            (Quota.Resource.GPU, "P40", 4),
            (Quota.Resource.GPU, "P4", 4),
            (Quota.Resource.VGPU_COMPUTE, "V100", 400),
        ]
        for resource, model, limit in limits:
            gpu_model = models[model] if model else None
            Quota.objects.update_or_create(
                user=user, resource=resource, gpu_model=gpu_model, defaults={"limit": limit}
            )
            Quota.objects.update_or_create(
                user=None, resource=resource, gpu_model=gpu_model, defaults={"limit": limit // 2}
            )

    def seed_project(self, users: dict) -> None:
        project, _created = Project.objects.get_or_create(
            name="demo",
            defaults={"owner": users["alice"], "description": "Image classification demo"},
        )
        project.members.add(users["bob"])
        data_root = Path(settings.TRAINYARD_DATA_ROOT)
        items = [
            (Dataset, "DogsvsCats", "demo/datasets/DogsvsCats", {"size_samples": 6000}),
            (Dataset, "coco-400", "demo/datasets/coco-400", {"size_samples": 400}),
            (PretrainedModel, "resnet50-imagenet", "demo/pretrained/resnet50-imagenet", {}),
            (CodeVersion, "v1", "demo/code/v1", {}),
        ]
        for model, name, path, extra in items:
            model.objects.update_or_create(
                project=project, name=name, defaults={"path": path, **extra}
            )
            folder = data_root / path
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "README.txt").write_text(f"{name}: demo content for Trainyard jobs.\n")
        train = data_root / "demo" / "code" / "v1" / "train.py"
        train.write_text(
            "import os\nprint('training with data in', os.environ.get('TRAINYARD_DATA_IN1'))\n"
        )
        # The workload templates' augmentation-search step runs this before training.
        (train.parent / "augment_search.py").write_text("print('augmentation search: done')\n")
        self.seed_images(project)

    def seed_images(self, project: Project) -> None:
        """The demo's real images, built by the worker from Debian's packages and PyPI.

        The first ``make run`` builds them in the background (minutes; the server is up at
        once, and the images say "being added" until they are ready); later runs find
        them in the store, or in the recipes' build cache, and build nothing.
        """
        # An image name from before images were real, that no job uses: gone.
        Image.objects.filter(
            project=project, name="trainyard/tensorflow:2.15", source=Image.Source.HOST
        ).exclude(job__isnull=False).delete()
        for recipe in DEMO_RECIPES:
            image, _created = Image.objects.get_or_create(
                project=project,
                name=recipe.name,
                defaults={"source": Image.Source.RECIPE, "state": Image.State.ADDING},
            )
            if image.state == Image.State.READY and store_holds(image.digest):
                continue
            image.source, image.source_detail = Image.Source.RECIPE, recipe.key
            image.state, image.digest, image.problem = Image.State.ADDING, "", ""
            image.is_default = recipe.key == DEMO_DEFAULT
            image.save()
            image_id = image.pk
            transaction.on_commit(lambda i=image_id: send_task("jobs.tasks.image_add", args=[i]))
            self.stdout.write(f"Image {recipe.name}: building in the background (once).")
