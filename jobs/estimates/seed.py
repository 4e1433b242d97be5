"""Put the seed's five templates and its tables of times into the database.

Idempotent: a second run updates the same rows and creates nothing.
"""

from jobs.models import EstimatePoint, WorkloadTemplate
from resources.models import GpuModel

from .seed_tables import TEMPLATES, seed_points


def seed_templates() -> dict[str, WorkloadTemplate]:
    """Create or update the templates and their points; the GPU models must exist."""
    models = {m.name: m for m in GpuModel.objects.all()}
    templates = {}
    for seed in TEMPLATES:
        template, _created = WorkloadTemplate.objects.update_or_create(
            name=seed.name,
            defaults={
                "task_type": seed.task_type,
                "network": seed.network,
                "command_template": seed.command_template,
                "augmentation_command": seed.augmentation_command,
                "default_max_runtime_minutes": seed.default_max_runtime_minutes,
            },
        )
        template.forbidden_gpu_models.set([models[name] for name in seed.forbidden_gpu_models])
        templates[seed.name] = template
    for point in seed_points():
        EstimatePoint.objects.update_or_create(
            template=templates[point.template],
            dataset_samples=point.samples,
            gpu_model=models[point.gpu_model],
            nodes=point.nodes,
            defaults={"seconds": point.seconds, "kind": point.kind, "source": point.source},
        )
    return templates
